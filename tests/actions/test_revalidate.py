"""The re-validation before each step, on cluster models: the independent validator on where the rest of the plan
puts pods (tests/conformance/test_apply_live.py changes a real cluster between steps)."""

from __future__ import annotations

from gpusched.actions.journal import Journal, Placement, Step
from gpusched.actions.kube import CORDON_TAINT
from gpusched.actions.revalidate import moved_on, validator_findings
from gpusched.models.cluster import BusyGpu, Cluster, GpuBlock, MigInstance, Node, Taint
from gpusched.models.workload import GpuNeeds


def node(name: str, busy: tuple[int, ...] = (), **fields) -> Node:
    block = GpuBlock(model="A100-SXM4-80GB", count=2, memory_gib=80,
                     busy=[BusyGpu(gpu=g, pod=f"ns/on-{name}-{g}") for g in busy])  # fmt: skip
    return Node(name=name, gpu=block, cpu="8", memory="64Gi", **fields)


def pod(key: str, node_name: str) -> dict:
    namespace, name = key.split("/")
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"}, "spec": {"nodeName": node_name},
            "status": {"phase": "Running"}}  # fmt: skip


def move_journal(**fields) -> Journal:
    """Move ns/web from n1 to n2 (one GPU, 2 cpu), the room it makes on n1 for a 2-GPU pod."""
    steps = [Step(kind="cordon", target="n1", state="done", result="cordoned"),
             Step(kind="evict", target="ns/web", uid="uid-web", node="n1"),
             Step(kind="replacement", target="ns/web", uid="uid-web", owner="rs", node="n2"),
             Step(kind="uncordon", target="n1", cleanup=True)]  # fmt: skip
    placements = [Placement(pod="ns/web", node="n2", needs=GpuNeeds(cpu="2"), gpus=[1], step=2),
                  Placement(pod="target-0", node="n1", needs=GpuNeeds(), gpus=[0, 1])]  # fmt: skip
    return Journal(run="r", command="defrag", replan="gpusched defrag", kubeconfig="k", server="s", steps=steps,
                   placements=placements, **fields)  # fmt: skip


def cluster(n2: Node, n1_cordoned: bool = True) -> Cluster:
    """n1 runs web (GPU 0 and, for the room, nothing else); cordoned by the run (its taint) unless said otherwise."""
    web = GpuBlock(model="A100-SXM4-80GB", count=2, memory_gib=80, busy=[BusyGpu(gpu=0, pod="ns/web")])
    taints = [Taint(key=CORDON_TAINT, value="r")] if n1_cordoned else []
    n1 = Node(name="n1", gpu=web, cpu="8", memory="64Gi", taints=taints)
    return Cluster(nodes=[n1, n2], running={"ns/web": GpuNeeds()})


def test_the_plan_still_fits_as_planned_with_the_runs_own_cordon():
    assert validator_findings(move_journal(), 1, [pod("ns/web", "n1")], cluster(node("n2"))) == []


def test_another_runs_cordon_on_the_room_is_found():
    other = cluster(node("n2"), n1_cordoned=False)
    other.nodes[0] = other.nodes[0].model_copy(update={"taints": [Taint(key=CORDON_TAINT, value="someone")]})
    found = validator_findings(move_journal(), 1, [pod("ns/web", "n1")], other)
    assert found == ["target-0 on n1: taint gpusched.io/cordon not tolerated"]


def test_a_planned_gpu_taken_by_another_pod_is_re_picked_on_a_free_one():
    assert validator_findings(move_journal(), 1, [pod("ns/web", "n1")], cluster(node("n2", busy=(1,)))) == []


def test_a_pod_on_the_last_free_gpu_of_the_target_is_found():
    found = validator_findings(move_journal(), 1, [pod("ns/web", "n1")], cluster(node("n2", busy=(0, 1))))
    assert found == ["n2: GPU 1 holds 2 pods, has 1 replica(s)"]


def test_a_planned_mig_instance_taken_by_another_pod_is_re_picked_with_its_gpu():
    """The re-picked instance's GPU goes with it: the planned GPU kept beside it was once reported as drift
    ("GPUs [0] are not those of its MIG instances"). With no instance of the profile free, the taken one is."""
    journal = move_journal()
    needs = GpuNeeds(cpu="2", mig_profile="3g.40gb")
    journal.placements[0] = Placement(pod="ns/web", node="n2", needs=needs, gpus=[0], mig=[(0, 0)], step=2)

    def taken(*gpus: int) -> Cluster:
        mig = [MigInstance(gpu=g, profile="3g.40gb", start=0, holder="ns/other" if g in gpus else None) for g in (0, 1)]
        n2 = Node(name="n2", gpu=GpuBlock(model="A100-SXM4-80GB", count=2, memory_gib=80, mig=mig), cpu="8",
                  memory="64Gi")  # fmt: skip
        return Cluster.model_validate(cluster(n2).model_dump() | {"running": {"ns/web": {}, "ns/other": {}}})

    assert validator_findings(journal, 1, [pod("ns/web", "n1")], taken(0)) == []
    assert validator_findings(journal, 1, [pod("ns/web", "n1")], taken(0, 1)) == [
        "ns/web on n2: MIG instance 3g.40gb@0 is held by ns/other"
    ]


def test_a_taint_someone_put_on_the_target_is_found():
    tainted = node("n2", taints=[Taint(key="someone/else", effect="NoSchedule")])
    found = validator_findings(move_journal(), 1, [pod("ns/web", "n1")], cluster(tainted))
    assert found == ["ns/web on n2: taint someone/else not tolerated"]


def test_cpu_the_target_no_longer_has_is_found():
    found = validator_findings(move_journal(), 1, [pod("ns/web", "n1")], cluster(node("n2").model_copy(
        update={"cpu": "1"})))  # fmt: skip
    assert "n2: cpu over allocatable" in found


def test_a_cordon_by_someone_else_is_found():
    """kubectl cordon (spec.unschedulable) beside the run's own taint: the room the plan makes is not usable."""
    cordoned = cluster(node("n2"))
    cordoned.nodes[0] = cordoned.nodes[0].model_copy(update={"unschedulable": True})
    found = validator_findings(move_journal(), 1, [pod("ns/web", "n1")], cordoned)
    assert found == ["target-0 on n1: node is cordoned"]


def test_a_move_whose_replacement_is_bound_already_is_not_placed_twice():
    replacement = pod("ns/web-2", "n2") | {"metadata": {"name": "web-2", "namespace": "ns", "uid": "uid-web-2",
                                                       "ownerReferences": [{"controller": True, "uid": "rs"}]}}  # fmt: skip
    planned = move_journal()
    planned.steps[1].state = "done"
    full = node("n2", busy=(0, 1))  # its GPU 1 is the replacement's
    assert validator_findings(planned, 2, [replacement], cluster(full)) == []


def test_what_was_so_when_planned_is_not_drift():
    full = cluster(node("n2", busy=(0, 1)))
    planned = move_journal(baseline=["n2: GPU 1 holds 2 pods, has 1 replica(s)"])
    assert moved_on(planned, 1, [pod("ns/web", "n1")], full) == []
    assert moved_on(move_journal(), 1, [pod("ns/web", "n1")], full) == [
        "the validator on the rest of the plan: n2: GPU 1 holds 2 pods, has 1 replica(s)"
    ]


def test_a_pod_to_evict_that_someone_deleted_is_drift():
    gone = moved_on(move_journal(), 1, [], cluster(node("n2")))
    assert gone[0] == "pod ns/web is gone (deleted by someone else; the plan evicts it at step 2)"
    deleting = pod("ns/web", "n1")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert moved_on(move_journal(), 1, [deleting], cluster(node("n2")))[0].startswith(
        "pod ns/web is being deleted by someone else (metadata.deletionTimestamp)"
    )
