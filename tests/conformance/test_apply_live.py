"""`--apply` on the real control plane: evictions a PodDisruptionBudget blocks and then allows, a forbidden user, a
defrag carried out and one interrupted and resumed from its journal, a gang bound by `plan --apply`, and MIG
repartitions answered by a fake mig-manager.

A control plane of its own (the nodes here would change what the other conformance tests see): apply_kit.plane.
"""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

import pytest
from apply_kit import (
    GPU,
    NS,
    PATCH_NODES,
    PODS,
    READ,
    MigManager,
    bare_pod,
    bound,
    clear,
    fragment,
    gpu_node,
    owners,
    plane,
    running,
    unschedulable,
    untouched,
    viewer_may,
)  # fmt: skip

from gpusched.actions.journal import load_journal
from gpusched.actions.runner import RunInterrupted
from gpusched.conformance.api import Rest

# --- preempt --apply ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster():
    with plane() as started:
        yield started


@pytest.fixture
def fresh(cluster, tmp_path, monkeypatch):
    plane, rest = cluster
    clear(rest)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    yield plane, rest
    clear(rest)


@pytest.fixture
def budgeted(fresh):
    """p1 (4 GPUs) runs low-0 and low-1 (2 GPUs each, budget: 2 must stay available); urgent (4 GPUs) waits."""
    plane, rest = fresh
    rest.create("/api/v1/nodes", gpu_node("p1", 4))
    for name in ("low-0", "low-1"):
        rest.create(PODS, bare_pod(name, 2, {"app": "low"}))
    bound(rest, 2)
    budget = {"metadata": {"name": "low-budget", "namespace": NS},
              "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "low"}}}}  # fmt: skip
    rest.create(f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets", budget)
    rest.wait(lambda: rest.get(f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/low-budget")
              .get("status", {}).get("currentHealthy") == 2)  # fmt: skip
    rest.create(PODS, bare_pod("urgent", 4, priority="apply-high"))
    rest.wait(lambda: unschedulable(rest, "urgent"))
    return plane, rest


def test_dry_run_is_the_default_and_changes_nothing(budgeted, gpusched, tmp_path):
    plane, rest = budgeted
    before = rest.get(PODS)["items"]
    result = gpusched("preempt", f"{NS}/urgent", "--kubeconfig", plane.kubeconfig, "--apply")
    assert result.exit_code == 0, result.stderr
    assert f"evict {NS}/low-0 from p1" in result.stdout and f"evict {NS}/low-1 from p1" in result.stdout
    assert (
        "server: refused now" in result.stdout and "The disruption budget low-budget needs 2 healthy" in result.stdout
    )
    assert "dry run: nothing was changed" in result.stdout
    assert not (tmp_path / "state").exists()  # no journal either
    after = rest.get(PODS)["items"]
    assert [(p["metadata"]["uid"], p["metadata"]["resourceVersion"]) for p in after] == [
        (p["metadata"]["uid"], p["metadata"]["resourceVersion"]) for p in before
    ]


def test_a_dry_run_evicts_nothing_even_when_the_budget_allows(budgeted, gpusched, tmp_path):
    plane, rest = budgeted
    budget = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/low-budget"
    rest.call("PATCH", budget, {"spec": {"minAvailable": 0}}, "application/merge-patch+json")
    rest.wait(lambda: rest.get(budget).get("status", {}).get("disruptionsAllowed") == 2)
    result = gpusched("preempt", f"{NS}/urgent", "--kubeconfig", plane.kubeconfig, "--apply")
    assert result.exit_code == 0 and result.stdout.count("server: accepted (dry run)") == 5  # cordon, 2, bind, uncordon
    time.sleep(0.5)
    assert sorted(running(rest)) == ["low-0", "low-1", "urgent"] and not (tmp_path / "state").exists()


def test_a_budget_blocks_then_allows_the_eviction(budgeted, gpusched, tmp_path):
    plane, rest = budgeted
    journal = tmp_path / "preempt.json"
    args = ("preempt", f"{NS}/urgent", "--kubeconfig", plane.kubeconfig, "--apply", "--yes", "--journal", journal)
    blocked = gpusched(*args, "--pdb-timeout", "3")
    assert blocked.exit_code == 1
    assert "stopped: blocked by a PodDisruptionBudget for 3 s" in blocked.stdout
    assert "The disruption budget low-budget needs 2 healthy pods and has 2 currently" in blocked.stdout
    assert sorted(running(rest)) == ["low-0", "low-1", "urgent"]  # nothing evicted
    untouched(rest, "p1")  # the hold on p1 is undone
    steps = load_journal(journal).steps
    assert [s.kind for s in steps] == ["cordon", "evict", "evict", "place", "uncordon"]
    assert [s.state for s in steps] == ["pending", "failed", "pending", "pending", "pending"]
    assert "low-budget" in steps[1].error
    status = gpusched("apply", "--status", journal)
    assert status.exit_code == 1 and "2. evict apply/low-0 from p1" in status.stdout and "FAILED" in status.stdout

    budget = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/low-budget"
    rest.call("PATCH", budget, {"spec": {"minAvailable": 0}}, "application/merge-patch+json")
    resumed = gpusched("apply", "--resume", journal, "--yes")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    assert f"4. bind {NS}/urgent to p1 (unless kube-scheduler placed it already): done (bound to p1)" in (
        resumed.stdout
    )
    assert running(rest) == {"urgent": "p1"}
    untouched(rest, "p1")
    assert [s.state for s in load_journal(journal).steps] == ["done"] * 5

    again = gpusched("apply", "--resume", journal, "--yes")  # a journal run twice does nothing twice
    assert again.exit_code == 0 and "every step is done already" in again.stderr
    assert running(rest) == {"urgent": "p1"}


def test_a_user_who_may_not_patch_nodes_is_refused_the_lease_and_nothing_changes(budgeted, gpusched, tmp_path):
    plane, rest = budgeted
    before = rest.get("/api/v1/nodes/p1")["metadata"]["resourceVersion"]
    with viewer_may(rest, READ):
        journal = tmp_path / "forbidden.json"
        result = gpusched("preempt", f"{NS}/urgent", "--kubeconfig", plane.kubeconfig, "--context", "viewer",
                          "--apply", "--yes", "--journal", journal)  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "the run's lease on its nodes: 403 " in result.stderr and "nothing was changed" in result.stderr
    assert not journal.exists() and rest.get("/api/v1/nodes/p1")["metadata"]["resourceVersion"] == before


def test_a_user_who_may_not_evict_gets_a_clear_error_and_nothing_changes(budgeted, gpusched, tmp_path):
    plane, rest = budgeted
    with viewer_may(rest, [*READ, PATCH_NODES]):
        rest.call("PATCH", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/low-budget",
                  {"spec": {"minAvailable": 0}}, "application/merge-patch+json")  # fmt: skip
        journal = tmp_path / "forbidden.json"
        result = gpusched("preempt", f"{NS}/urgent", "--kubeconfig", plane.kubeconfig, "--context", "viewer",
                          "--apply", "--yes", "--journal", journal)  # fmt: skip
        assert result.exit_code == 2
        assert "step 2 (evict apply/low-0 from p1" in result.stderr and "forbidden by the server: 403" in result.stderr
        assert 'cannot create resource "pods/eviction"' in result.stderr and "nothing was changed" in result.stderr
        assert not journal.exists()
        assert sorted(running(rest)) == ["low-0", "low-1", "urgent"]


# --- defrag --apply ----------------------------------------------------------------------------------------------


@pytest.fixture
def fragmented(fresh):
    """d1 runs a (ReplicaSet, lane-a) and b (ReplicaSet, lane-b), 1 GPU each; d2 and d3 are full but one GPU each.
    Room for 4 GPUs: empty d1, a to d2 (its only other lane-a node), b to d3 (lane-b)."""
    plane, rest = fresh
    fragment(rest)
    return plane, rest


def _d1_untouched(rest: Rest) -> None:
    untouched(rest, "d1")


def test_a_defrag_is_carried_out(fragmented, gpusched, tmp_path):
    plane, rest = fragmented
    journal = tmp_path / "defrag.json"
    result = gpusched("defrag", "--for", "4", "--kubeconfig", plane.kubeconfig, "--apply", "--yes",
                      "--journal", journal)  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "1. cordon d1 (taint gpusched.io/cordon:NoSchedule, this run's): done (cordoned)" in result.stdout
    assert "uncordon d1 (remove this run's taint): done (uncordoned)" in result.stdout
    assert rest.wait(lambda: owners(rest) == {"a": "d2", "b": "d3"})
    _d1_untouched(rest)
    assert load_journal(journal).finished


def test_a_defrag_dry_run_cordons_and_moves_nothing(fragmented, gpusched, tmp_path):
    plane, rest = fragmented
    before = rest.get("/api/v1/nodes/d1")["metadata"]["resourceVersion"]
    result = gpusched("defrag", "--for", "4", "--kubeconfig", plane.kubeconfig, "--apply")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert (
        "1. cordon d1 (taint gpusched.io/cordon:NoSchedule, this run's)\n   server: accepted (dry run)" in result.stdout
        and "dry run: nothing was changed" in result.stdout
    )
    assert rest.get("/api/v1/nodes/d1")["metadata"]["resourceVersion"] == before
    assert owners(rest) == {"a": "d1", "b": "d1"} and not (tmp_path / "state").exists()


def test_an_interrupted_defrag_resumes_from_its_journal(fragmented, gpusched, tmp_path):
    from gpusched.actions.plans import defrag_journal
    from gpusched.actions.run import carry_out, open_cluster
    from gpusched.planner.optimize.defrag import defrag, parse_shape
    from gpusched.scenarios import load_cluster

    plane, rest = fragmented
    journal = tmp_path / "defrag.json"
    report = defrag(load_cluster(str(plane.kubeconfig)), parse_shape("4"))

    def interrupt(number, step):
        if step.kind == "replacement":  # Ctrl-C after the first move
            raise KeyboardInterrupt

    with open_cluster(str(plane.kubeconfig), None) as kube:
        planned = defrag_journal(kube, kube.snapshot(), report,
                                 (str(plane.kubeconfig), None, "defrag --for 4", "gpusched defrag"), {})  # fmt: skip
        with pytest.raises(RunInterrupted):
            carry_out(kube, planned, True, str(journal), interrupt)
    _d1_untouched(rest)  # the cordon is undone on the way out
    states = [(s.kind, s.state) for s in load_journal(journal).steps]
    assert states == [("cordon", "pending"), ("evict", "done"), ("replacement", "done"), ("evict", "pending"),
                      ("replacement", "pending"), ("uncordon", "pending")]  # fmt: skip
    moved = [s.target for s in load_journal(journal).steps if s.kind == "evict" and s.state == "done"]

    status = gpusched("apply", "--status", journal)
    assert status.exit_code == 1 and "4. evict" in status.stdout and ": pending" in status.stdout
    resumed = gpusched("apply", "--resume", journal, "--yes")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    assert "2. evict" not in resumed.stdout  # done before: not done again
    assert rest.wait(lambda: owners(rest) == {"a": "d2", "b": "d3"})
    _d1_untouched(rest)
    assert moved and load_journal(journal).finished


def test_a_defrag_stops_when_the_cluster_moved_on(fragmented, gpusched, tmp_path):
    from gpusched.actions.plans import defrag_journal
    from gpusched.actions.run import carry_out, open_cluster
    from gpusched.planner.optimize.defrag import defrag, parse_shape
    from gpusched.scenarios import load_cluster

    plane, rest = fragmented
    report = defrag(load_cluster(str(plane.kubeconfig)), parse_shape("4"))
    with open_cluster(str(plane.kubeconfig), None) as kube:
        planned = defrag_journal(kube, kube.snapshot(), report,
                                 (str(plane.kubeconfig), None, "defrag --for 4", "gpusched defrag"), {})  # fmt: skip
        rest.create(PODS, bare_pod("intruder", 1, selector={"kubernetes.io/hostname": "d3"}))
        rest.wait(lambda: running(rest).get("intruder") == "d3")
        outcome = carry_out(kube, planned, True, str(tmp_path / "j.json"), lambda n, s: None)
    assert outcome.drift and "apply/intruder now runs on d3" in (outcome.stopped or "")
    assert owners(rest) == {"a": "d1", "b": "d1"}  # nothing moved
    _d1_untouched(rest)


def test_a_user_who_may_cordon_but_not_evict_changes_nothing_not_even_the_cordon(fragmented, gpusched, tmp_path):
    """Step 1 (the cordon) is allowed, step 2 (an eviction) is not: the server-side dry run of every step comes
    first, so the run stops before step 1 is done."""
    plane, rest = fragmented
    before = rest.get("/api/v1/nodes/d1")["metadata"]["resourceVersion"]
    with viewer_may(rest, [*READ, PATCH_NODES]):
        journal = tmp_path / "forbidden.json"
        result = gpusched("defrag", "--for", "4", "--kubeconfig", plane.kubeconfig, "--context", "viewer",
                          "--apply", "--yes", "--journal", journal)  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "error: " in result.stderr and "step 2 (evict apply/" in result.stderr
    assert 'forbidden by the server: 403 pods "' in result.stderr and "nothing was changed" in result.stderr
    assert not journal.exists() and not (tmp_path / "state").exists()
    assert rest.get("/api/v1/nodes/d1")["metadata"]["resourceVersion"] == before  # not cordoned
    assert owners(rest) == {"a": "d1", "b": "d1"}


def _defrag_journal(plane):
    """The plan for room for 4 GPUs, and its journal, with the cluster as it is."""
    from gpusched.actions.plans import defrag_journal
    from gpusched.actions.run import open_cluster
    from gpusched.planner.optimize.defrag import defrag, parse_shape
    from gpusched.scenarios import load_cluster

    report = defrag(load_cluster(str(plane.kubeconfig)), parse_shape("4"))
    with open_cluster(str(plane.kubeconfig), None) as kube:
        target = (str(plane.kubeconfig), None, "defrag --for 4", "gpusched defrag --for 4 --kubeconfig K --apply")
        return defrag_journal(kube, kube.snapshot(), report, target, {"wait_timeout": 30})


def _carry_out(plane, planned, path, hook):
    from gpusched.actions.run import carry_out, open_cluster

    with open_cluster(str(plane.kubeconfig), None) as kube:
        return carry_out(kube, planned, True, str(path), hook)


def _taint(rest: Rest, node: str) -> None:
    taints = [{"key": "someone/else", "value": "x", "effect": "NoSchedule"}]
    rest.call("PATCH", f"/api/v1/nodes/{node}", {"spec": {"taints": taints}}, "application/merge-patch+json")


def test_a_defrag_stops_before_a_move_to_a_node_someone_tainted(fragmented, tmp_path):
    """No pod appears and none goes: only the validator, on the cluster read again, sees that the second move can
    no longer land where the plan says."""
    plane, rest = fragmented
    planned = _defrag_journal(plane)
    assert planned.baseline == [] and len(planned.placements) == 3  # two moves and the room they make
    first, second = [s for s in planned.steps if s.kind == "replacement"]

    def someone_taints(number, step):
        if step is first:
            _taint(rest, second.node)

    journal = tmp_path / "j.json"
    outcome = _carry_out(plane, planned, journal, someone_taints)
    assert outcome.drift and not outcome.finished and outcome.replan == planned.replan
    expected = f"the validator on the rest of the plan: {second.target} on {second.node}: taint someone/else not"
    assert outcome.stopped == f"the cluster moved on: {expected} tolerated"
    states = [(s.kind, s.state) for s in load_journal(journal).steps]
    assert states == [("cordon", "pending"), ("evict", "done"), ("replacement", "done"), ("evict", "failed"),
                      ("replacement", "pending"), ("uncordon", "pending")]  # fmt: skip
    assert load_journal(journal).steps[3].error == f"not started: {outcome.stopped}"
    owner = second.target.split("/")[1].rsplit("-", 1)[0]
    assert owners(rest)[owner] == "d1"  # the second pod was not evicted
    _d1_untouched(rest)  # the cordon is undone


def test_a_defrag_stops_when_a_pod_to_move_is_deleted(fragmented, tmp_path):
    plane, rest = fragmented
    planned = _defrag_journal(plane)
    evictions = [s for s in planned.steps if s.kind == "evict"]

    def someone_deletes(number, step):
        if step.kind == "cordon":  # before any eviction, someone deletes the second pod to move
            rest.delete(f"{PODS}/{evictions[1].target.split('/')[1]}")

    journal = tmp_path / "j.json"
    outcome = _carry_out(plane, planned, journal, someone_deletes)
    assert outcome.drift and f"the cluster moved on: pod {evictions[1].target} is " in (outcome.stopped or "")
    assert "by someone else" in (outcome.stopped or "") and "the plan evicts it at step 4" in (outcome.stopped or "")
    steps = load_journal(journal).steps
    assert [s.state for s in steps] == ["pending", "failed", "pending", "pending", "pending", "pending"]
    first_owner = evictions[0].target.split("/")[1].rsplit("-", 1)[0]
    assert owners(rest)[first_owner] == "d1" and evictions[0].target.split("/")[1] in running(rest)  # untouched
    _d1_untouched(rest)


def test_a_resumed_defrag_re_validates_and_stops_when_the_cluster_moved_on(fragmented, gpusched, tmp_path):
    plane, rest = fragmented
    planned = _defrag_journal(plane)
    second = [s for s in planned.steps if s.kind == "replacement"][1]

    def interrupt(number, step):
        if step.kind == "replacement":  # Ctrl-C after the first move
            raise KeyboardInterrupt

    journal = tmp_path / "j.json"
    with pytest.raises(RunInterrupted):
        _carry_out(plane, planned, journal, interrupt)
    rest.create(PODS, bare_pod("intruder", 1, selector={"kubernetes.io/hostname": second.node}))
    rest.wait(lambda: running(rest).get("intruder") == second.node)  # the second move's node is full now

    resumed = gpusched("apply", "--resume", journal, "--yes")
    assert resumed.exit_code == 1, resumed.stdout + resumed.stderr
    assert f"stopped: the cluster moved on: pod {NS}/intruder now runs on {second.node} (spec.nodeName)" in (
        resumed.stdout
    )
    assert f"the validator on the rest of the plan: {second.node}: GPU " in resumed.stdout
    assert f"re-plan: {planned.replan}" in resumed.stdout
    assert f"resume: gpusched apply --resume {journal} --yes" in resumed.stdout
    steps = load_journal(journal).steps  # checked before the resume's first step: the re-armed cordon
    assert [s.state for s in steps] == ["failed", "done", "done", "pending", "pending", "pending"]
    assert steps[0].error.startswith("not started: the cluster moved on: ")
    owner = second.target.split("/")[1].rsplit("-", 1)[0]
    assert owners(rest)[owner] == "d1"  # the second pod was not evicted
    _d1_untouched(rest)  # not cordoned again
    status = gpusched("apply", "--status", journal)
    assert (
        status.exit_code == 1
        and "1. cordon d1 (taint gpusched.io/cordon:NoSchedule, this run's): FAILED: not started: the cluster moved on"
        in status.stdout
    )


def _preempt_journal(plane, kube):
    from gpusched.actions.plans import preempt_journal
    from gpusched.planner.optimize.preempt import preempt

    snapshot = kube.snapshot()
    wanted = next(p for p in snapshot.imported.pending.pods if p.name == f"{NS}/urgent")
    target = (str(plane.kubeconfig), None, f"preempt {NS}/urgent", "gpusched preempt")
    return preempt_journal(kube, snapshot, preempt(snapshot.cluster, wanted), f"{NS}/urgent", target,
                           {"wait_timeout": 30})  # fmt: skip


def test_a_preemption_holds_the_room_it_makes(budgeted, tmp_path):
    """Once the first victim is gone, another pod wants its GPUs: the run's taint on p1 keeps it off, so the
    preemptor gets the room (the run converges) and the newcomer waits."""
    from gpusched.actions.run import carry_out, open_cluster

    plane, rest = budgeted
    budget = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/low-budget"
    rest.call("PATCH", budget, {"spec": {"minAvailable": 0}}, "application/merge-patch+json")
    rest.wait(lambda: rest.get(budget).get("status", {}).get("disruptionsAllowed") == 2)

    def sneaks_in(number, step):
        if number == 2:  # the first victim is gone: another pod asks for its GPUs before the second is evicted
            rest.create(PODS, bare_pod("sneaky", 2))
            rest.wait(lambda: unschedulable(rest, "sneaky"))

    with open_cluster(str(plane.kubeconfig), None) as kube:
        planned = _preempt_journal(plane, kube)
        assert planned.baseline == [] and [p.node for p in planned.placements] == ["p1"]
        outcome = carry_out(kube, planned, True, str(tmp_path / "j.json"), sneaks_in)
    assert outcome.finished, outcome.stopped
    assert running(rest) == {"urgent": "p1", "sneaky": None}
    untouched(rest, "p1")


# --- plan --apply ------------------------------------------------------------------------------------------------


@pytest.fixture
def gang(fresh):
    """g1 and g2 (4 GPUs each); train-0 and train-1 (4 GPUs each, one pod group) for gpusched's profile, and solo
    for another scheduler: gpusched leaves it alone."""
    plane, rest = fresh
    for name in ("g1", "g2"):
        rest.create("/api/v1/nodes", gpu_node(name, 4))
    for name in ("train-0", "train-1"):
        rest.create(PODS, bare_pod(name, 4, {"scheduling.x-k8s.io/pod-group": "train"}, scheduler="gpusched"))
    rest.create(PODS, bare_pod("solo", 1, scheduler="someone-else"))
    return plane, rest


def test_plan_apply_binds_a_gang(gang, gpusched, tmp_path):
    plane, rest = gang
    versions = sorted(p["metadata"]["resourceVersion"] for p in rest.get(PODS)["items"])
    dry = gpusched("plan", "--kubeconfig", plane.kubeconfig, "--apply", "--rollback")
    assert dry.exit_code == 0, dry.stdout + dry.stderr
    assert f"bind {NS}/train-0 to g" in dry.stdout and "server: accepted (dry run)" in dry.stdout
    assert f"roll back {NS}/train-0 if its gang is incomplete (delete; re-created unbound from its manifest)" in (
        dry.stdout
    )
    assert running(rest) == {"train-0": None, "train-1": None, "solo": None}  # the dry run bound nothing
    assert sorted(p["metadata"]["resourceVersion"] for p in rest.get(PODS)["items"]) == versions
    assert not (tmp_path / "state").exists()  # nor wrote a journal
    done = gpusched("plan", "--kubeconfig", plane.kubeconfig, "--apply", "--rollback", "--yes", "--journal",
                    tmp_path / "j.json")  # fmt: skip
    assert done.exit_code == 0, done.stdout + done.stderr
    placed = running(rest)
    assert {placed["train-0"], placed["train-1"]} == {"g1", "g2"} and placed["solo"] is None


def test_plan_apply_binds_no_gang_of_bare_pods_it_could_not_undo(gang, gpusched, tmp_path):
    plane, rest = gang
    done = gpusched("plan", "--kubeconfig", plane.kubeconfig, "--apply", "--yes", "--journal", tmp_path / "j.json")
    assert done.exit_code == 1, done.stdout + done.stderr
    assert f"not bound: gang {NS}/train: {NS}/train-0, {NS}/train-1 have no owner" in done.stdout
    assert running(rest) == {"train-0": None, "train-1": None, "solo": None}


def test_plan_apply_rolls_back_an_incomplete_gang(gang, tmp_path):
    from gpusched.actions.plans import bind_journal, gpusched_jobs
    from gpusched.actions.run import carry_out, open_cluster
    from gpusched.planner.optimize.plan import plan

    plane, rest = gang
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in rest.get(PODS)["items"]}
    with open_cluster(str(plane.kubeconfig), None) as kube:
        snapshot = kube.snapshot()
        jobs, members = gpusched_jobs(snapshot, "gpusched")
        report = plan(snapshot.cluster, jobs)
        planned = bind_journal(kube, snapshot, report, members, (str(plane.kubeconfig), None, "plan", "gpusched plan"),
                               {"rollback": True})  # fmt: skip
        first = planned.steps[0].node

        def someone_else_binds_train_1(number, step):
            if number == 1:  # after gpusched bound train-0: another scheduler takes train-1
                body = {"metadata": {"name": "train-1"}, "target": {"kind": "Node", "name": first}}
                rest.create(f"{PODS}/train-1/binding", body)

        outcome = carry_out(kube, planned, True, str(tmp_path / "j.json"), someone_else_binds_train_1, snapshot)
    assert outcome.drift and "apply/train-1 is bound to" in (outcome.stopped or "")
    kinds = [(s.kind, s.target, s.state) for s in outcome.steps]
    assert kinds == [("bind", f"{NS}/train-0", "done"), ("bind", f"{NS}/train-1", "skipped"),  # never started
                     ("delete", f"{NS}/train-0", "done"), ("delete", f"{NS}/train-1", "done")]  # fmt: skip
    assert outcome.steps[2].result == "deleted and re-created unbound from its manifest"
    assert outcome.steps[3].result == f"bound to {first} by someone else: left alone"
    assert load_journal(tmp_path / "j.json").rolled_back == [f"{NS}/train"]
    pods = {p["metadata"]["name"]: p for p in rest.get(PODS)["items"]}
    assert pods["train-0"]["metadata"]["uid"] != uids["train-0"] and not pods["train-0"]["spec"].get("nodeName")
    assert pods["train-0"]["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "train"}  # as it was
    assert pods["train-1"]["spec"]["nodeName"] == first  # the pod gpusched did not bind is left alone


# --- mig plan --apply --------------------------------------------------------------------------------------------


@pytest.fixture
def partitioned(fresh):
    """m1: one A100 80GB in seven 1g.10gb instances (mixed strategy), one of them held by p."""
    plane, rest = fresh
    node = gpu_node("m1", 1, {"nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed",
                              "nvidia.com/mig-1g.10gb.count": "7", "nvidia.com/mig-1g.10gb.memory": "9984",
                              "nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.config.state": "success"})  # fmt: skip
    for field in ("capacity", "allocatable"):
        node["status"][field].update({GPU: "0", "nvidia.com/mig-1g.10gb": "7"})
    rest.create("/api/v1/nodes", node)
    pod = bare_pod("p", 1)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    rest.create(PODS, pod)
    bound(rest, 1)
    return plane, rest


def test_a_mig_dry_run_labels_nothing(partitioned, gpusched, tmp_path):
    plane, rest = partitioned
    before = rest.get("/api/v1/nodes/m1")["metadata"]
    result = gpusched("mig", "plan", "--kubeconfig", plane.kubeconfig, "--demand", "3g.40gb=1", "--apply")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "label node m1 nvidia.com/mig.config=gpusched-" in result.stdout
    assert "install the emitted mig-parted file" in result.stdout
    assert rest.get("/api/v1/nodes/m1")["metadata"] == before and "p" in running(rest)


@pytest.mark.parametrize("answer", ["success", "failed"])
def test_mig_repartition_with_a_fake_mig_manager(partitioned, gpusched, tmp_path, answer):
    plane, rest = partitioned
    manager = MigManager(rest, answer)
    manager.start()
    try:
        journal = tmp_path / "mig.json"
        result = gpusched("mig", "plan", "--kubeconfig", plane.kubeconfig, "--demand", "3g.40gb=1", "--apply",
                          "--yes", "--journal", journal, "--mig-timeout", "30")  # fmt: skip
    finally:
        manager.stopping.set()
        manager.join(timeout=5)
    steps = load_journal(journal).steps
    assert [s.kind for s in steps] == ["cordon", "evict", "label", "mig-state", "uncordon"]
    name = steps[2].labels["nvidia.com/mig.config"]
    assert manager.seen == [("m1", name, True)]  # labelled while cordoned and drained
    assert "p" not in running(rest)  # its instance was on the GPU to change
    untouched(rest, "m1")  # uncordoned either way
    if answer == "success":
        assert result.exit_code == 0, result.stdout + result.stderr
        assert load_journal(journal).finished
    else:
        assert result.exit_code == 1
        assert "stopped: mig-manager reported nvidia.com/mig.config.state=failed on m1" in result.stdout
        # the uncordon ran; it and the cordon are re-armed for a resume
        assert [s.state for s in steps] == ["pending", "done", "done", "failed", "pending"]


def test_a_mig_repartition_stops_when_someone_repartitioned_the_gpu_meanwhile(partitioned, tmp_path):
    from gpusched.actions.plans import mig_journal
    from gpusched.actions.run import carry_out, open_cluster
    from gpusched.planner.optimize.mig import plan_mig
    from gpusched.planner.optimize.solver import SolverConfig
    from gpusched.scenarios import load_cluster

    plane, rest = partitioned
    plan = plan_mig(load_cluster(str(plane.kubeconfig)), {"3g.40gb": 1}, SolverConfig())

    def someone_repartitions(number, step):
        if step.kind == "cordon":  # the device plugin now advertises three 1g.10gb and two 2g.20gb
            advertised = {"nvidia.com/mig-1g.10gb": "3", "nvidia.com/mig-2g.20gb": "2"}
            body = {"status": {"capacity": advertised, "allocatable": advertised}}
            rest.call("PATCH", "/api/v1/nodes/m1/status", body, "application/merge-patch+json")

    with open_cluster(str(plane.kubeconfig), None) as kube:
        target = (str(plane.kubeconfig), None, "mig plan", "gpusched mig plan --demand 3g.40gb=1")
        planned = mig_journal(kube, kube.snapshot(), plan, target, {"mig_timeout": 30})
        assert planned.baseline == [] and [c.node for c in planned.mig_changes] == ["m1"]
        outcome = carry_out(kube, planned, True, str(tmp_path / "j.json"), someone_repartitions)
    assert outcome.drift and (outcome.stopped or "").startswith(
        "the cluster moved on: node m1 GPU 0: MIG layout is now "
    )
    assert "2g.20gb@0, 2g.20gb@2 (status.allocatable nvidia.com/mig-*), the plan started from 1g.10gb@0, 1g" in (
        outcome.stopped or ""
    )
    assert [s.state for s in outcome.steps] == ["pending", "failed", "pending", "pending", "pending"]
    node = rest.get("/api/v1/nodes/m1")
    untouched(rest, "m1")
    assert "p" in running(rest)  # p not evicted
    assert node["metadata"]["labels"]["nvidia.com/mig.config"] == "all-1g.10gb"  # not relabelled


# --- the README's walk-through, and the kubectl plugin -------------------------------------------------------------


def _readme_walkthrough() -> list[tuple[list[str], list[str]]]:
    """The commands of the README's full apply (its `text` block under `--apply`), each with the output shown."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### --apply: carry a plan out on a real cluster")[1].split("\n### ")[0]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block, "the README's --apply section shows no full run"
    runs: list[tuple[list[str], list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ gpusched "):
            runs.append((shlex.split(line.removeprefix("$ gpusched ")), []))
        else:
            runs[-1][1].append(line)
    return runs


VOLATILE = re.compile(r" up in | at https://|^export KUBECONFIG=|apply-\d{8}T\d{6}-[0-9a-f]{6}")  # ports, run ids


def test_the_readme_walkthrough(gpusched, tmp_path, monkeypatch, capsys):
    """The README's full apply, command by command, on the built-in `preemption` scenario loaded into `cluster up`:
    each line it shows (but ports, times and the run id) is printed, in order. On the way, `kubectl gpusched
    explain` through the plugin's entry point, reading $KUBECONFIG."""
    from gpusched.cli import kubectl_main

    folder, state = tmp_path / "cp", tmp_path / "state" / "gpusched"
    kubeconfig = folder / "kubeconfig"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    runs = _readme_walkthrough()
    assert [args[:2] for args, _ in runs] == [["cluster", "up"], ["cluster", "load"], ["preempt", "default/train-8"],
                                              ["preempt", "default/train-8"], ["apply", "--resume"],
                                              ["cluster", "down"]]  # fmt: skip
    journal: list[Path] = []

    def run(args: list[str], shown: list[str]):
        path = str(journal[0]) if journal else ""
        args = [str(kubeconfig) if a == "$KUBECONFIG" else (path if a.startswith("~/.local/state/") else a)
                for a in args]  # fmt: skip
        result = gpusched(*args, *(["--dir", folder] if args[0] == "cluster" else []))
        planned = next((line.split()[2] for line in result.lines if line.startswith("default/train-8 -> ")), "dgx-a")
        assert planned in ("dgx-a", "dgx-b")  # the two DGX nodes tie (four 1-GPU notebooks each): either is shown
        other = {"dgx-a": "dgx-b", "notebook-a": "notebook-b"} if planned == "dgx-b" else {}
        lines = iter(result.lines)
        for line in shown:
            if line == "..." or VOLATILE.search(line):
                continue
            for old, new in other.items():
                line = line.replace(old, new)
            line = line.replace("~/.local/state/gpusched", str(state))
            assert line in lines, (line, result.stdout, result.stderr)  # in order: the iterator moves on
        return result

    up = run(*runs[0])
    assert up.exit_code == 0, up.stderr
    try:
        loaded = run(*runs[1])
        assert loaded.exit_code == 0 and loaded.lines[0] == "loaded preemption: 3 nodes, 12 running pods, 3 pending"

        monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{kubeconfig}")  # the first file that exists
        monkeypatch.setattr("sys.argv", ["kubectl-gpusched", "explain", "train-8", "-n", "default"])
        with pytest.raises(SystemExit) as exited:
            kubectl_main()
        assert exited.value.code == 1  # Pending
        assert capsys.readouterr().out.startswith("default/train-8 is Pending")

        dry = run(*runs[2])
        assert dry.exit_code == 0 and "dry run: nothing was changed" in dry.stdout
        assert dry.stdout.count("server: accepted (dry run)") == 7 and not state.exists()
        done = run(*runs[3])
        assert done.exit_code == 0, done.stdout + done.stderr
        journal.extend(state.iterdir())
        assert len(journal) == 1 and load_journal(journal[0]).finished
        again = run(*runs[4])
        assert again.exit_code == 0 and "every step is done already" in again.stderr
    finally:
        assert run(*runs[5]).exit_code == 0


def test_the_kubectl_plugin_takes_kubectls_namespace_context_and_kubeconfig(budgeted, monkeypatch, capsys, tmp_path):
    """`kubectl gpusched explain POD -n NS`, the context's namespace when -n is absent, and --context/--kubeconfig
    as kubectl passes them on to a plugin."""
    import yaml

    from gpusched.cli import kubectl_main

    plane, rest = budgeted

    def plugin(*args):
        monkeypatch.setattr("sys.argv", ["kubectl-gpusched", *args])
        with pytest.raises(SystemExit) as exited:
            kubectl_main()
        return exited.value.code, capsys.readouterr()

    monkeypatch.setenv("KUBECONFIG", str(plane.kubeconfig))
    for flags in (["-n", NS], [f"-n{NS}"], [f"--namespace={NS}"], ["--namespace", NS]):
        code, seen = plugin("explain", "urgent", *flags)
        assert code == 1 and seen.out.startswith(f"{NS}/urgent is Pending"), seen
    code, seen = plugin("explain", "urgent")  # the current context names no namespace: default
    assert code == 2 and "default/urgent" in seen.err

    config = yaml.safe_load(plane.kubeconfig.read_text())
    for context in config["contexts"]:
        if context["name"] == "gpusched":
            context["context"]["namespace"] = NS
    config["current-context"] = "viewer"  # a user with no rights: the --context below must be the one used
    copy = tmp_path / "kubeconfig"
    copy.write_text(yaml.safe_dump(config))
    code, seen = plugin("explain", "urgent", "--kubeconfig", str(copy), "--context", "gpusched")
    assert code == 1 and seen.out.startswith(f"{NS}/urgent is Pending"), seen
    code, seen = plugin("defrag", "--like", "urgent", "-n", NS)  # -n names the pod --like takes its shape from
    assert code in (0, 1) and seen.out.startswith("room for 1 pod x"), seen
    code, seen = plugin("map")  # a command given no cluster reads the context's, through the plugin
    assert code == 0 and seen.out.startswith("GPUs for 8-GPU pods"), seen
