"""explain: the three Monday tickets, every suggested change applied and re-placed, the CLI end to end."""

from __future__ import annotations

import kubernetes.client as k8s_models
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.models.cluster import Cluster
from gpusched.models.workload import Pod
from gpusched.planner.explain import (
    apply_edit,
    claim_for,
    explain_job,
    explain_pod,
    job_outcome,
    place_one,
)
from gpusched.planner.optimize.solver import SolverConfig
from gpusched.planner.place import Placer
from gpusched.planner.scheduler.plugins.gpudevices import GpuChoice
from gpusched.planner.state import ClusterState, advertised
from gpusched.scenarios import load_scenario, scenario_names
from gpusched.scenarios.synthetic import synthetic_cluster


def _pod(scenario: str, name: str) -> tuple[Cluster, Pod]:
    found = load_scenario(scenario)
    assert found.pods is not None
    return found.cluster, next(pod for pod in found.pods.pods if pod.name == name)


def _schedules(cluster: Cluster, pod: Pod, change) -> GpuChoice:
    """Apply the change to the model and place the pod again: it must now fit, where the change says."""
    changed, updated = apply_edit(cluster, pod, change.edit)
    found = place_one(changed, updated, updated.gpus)
    assert isinstance(found, GpuChoice), f"{change.summary}: {found.message}"
    assert found.node.name == change.lands_on
    return found


# --- the three Monday tickets -----------------------------------------------------------------------------------


def test_ticket_finetune_is_fragmentation_and_moving_notebooks_fixes_it():
    cluster, pod = _pod("ticket-finetune", "train-8")
    result = explain_pod(cluster, pod)
    assert not result.fits
    assert result.scheduler.message == "0/14 nodes are available: 14 Insufficient nvidia.com/gpu."
    assert result.capacity.verdict == "fragmented"
    assert (result.capacity.free, result.capacity.largest_node) == (4, 2)
    assert "28 whole GPUs free in the pool" in result.capacity.summary
    insufficient = next(r for r in result.reasons if r.reason == "Insufficient nvidia.com/gpu")
    assert insufficient.nodes == ["dgx-a", "dgx-b"]
    assert insufficient.hardware == "2 nodes have 2 free GPUs each; the pod needs 8 on one node"
    first = result.changes[0]
    assert first.kind == "move" and first.cost.moved == 6 == result.capacity.moves
    _schedules(cluster, pod, first)
    assert [c.kind for c in result.changes] == ["move", "evict"]
    assert result.changes[1].cost.evicted == 6
    useless = {item.change for item in result.will_not_help}
    assert "drop the NVLink requirement" in useless
    assert "more L40S GPUs, or accepting them" in useless


def test_ticket_embed_names_the_time_sliced_l4_and_repartitions_mig():
    cluster, pod = _pod("ticket-embed", "embed")
    result = explain_pod(cluster, pod)
    assert not result.fits
    assert result.scheduler.node == "l4-a"
    assert "needs 40 GiB per GPU, L4 has 24 GiB: out of memory when the weights load" in result.scheduler.warnings
    first = result.changes[0]
    assert first.kind == "mig" and first.cost.repartitioned == 1
    assert first.edit.pod == {"mig_profile": "3g.40gb", "model": None}
    found = _schedules(cluster, pod, first)
    assert found.mig == ((0, 4),)  # the new 3g.40gb instance at memory slice 4, the busy 1g.10gb ones untouched
    why = {item.change: item.why for item in result.will_not_help}
    assert why["time-slicing (more replicas of nvidia.com/gpu)"].endswith("the pod needs 40 GiB")
    assert why["more L4 GPUs, or accepting them"] == "24 GiB each; the pod needs 40 GiB"


def test_ticket_gang_is_a_deadlock_that_all_or_nothing_admission_resolves():
    found = load_scenario("ticket-gang")
    jobs = found.jobs.jobs
    result = explain_job(found.cluster, jobs, "llm-b")
    assert not result.fits
    assert (result.gang.placed, result.gang.gpus_held, result.gang.deadlock_at) == (2, 16, 1200)
    assert result.gang.held_by == {"llm-a": 2, "llm-b": 2}
    change = result.changes[0]
    assert change.kind == "gang" and "llm-b starts at t=4800, when llm-a finishes" in change.summary
    assert job_outcome(found.cluster, jobs, "llm-b").start is None
    assert job_outcome(found.cluster, jobs, "llm-b", change.edit).start == 4800
    assert any(item.change == "waiting" for item in result.will_not_help)


# --- every change, everywhere -------------------------------------------------------------------------------------


def _pending_pods():
    for name in scenario_names():
        found = load_scenario(name)
        for pod in found.pods.pods if found.pods else []:
            yield name, pod.name


@pytest.mark.parametrize(("scenario", "name"), list(_pending_pods()))
def test_every_suggested_change_schedules_the_pod_and_ranks_by_cost(scenario, name):
    cluster, pod = _pod(scenario, name)
    result = explain_pod(cluster, pod)
    assert result.fits == isinstance(place_one(cluster, pod, pod.gpus), GpuChoice)
    for change in result.changes:
        _schedules(cluster, pod, change)
    keys = [change.cost.key() for change in result.changes]
    assert keys == sorted(keys)


# --- single changes on small clusters -----------------------------------------------------------------------------


def _cluster(*nodes: dict, running: dict | None = None) -> Cluster:
    return Cluster.model_validate({"nodes": list(nodes), "running": running or {}})


def _node(name: str, count: int = 8, **extra) -> dict:
    gpu = {"model": "A100-SXM4-80GB", "count": count, "memory_gib": 80, "islands": [list(range(count))]}
    gpu.update(extra.pop("gpu", {}))
    return {"name": name, "gpu": gpu, **extra}


def test_a_taint_is_solved_by_a_toleration():
    cluster = _cluster(_node("a", taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]))
    pod = Pod(name="p", gpus=4)
    result = explain_pod(cluster, pod)
    first = result.changes[0]
    assert first.kind == "toleration" and first.summary == "add a toleration for dedicated=ml:NoSchedule"
    assert result.reasons[0].hardware == "a carries taint(s) the pod does not tolerate: dedicated=ml:NoSchedule"
    _schedules(cluster, pod, first)


def test_a_cordon_and_a_selector():
    cluster = _cluster(_node("a", unschedulable=True), _node("b", labels={"pool": "x"}))
    pod = Pod(name="p", gpus=2, node_selector={"pool": "y"})
    kinds = {change.kind for change in explain_pod(cluster, pod).changes}
    assert kinds == {"selector"}  # uncordoning `a` alone still fails the selector
    for change in explain_pod(cluster, pod).changes:
        _schedules(cluster, pod, change)


def test_dropping_nvlink_reports_the_all_reduce_slowdown():
    pcie = _node("pcie", gpu={"model": "A100-PCIE-80GB", "islands": [[0, 1], [2, 3], [4, 5], [6, 7]]})
    cluster = _cluster(pcie)
    pod = Pod(name="p", gpus=4, nvlink=True)
    result = explain_pod(cluster, pod)
    change = next(c for c in result.changes if c.kind == "nvlink")
    # ring over PCIe (32 GB/s) instead of NVLink (300 GB/s): 300/32 times slower
    assert change.cost.slowdown == pytest.approx(300 / 32)
    assert "over pcie" in change.details[0]
    _schedules(cluster, pod, change)


def test_a_model_selector_relaxes_to_a_model_with_enough_memory_only():
    h100 = _node("h", gpu={"model": "H100-SXM5-80GB"})
    l4 = _node("l", count=8, gpu={"model": "L4", "memory_gib": 24, "islands": []})
    cluster = _cluster(h100, l4)
    pod = Pod(name="p", gpus=2, model="A100-SXM4-80GB")
    result = explain_pod(cluster, pod)
    assert result.capacity.verdict == "unsuitable"
    change = next(c for c in result.changes if c.kind == "model")
    assert change.edit.pod == {"model": "H100-SXM5-80GB", "memory_gib": 80}
    _schedules(cluster, pod, change)
    assert {"change": "more L4 GPUs, or accepting them", "why": "24 GiB each; the pod needs 80 GiB"} in [
        item.model_dump() for item in result.will_not_help
    ]


def test_priority_cannot_fix_memory():
    l4 = _node("l", count=2, gpu={"model": "L4", "memory_gib": 24, "islands": [], "busy": [{"gpu": 0, "pod": "x"}]})
    cluster = _cluster(l4, running={"x": {"priority": 5}})
    pod = Pod(name="p", gpus=1, memory_gib=40)
    result = explain_pod(cluster, pod)
    assert result.changes == []
    why = {item.change: item.why for item in result.will_not_help}
    assert "GPU memory below 40 GiB" in why["raising its priority"]


# --- the CLI ---------------------------------------------------------------------------------------------------------


def test_cli_explains_and_exits_1_when_pending(gpusched):
    result = gpusched("explain", "train-8", "--cluster", "ticket-finetune")
    assert result.exit_code == 1
    assert result.lines[:2] == [
        "train-8 is Pending (gpusched's hardware view, as the cluster is now)",
        "kube-scheduler: 0/14 nodes are available: 14 Insufficient nvidia.com/gpu.",
    ]
    assert "the one change that schedules it:" in result.lines
    fits = gpusched("explain", "train-8", "--cluster", "monday")
    assert (
        fits.exit_code == 0
        and fits.lines[0] == "train-8 fits on dgx-a (gpusched's hardware view, as the cluster is now)"
    )


def test_cli_json_and_jobs(gpusched):
    report = gpusched("explain", "embed", "--cluster", "ticket-embed", "--json").json()
    assert report["kind"] == "pod" and report["changes"][0]["kind"] == "mig"
    job = gpusched("explain", "llm-a", "--cluster", "ticket-gang")
    assert job.exit_code == 1 and job.lines[0] == "llm-a never starts (gang simulator, default scheduler)"
    assert gpusched("explain", "blocker", "--cluster", "ticket-gang").exit_code == 0


def test_cli_explains_an_imported_kubectl_dump(gpusched):
    result = gpusched("explain", "ml/llm-pretrain-1", "--cluster", "tests/data/import", "--json")
    assert result.exit_code == 1
    report = result.json()
    assert "Insufficient memory" in {reason["reason"] for reason in report["reasons"]}
    assert gpusched("explain", "serve/asr-1", "--cluster", "tests/data/import").exit_code == 0


def test_emit_claim_is_a_valid_v1_claim_that_gpusched_allocates(gpusched, tmp_path):
    path = tmp_path / "claim.yaml"
    result = gpusched("explain", "train-8", "--cluster", "monday", "--emit-claim", path, "--driver", "gpu.nvidia.com")
    assert result.exit_code == 0
    claim = yaml.safe_load(path.read_text())
    k8s_models.ResourceV1ResourceClaim.model_validate(claim)
    request = claim["spec"]["devices"]["requests"][0]["exactly"]
    assert request["count"] == 8 and request["deviceClassName"] == "gpu.nvidia.com"
    assert claim["spec"]["devices"]["constraints"] == [
        {"requests": ["gpus"], "matchAttribute": "gpusched.io/nvlinkIsland"}
    ]
    assert f"DRA claim default/train-8-gpus (written to {path}): allocates on dgx-a:" in result.stdout
    stdout = gpusched("explain", "embed", "--cluster", "ticket-embed", "--emit-claim", "-")  # the default driver
    assert yaml.safe_load(stdout.stdout)["spec"]["devices"]["requests"][0]["exactly"]["selectors"] == [
        {"cel": {"expression": "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"}}
    ]


def test_claim_for_a_mig_pod_and_a_shared_pod():
    claim = claim_for("asr", Pod(name="asr", mig_profile="3g.40gb"), 1)
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "mig.nvidia.com"
    with pytest.raises(ValueError, match="time-sliced replica"):
        claim_for("chat", Pod(name="chat", shared=True), 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nobody", "--cluster", "monday"), "scenario monday: no pod or job named 'nobody' (pods: notebook-0,"),
        (("train-8",), "give -f/--cluster (a file, built-in scenario, kubectl dump folder or kubeconfig)"),
        (("train-8", "--cluster", "monday", "--kubeconfig", "x"), "--kubeconfig is the cluster: drop -f/--cluster"),
        (("train-8", "--cluster", "monday", "--context", "c"), "--context goes with --kubeconfig"),
        (("train-8", "--cluster", "monday", "--driver", "x"), "--driver"),
        (("llm-a", "--cluster", "ticket-gang", "--emit-claim", "-"), "--emit-claim writes a claim for one pod"),
        (("train-8", "--cluster", "missing.yaml"), "no such file"),
    ],
)
def test_cli_bad_input_exits_2(gpusched, args, message):
    result = gpusched("explain", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_cli_emit_claim_into_a_missing_folder_writes_nothing(gpusched, tmp_path):
    target = tmp_path / "missing" / "claim.yaml"
    result = gpusched("explain", "train-8", "--cluster", "monday", "--emit-claim", target)
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert not target.parent.exists()


def test_a_claim_names_the_constraint_and_dropping_it_allocates(gpusched):
    result = gpusched(
        "explain",
        "ml/nvlink-pair",
        "--objects",
        "seed-claims",
        "--cluster",
        "fragmented",
        "--driver",
        "gpu.example.com",
        "--json",
    )
    assert result.exit_code == 1
    report = result.json()
    assert "no combination satisfies matchAttribute gpu.example.com/nvlinkIsland" in report["claim"]["diagnosis"]
    first = report["changes"][0]
    assert first["summary"] == "drop the constraint matchAttribute gpu.example.com/nvlinkIsland"
    assert first["edit"]["claim"]["spec"]["devices"]["constraints"] == []
    again = gpusched(
        "dra", "--cluster", "fragmented", "--driver", "gpu.example.com", "--objects", "seed-claims", "--json"
    )
    assert next(c for c in again.json()["claims"] if c["claim"] == "ml/nvlink-pair")["allocated"] is False
    allocated = gpusched(
        "explain", "ml/big-sxm", "--objects", "seed-claims", "--cluster", "monday", "--driver", "gpu.example.com"
    )
    assert allocated.exit_code == 0 and allocated.lines[0] == "claim ml/big-sxm allocates on dgx-a"


def test_a_pod_group_timeout_is_the_other_admission():
    found = load_scenario("training")
    result = explain_job(found.cluster, found.jobs.jobs, "llm-a")
    kueue, pod_group = result.changes
    assert "llm-a starts at t=1200, when blocker finishes" in kueue.summary
    assert pod_group.edit.timeout == 300 and "llm-a starts at t=3000" in pod_group.summary
    assert job_outcome(found.cluster, found.jobs.jobs, "llm-a", pod_group.edit).start == 3000


# --- property: on random clusters, explain never fails and every change it offers works ---------------------------


@st.composite
def _cases(draw):
    mix = {kind: draw(st.integers(0, 2)) for kind in ("dgx", "pcie", "l4", "mig")}
    if not any(mix.values()):
        mix["dgx"] = 1
    cluster = synthetic_cluster(
        draw(st.integers(1, 4)), draw(st.integers(0, 10_000)), draw(st.sampled_from([0.3, 0.6, 0.9])), mix
    )
    data = cluster.model_dump()
    for node in data["nodes"]:
        if draw(st.booleans()):
            node["taints"] = [{"key": "team", "value": "a", "effect": "NoSchedule"}]
        node["unschedulable"] = draw(st.integers(0, 4)) == 0
    holders = [pod.name for pod in cluster.running_pods()]
    data["running"] = {name: {"priority": draw(st.sampled_from([0, 50, 200]))} for name in holders}
    mig = draw(st.booleans())
    pod = Pod(
        name="p",
        gpus=1 if mig else draw(st.sampled_from([1, 2, 4, 8])),
        mig_profile=draw(st.sampled_from(["1g.10gb", "3g.40gb"])) if mig else None,
        nvlink=draw(st.booleans()),
        model=draw(st.sampled_from([None, "A100-SXM4-80GB", "H100-SXM5-80GB"])),
        memory_gib=draw(st.sampled_from([None, 20.0, 40.0])),
        shared=not mig and draw(st.integers(0, 3)) == 0,
        priority=draw(st.sampled_from([0, 100])),
    )
    return Cluster.model_validate(data), pod


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_explain_on_random_clusters_offers_only_changes_that_work(case):
    cluster, pod = case
    result = explain_pod(cluster, pod, SolverConfig(time_limit=5, workers=1))
    assert result.fits == isinstance(place_one(cluster, pod, pod.gpus), GpuChoice)
    assert result.fits or result.reasons
    for change in result.changes:
        _schedules(cluster, pod, change)
    keys = [change.cost.key() for change in result.changes]
    assert keys == sorted(keys)


def test_a_running_pod_is_not_pending(gpusched):
    result = gpusched("explain", "notebook-03", "--cluster", "ticket-finetune")
    assert result.exit_code == 0 and result.lines == ["notebook-03 is running on dgx-a: it is not Pending"]
    report = gpusched("explain", "notebook-03", "--cluster", "ticket-finetune", "--json").json()
    assert (report["running"], report["node"]) == (True, "dgx-a")


def test_bench_explain_runs_every_planner_on_a_busy_cluster(gpusched):
    report = gpusched("bench", "explain", "--nodes", "30", "--json").json()
    assert report["nodes"] == 30 and report["running"] > 0
    assert report["fits"] or report["verdict"] in ("fragmented", "gone", "unsuitable")


# --- renameByDefault: replicas advertised as nvidia.com/gpu.shared --------------------------------------------------


def test_rename_by_default_keeps_whole_gpu_pods_off_replicas():
    cluster, pod = _pod("ticket-embed", "embed")
    view = explain_pod(cluster, pod).scheduler
    assert view.node == "l4-a"
    assert view.fix.startswith("renameByDefault: true in the device plugin's time-slicing config (l4-a)")
    assert view.fix.endswith("kube-scheduler then: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    data = cluster.model_dump()
    data["nodes"][1]["gpu"]["rename_shared"] = True
    renamed = Cluster.model_validate(data)
    state = ClusterState.from_cluster(renamed)
    assert advertised(state.node("l4-a")) == {"nvidia.com/gpu.shared": 8}
    chat = Pod(name="chat", shared=True, memory_gib=10)
    found = Placer(ClusterState.from_cluster(renamed), "extended").best(chat, 1)
    assert isinstance(found, GpuChoice) and (found.node.name, found.resource) == ("l4-a", "nvidia.com/gpu.shared")
    assert explain_pod(renamed, pod).scheduler.message == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."


def test_rename_by_default_needs_replicas():
    with pytest.raises(ValueError, match="renameByDefault renames time-sliced replicas"):
        _cluster(_node("a", gpu={"rename_shared": True}))


def test_a_name_both_a_pod_and_a_job_is_refused(gpusched, write):
    scenario = write(
        "both.yaml",
        {
            "cluster": "monday",
            "pods": [{"name": "x"}],
            "jobs": [{"name": "x", "pods": 2, "gpus_per_pod": 1, "duration": 60}],
        },
    )
    result = gpusched("explain", "x", "--cluster", scenario)
    assert result.exit_code == 2 and "both a pod and a job are named 'x'" in result.stderr
