"""The independent validator refuses the wrong plans it once accepted; `validate` reads plan files strictly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusched.models.cluster import Cluster
from gpusched.models.workload import GpuNeeds
from gpusched.planner.validate import Assignment, Violation, violations

NODES = [
    {"name": "dgx", "gpu": {"model": "A100-SXM4-80GB", "count": 2, "memory_gib": 80}},
    {
        "name": "l4",
        "gpu": {
            "model": "L4",
            "count": 1,
            "memory_gib": 24,
            "replicas": 4,
            "busy": [{"gpu": 0, "pod": "a", "memory_gib": 10}, {"gpu": 0, "pod": "b", "memory_gib": 10}],
        },
    },
    {
        "name": "mig",
        "gpu": {
            "model": "A100-SXM4-80GB",
            "count": 2,
            "memory_gib": 80,
            "mig": [{"gpu": 0, "profile": "3g.40gb", "start": 0}, {"gpu": 0, "profile": "3g.40gb", "start": 4}],
        },
    },
]
CLUSTER = Cluster.model_validate({"nodes": NODES})
MIG = GpuNeeds(mig_profile="3g.40gb")


def _words(found: list[Violation]) -> list[str]:
    return [str(v) for v in found]


def test_time_sliced_memory_counts_every_busy_replica() -> None:
    """20 GiB declared by two running sharers and 10 GiB more is over the L4's 24 (the last replica alone: 20)."""
    found = violations(CLUSTER, [Assignment("c", GpuNeeds(shared=True, memory_gib=10), "l4", (0,))])
    assert found == [Violation("capacity", "l4: GPU 0 memory oversubscribed: 30 of 24 GiB declared")]
    assert violations(CLUSTER, [Assignment("c", GpuNeeds(shared=True, memory_gib=4), "l4", (0,))]) == []


def test_whole_and_mig_pods_get_what_they_ask_for() -> None:
    whole = violations(CLUSTER, [Assignment("w", GpuNeeds(), "mig", (0,), ((0, 0),), 1)])
    assert whole == [Violation("device", "w on mig: a whole-GPU pod given MIG instances")]
    assert _words(violations(CLUSTER, [Assignment("m", MIG, "mig", (1,), (), 1)])) == [
        "m on mig: a MIG pod (3g.40gb) given whole GPUs"
    ]
    assert violations(CLUSTER, [Assignment("m", MIG, "mig", (0,), ((0, 4),), 1)]) == []
    assert _words(violations(CLUSTER, [Assignment("m", MIG, "mig", (1,), ((0, 4),), 1)])) == [
        "m on mig: GPUs [1] are not those of its MIG instances"
    ]


def test_the_integer_view_gives_single_strategy_instances_as_gpus() -> None:
    nodes = [NODES[2] | {"gpu": NODES[2]["gpu"] | {"mig_strategy": "single"}}]
    single = Cluster.model_validate({"nodes": nodes})
    placed = [Assignment("w", GpuNeeds(), "mig", (0,), ((0, 0),), 1)]
    assert violations(single, placed, hardware=False) == []
    assert _words(violations(CLUSTER, placed, hardware=False)) == ["w on mig: a whole-GPU pod given MIG instances"]


def test_an_oversubscription_the_plan_does_not_touch_is_not_its_violation() -> None:
    busy = [{"gpu": 0, "pod": p, "memory_gib": 10} for p in "abc"]
    nodes = [{"name": "l4", "gpu": {"model": "L4", "count": 2, "memory_gib": 24, "replicas": 4, "busy": busy}}]
    cluster = Cluster.model_validate({"nodes": nodes})
    assert violations(cluster, [Assignment("d", GpuNeeds(shared=True, memory_gib=10), "l4", (1,))]) == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(1, 24), min_size=1, max_size=3),
    st.floats(1, 24),
    st.booleans(),
)
def test_declared_memory_is_the_sum_of_every_sharer(running: list[float], asked: float, shared_gpu: bool) -> None:
    """A property that would have found the last-replica bug: valid exactly when every sharer's memory fits."""
    busy = [{"gpu": 0, "pod": f"r{i}", "memory_gib": gib} for i, gib in enumerate(running)]
    nodes = [{"name": "l4", "gpu": {"model": "L4", "count": 2, "memory_gib": 24, "replicas": 4, "busy": busy}}]
    cluster = Cluster.model_validate({"nodes": nodes})
    gpu = 0 if shared_gpu else 1
    found = violations(cluster, [Assignment("p", GpuNeeds(shared=True, memory_gib=asked), "l4", (gpu,))])
    total = asked + (sum(running) if shared_gpu else 0.0)
    assert bool(found) == (total > 24)


# --- plan files --------------------------------------------------------------------------------------------------


def _job(name: str, pods: int, gpus: int, **needs) -> dict:
    return {"name": name, "pods": pods, "gpus": gpus, "needs": needs}


def _pod(pod: str, job: str, node: str, gpus: list, mig: list | None = None) -> dict:
    return {"pod": pod, "job": job, "node": node, "gpus": gpus, "mig": mig or []}


@pytest.fixture
def cluster(write):
    return write("cluster.json", {"nodes": NODES})


def _check(gpusched, write, cluster, plan: dict):
    return gpusched("validate", cluster, write("plan.json", plan), "--json")


def _messages(result) -> list[str]:
    return [v["message"] for v in result.json()["violations"]]


def test_a_gang_completed_by_one_pod_given_twice_is_invalid(gpusched, write, cluster) -> None:
    jobs = [_job("g", 2, 1)]
    twice = {"jobs": jobs, "assignments": [_pod("g-0", "g", "dgx", [0]), _pod("g-0", "g", "dgx", [1])]}
    result = _check(gpusched, write, cluster, twice)
    assert result.exit_code == 1
    assert _messages(result) == ["g-0: placed 2 times", "job g: 1 of 2 pods placed"]
    right = {"jobs": jobs, "assignments": [_pod("g-0", "g", "dgx", [0]), _pod("g-1", "g", "dgx", [1])]}
    assert _check(gpusched, write, cluster, right).json() == {"valid": True, "violations": []}


def test_a_pod_the_plan_does_not_have_is_invalid(gpusched, write, cluster) -> None:
    plan = {"jobs": [_job("g", 2, 1)], "assignments": [_pod("g-0", "g", "dgx", [0]), _pod("g-7", "g", "dgx", [1])]}
    found = _messages(_check(gpusched, write, cluster, plan))
    assert found == ["g-7: not a pod of job g (its pods: g-0, g-1)", "job g: 1 of 2 pods placed"]
    plan = {"jobs": [_job("g", 1, 1)], "assignments": [_pod("g", "h", "dgx", [0])]}
    assert {"kind": "unknown", "message": "g: unknown job h"} in _check(gpusched, write, cluster, plan).json()[
        "violations"
    ]


def test_unplaced_must_name_exactly_the_jobs_left_out(gpusched, write, cluster) -> None:
    jobs = [_job("a", 1, 1), _job("b", 1, 1)]
    placed = [_pod("a", "a", "dgx", [0])]
    assert _check(gpusched, write, cluster, {"jobs": jobs, "assignments": placed, "unplaced": ["b"]}).exit_code == 0
    result = _check(gpusched, write, cluster, {"jobs": jobs, "assignments": placed, "unplaced": ["b", "ghost"]})
    assert result.exit_code == 1 and _messages(result) == ["unplaced names ghost, which is not a job of the plan"]
    found = _messages(_check(gpusched, write, cluster, {"jobs": jobs, "assignments": placed, "unplaced": ["a"]}))
    assert found == ["job a: both placed and unplaced", "job b: neither placed nor unplaced"]


def test_mig_and_whole_pods_in_a_plan_file(gpusched, write, cluster) -> None:
    plan = {
        "jobs": [_job("w", 1, 1), _job("m", 1, 1, mig_profile="3g.40gb")],
        "assignments": [_pod("w", "w", "mig", [0], [[0, 0]]), _pod("m", "m", "dgx", [0])],
    }
    found = _messages(_check(gpusched, write, cluster, plan))
    assert found == ["w on mig: a whole-GPU pod given MIG instances", "m on dgx: a MIG pod (3g.40gb) given whole GPUs"]


@pytest.mark.parametrize(
    ("plan", "field", "message"),
    [
        (
            {"jobs": [_job("a", 1, 1)], "assignments": [_pod("a", "a", "dgx", [True])]},
            "assignments[0].gpus[0]",
            "integer",
        ),
        ({"jobs": [_job("a", 1, True)], "assignments": []}, "jobs[0](a).gpus", "integer"),
        ({"jobs": [], "assignments": [], "extra": 1}, "extra", "unknown field"),
        ({"jobs": [_job("a", 1, 1) | {"colour": "red"}], "assignments": []}, "jobs[0](a).colour", "unknown field"),
        ({"jobs": [], "assignments": [_pod("a", "a", "dgx", []) | {"gpu": [0]}]}, "assignments[0].gpu", "unknown"),
        ({"jobs": [_job("a", 1, 1), _job("a", 1, 2)], "assignments": []}, "jobs", "unique"),
    ],
)
def test_malformed_plan_files_are_bad_input(gpusched, write, cluster, plan: dict, field: str, message: str) -> None:
    result = gpusched("validate", cluster, write("plan.json", json.dumps(plan)))
    assert result.exit_code == 2 and f"plan.json: {field}" in result.stderr and message in result.stderr, result.stderr
    assert result.stdout == ""


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["g-0", "g-1", "g-2", "g"]), max_size=3), st.booleans())
def test_a_gang_is_valid_exactly_when_each_of_its_pods_is_placed_once(names: list[str], listed: bool) -> None:
    """Pods named at random onto free GPUs: valid exactly when the names are the gang's pods, each once (or none,
    the gang then left out)."""
    from gpusched.planner.optimize.plan import PendingJob, PlannedPod, check_plan

    job = PendingJob("g", 2, 1, GpuNeeds())
    placed = [PlannedPod(pod=name, job="g", node="dgx", gpus=[i]) for i, name in enumerate(names[:2])]
    placed += [PlannedPod(pod=name, job="g", node="mig", gpus=[1]) for name in names[2:]]
    unplaced = ([] if placed else ["g"]) if listed else None
    found = check_plan(CLUSTER, [job], placed, unplaced)
    assert (not found) == (sorted(names) in ([], ["g-0", "g-1"])), found


def test_validate_prints_every_violation_with_its_kind(gpusched, write, cluster) -> None:
    plan = {"jobs": [_job("g", 2, 1)], "assignments": [_pod("g-0", "g", "dgx", [0]), _pod("g-0", "g", "ghost", [1])]}
    result = gpusched("validate", cluster, write("plan.json", plan))
    assert result.exit_code == 1 and result.lines == [
        "invalid: g-0: unknown node ghost (unknown)",
        "invalid: g-0: placed 2 times (gang)",
        "invalid: job g: 1 of 2 pods placed (gang)",
    ]


def test_a_planner_never_prints_a_plan_its_validator_refuses() -> None:
    from gpusched.planner.validate import require_valid

    require_valid("a plan", [])
    with pytest.raises(RuntimeError, match="internal error: a plan failed validation: n: cpu over allocatable"):
        require_valid("a plan", [Violation("capacity", "n: cpu over allocatable")])


# --- MIG plan files ----------------------------------------------------------------------------------------------


@pytest.fixture
def mig_plan(gpusched) -> dict:
    result = gpusched("mig", "plan", "monday", "--demand", "3g.40gb=2,1g.10gb=3", "--json")
    assert result.exit_code == 0
    return result.json()


def test_validate_checks_a_mig_plan(gpusched, write, mig_plan) -> None:
    assert gpusched("validate", "monday", write("mig.json", mig_plan)).lines == ["valid"]
    mig_plan["outcome"]["reconfigured"] = 0  # a plan that claims more than its layouts give
    claims = gpusched("validate", "monday", write("claims.json", mig_plan), "--json")
    assert claims.exit_code == 1 and [v["kind"] for v in claims.json()["violations"]] == ["claim"]
    mig_plan["outcome"]["reconfigured"] = 1
    mig_plan["changes"][0]["after"][-1]["start"] = 3  # 3g.40gb starts at 0 or 4 only
    moved = gpusched("validate", "monday", write("moved.json", mig_plan), "--json").json()["violations"]
    assert moved[0]["kind"] == "mig" and moved[0]["message"].startswith("dgx-a/0:")


def test_validate_refuses_a_malformed_mig_plan(gpusched, write, mig_plan) -> None:
    name = next(iter(mig_plan["mig_parted"]["mig-configs"]))
    mig_plan["mig_parted"]["mig-configs"][name][0]["devices"] = "all"
    result = gpusched("validate", "monday", write("mig.json", mig_plan))
    assert result.exit_code == 2 and "mig.json: mig_parted.mig-configs" in result.stderr, result.stderr
    mig_plan["colour"] = "red"
    result = gpusched("validate", "monday", write("mig.json", mig_plan))
    assert result.exit_code == 2 and "colour: unknown field" in result.stderr and "mig plan -o json" in result.stderr
