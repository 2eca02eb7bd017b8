"""DefaultPreemption's disruption budgets, candidate sampling and the terminating-victim wait, as read in
pkg/scheduler/framework/preemption and plugins/defaultpreemption."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from gpusched.planner.scheduler.plugins.defaultpreemption import (
    ERR_REASON_TERMINATING,
    Candidate,
    candidates_wanted,
    choices,
    pick,
)
from gpusched.planner.scheduler.predict import predict

GPU = "nvidia.com/gpu"


def node(name: str, gpus: int = 1) -> dict:
    allocatable = {"cpu": "8", "memory": "16Gi", "pods": "110", GPU: str(gpus)}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


def pod(name: str, on: str = "", priority: int = 0, start: int = 0, app: str = "", **extra) -> dict:
    meta: dict = {"name": name, "namespace": "default", "labels": {"app": app} if app else {}}
    if "deletionTimestamp" in extra:
        meta["deletionTimestamp"] = extra.pop("deletionTimestamp")
    status = {"phase": "Running", "startTime": f"2026-01-01T00:00:{start:02d}Z"} if on else {"phase": "Pending"}
    status.update(extra.pop("status", {}))
    spec = {"containers": [{"name": "c", "resources": {"limits": {GPU: "1"}}}], "priority": priority, **extra}
    if on:
        spec["nodeName"] = on
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def budget(app: str, allowed: int, disrupted: tuple[str, ...] = ()) -> dict:
    status: dict = {"disruptionsAllowed": allowed}
    if disrupted:
        status["disruptedPods"] = dict.fromkeys(disrupted, "2026-01-01T00:00:00Z")
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"pdb-{app}", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}},
        "status": status,
    }


def listed(*items: dict) -> dict:
    return {"kind": "List", "items": list(items)}


def run(nodes, pods, target, pdbs=None):
    return predict(listed(*nodes), listed(*pods), target, pdbs_doc=listed(*pdbs) if pdbs is not None else None)


def test_a_node_whose_victim_breaks_a_budget_loses_to_one_whose_victim_does_not():
    """Without budgets n1 wins (its victim has the lower priority); its victim's budget is used up, so n2."""
    nodes = [node("n1"), node("n2")]
    pods = [pod("a", "n1", priority=1, app="web"), pod("b", "n2", priority=5)]
    target = pod("p", priority=100)
    assert run(nodes, pods, target).nomination.node == "n1"
    guarded = run(nodes, pods, target, [budget("web", 0)])
    assert [n.node for n in guarded.nominations] == ["n2"]
    assert run(nodes, pods, target, [budget("web", 1)]).nomination.node == "n1"  # one disruption allowed


def test_budget_violating_pods_are_reprieved_first():
    """One GPU must go of two. By importance `a` (priority 5) stays and `b` goes; `b`'s budget is used up, so it is
    tried first, stays, and `a` goes."""
    pods = [pod("a", "n1", priority=5, start=1), pod("b", "n1", priority=1, start=2, app="web")]
    target = pod("p", priority=100)
    assert run([node("n1", 2)], pods, target).nomination.victims == ["default/b"]
    assert run([node("n1", 2)], pods, target, [budget("web", 0)]).nomination.victims == ["default/a"]


def test_a_pod_already_disrupted_does_not_use_the_budget_again():
    nodes = [node("n1"), node("n2")]
    pods = [pod("a", "n1", priority=1, app="web"), pod("b", "n2", priority=5)]
    target = pod("p", priority=100)
    assert run(nodes, pods, target, [budget("web", 0, ("a",))]).nomination.node == "n1"


def test_a_pod_without_labels_or_a_budget_elsewhere_is_not_covered():
    nodes = [node("n1"), node("n2")]
    pods = [pod("a", "n1", priority=1), pod("b", "n2", priority=5)]
    everything = budget("web", 0)
    everything["spec"]["selector"] = {}
    assert run(nodes, pods, pod("p", priority=100), [everything]).nomination.node == "n1"


def test_equal_candidates_are_all_possible_nominations():
    nodes = [node("n1"), node("n2")]
    pods = [pod("a", "n1", priority=1, start=3), pod("b", "n2", priority=1, start=3)]
    result = run(nodes, pods, pod("p", priority=100))
    assert [n.node for n in result.nominations] == ["n1", "n2"]
    assert [n.message.split("node ")[-1] for n in result.nominations] == [
        "n1, preempting 1 victims",
        "n2, preempting 1 victims",
    ]


def test_a_retried_preemptor_waits_for_its_nominated_nodes_terminating_victim():
    evicted = {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}
    victim = pod("v", "n1", priority=1, deletionTimestamp="2026-01-01T00:01:00Z", status=evicted)
    target = pod("p", priority=100, status={"nominatedNodeName": "n1"})
    result = run([node("n1"), node("n2")], [victim, pod("b", "n2", priority=1)], target)
    assert result.message == (f"0/2 nodes are available: 2 Insufficient {GPU}. preemption: {ERR_REASON_TERMINATING}")
    deleting = pod("v", "n1", priority=1, deletionTimestamp="2026-01-01T00:01:00Z")  # not by preemption
    assert run([node("n1"), node("n2")], [deleting, pod("b", "n2", priority=1)], target).nomination is not None


def _candidate(name: str, priority: int, violations: int = 0) -> Candidate:
    class Victim:
        def __init__(self) -> None:
            self.priority = priority
            self.start_time = datetime(2026, 1, 1, tzinfo=UTC)

    return Candidate(name, (Victim(),), violations)


def test_sampling_wants_a_tenth_of_the_potential_nodes_at_least_100():
    assert [candidates_wanted(n) for n in (5, 100, 150, 1000, 2000)] == [5, 100, 100, 100, 200]


def test_with_more_candidates_than_sampled_any_of_the_top_can_win():
    """150 candidates, 100 sampled: a candidate wins when at most 50 rank above it."""
    found = [_candidate(f"n{i:03d}", priority=i) for i in range(150)]
    names = [c.node for c in choices(found, 100)]
    assert names == [f"n{i:03d}" for i in range(51)]
    assert pick(found).node == "n000"


def test_a_candidate_over_budget_wins_only_when_none_is_within():
    over = [_candidate(f"o{i}", priority=0, violations=1) for i in range(120)]
    within = [_candidate("w", priority=50)]
    assert [c.node for c in choices([*over, *within], 100)] == ["w"]
    assert [c.node for c in choices(over, 100)] == [c.node for c in over]  # all tie


@given(st.lists(st.integers(0, 5), min_size=1, max_size=40), st.integers(1, 40))
def test_the_full_ranks_best_is_always_a_possible_choice(priorities, wanted):
    found = [_candidate(f"n{i}", p) for i, p in enumerate(priorities)]
    assert pick(found) in choices(found, wanted)


def test_k8s_reads_budgets_from_pdbs_and_refuses_a_bad_one(gpusched, write):
    nodes = write("nodes.json", listed(node("n1"), node("n2")))
    pods = write("pods.json", listed(pod("a", "n1", priority=1, app="web"), pod("b", "n2", priority=5)))
    target = write("pod.json", pod("p", priority=100))
    args = ["k8s", "--nodes", nodes, "--pods", pods, target, "--json"]
    assert '"node": "n1"' in gpusched(*args).stdout
    guarded = gpusched(*args, "--pdbs", write("pdbs.json", listed(budget("web", 0))))
    assert guarded.exit_code == 1 and '"node": "n2"' in guarded.stdout and '"node": "n1"' not in guarded.stdout
    bad = budget("web", 0)
    bad["status"]["disruptionsAllowed"] = "none"
    refused = gpusched(*args, "--pdbs", write("bad.json", listed(bad)))
    assert refused.exit_code == 2 and "disruptionsAllowed" in refused.stderr
