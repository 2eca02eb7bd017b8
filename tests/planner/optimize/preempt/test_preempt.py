"""preempt: the seed's Medium exercise, hand-worked optima, budgets, bad input, and exhaustive-search properties."""

from __future__ import annotations

from itertools import combinations, product

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.cli.repair import render_solve
from gpusched.models.cluster import Cluster
from gpusched.models.workload import Job, Pod
from gpusched.planner.optimize.disrupt import problems, without
from gpusched.planner.optimize.preempt import preempt
from gpusched.planner.optimize.solver import LevelReport, SolverConfig, SolveReport
from gpusched.planner.scheduler.plugins.defaultpreemption import (
    Candidate,
    budget_split,
    pick,
    reprieve,
)
from gpusched.planner.validate import Assignment, violations

DGX = {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "islands": [list(range(8))]}


def _node(name: str, busy: dict[int, str], **gpu) -> dict:
    block = DGX | gpu | {"busy": [{"gpu": g, "pod": pod} for g, pod in busy.items()]}
    return {"name": name, "gpu": block}


def _cluster(nodes: list[dict], running: dict | None = None, budgets: list | None = None) -> Cluster:
    return Cluster.model_validate({"nodes": nodes, "running": running or {}, "disruption_budgets": budgets or []})


def _notebooks() -> tuple[list[dict], dict]:
    """Two DGX nodes, four priority-0 notebooks each, on every other GPU."""
    nodes = [
        _node("dgx-a", {g: f"nb-a{g}" for g in (0, 2, 4, 6)}),
        _node("dgx-b", {g: f"nb-b{g}" for g in (1, 3, 5, 7)}),
    ]
    running = {
        f"nb-{n}{g}": {"priority": 0, "labels": {"app": "notebook", "node": n}}
        for n, gpus in (("a", (0, 2, 4, 6)), ("b", (1, 3, 5, 7)))
        for g in gpus
    }
    return nodes, running


class TestMediumExercise:
    """The seed's Medium exercise, through the CLI."""

    def test_eight_gpu_training_pod_evicts_four_notebooks_from_one_dgx_node(self, gpusched):
        result = gpusched("preempt", "train-8", "-f", "preemption")
        assert result.exit_code == 0
        assert result.lines[1:6] == [
            "evict notebook-a0 on dgx-a (priority 0, 1 GPU)",
            "evict notebook-a1 on dgx-a (priority 0, 1 GPU)",
            "evict notebook-a2 on dgx-a (priority 0, 1 GPU)",
            "evict notebook-a3 on dgx-a (priority 0, 1 GPU)",
            "train-8 -> dgx-a nvidia.com/gpu GPUs [0, 1, 2, 3, 4, 5, 6, 7] islands [0]",
        ]
        assert "solver: OPTIMAL (proven): highest victim priority 0, victims' GPUs 4, victims 4" in result.lines
        report = gpusched("preempt", "train-8", "-f", "preemption", "--json").json()
        assert {v["node"] for v in report["victims"]} == {"dgx-a"}  # not one from each node
        assert report["cost"] == {"highest_priority": 0, "units": 4, "victims": 4, "budget_violations": 0}
        assert report["solve"]["status"] == "OPTIMAL" and all(level["gap"] == 0 for level in report["solve"]["levels"])

    def test_a_pod_whose_only_problem_is_gpu_memory_evicts_nothing_and_says_why(self, gpusched):
        result = gpusched("preempt", "big-model", "-f", "preemption")
        assert result.exit_code == 1
        assert result.lines[1] == (
            "no plan: big-model cannot run even with every evictable lower-priority pod gone: "
            "0/3 nodes are available: 3 GPU memory below 120 GiB."
        )
        report = gpusched("preempt", "big-model", "-f", "preemption", "--json").json()
        assert report["feasible"] is False and report["victims"] == [] and report["solve"] is None
        extended = report["comparison"][1]  # the integer view would schedule it, and it would not load
        assert extended["valid"] is False and "GPU memory 80 GiB below 120 GiB" in extended["problems"][0]["message"]

    def test_nvlink_pod_frees_a_whole_pair_where_the_integer_view_scatters_it(self, gpusched):
        report = gpusched("preempt", "pair-2", "-f", "preemption", "--json").json()
        assert [v["pod"] for v in report["victims"]] in (["svc-1"], ["svc-3"])  # the priority-10 services
        (placed,) = report["placements"]
        assert placed["node"] == "pcie-a" and len(placed["islands"]) == 1
        gpu_view, extended = report["comparison"]
        assert gpu_view["cost"] == report["cost"]
        assert extended["victims"] == [] and not extended["valid"]
        assert "NVLink required but the GPUs span islands" in extended["problems"][0]["message"]

    def test_a_gang_frees_both_nodes(self, gpusched):
        report = gpusched("preempt", "llm-2x8", "-f", "preemption", "--json").json()
        assert report["pending"]["kind"] == "job"
        assert sorted(p["pod"] for p in report["placements"]) == ["llm-2x8-0", "llm-2x8-1"]
        assert report["cost"]["victims"] == 8 and {p["node"] for p in report["placements"]} == {"dgx-a", "dgx-b"}


class TestHandWorked:
    def test_only_strictly_lower_priorities_go(self):
        nodes, running = _notebooks()
        report = preempt(_cluster(nodes, running), Pod(name="p", gpus=8, priority=0))
        assert not report.feasible and "cannot run even with every evictable lower-priority pod gone" in report.reason

    def test_lowest_highest_priority_beats_fewer_gpus(self):
        """Evicting two priority-1 pods (2 GPUs) beats one priority-5 pod (1 GPU)."""
        nodes = [
            _node("a", {0: "low-0", 1: "low-1"}, count=2, islands=[[0, 1]]),
            _node("b", {0: "high"}, count=1, islands=[]),
        ]
        running = {"low-0": {"priority": 1}, "low-1": {"priority": 1}, "high": {"priority": 5}}
        report = preempt(_cluster(nodes, running), Pod(name="p", gpus=1, priority=10))
        assert [v.pod for v in report.victims] == ["low-0"] and report.cost.highest_priority == 1
        report = preempt(_cluster(nodes, running), Pod(name="p", gpus=2, priority=10))
        assert sorted(v.pod for v in report.victims) == ["low-0", "low-1"]

    def test_fewer_gpus_then_fewer_victims(self):
        nodes = [
            _node("a", {0: "big", 1: "big"}, count=2, islands=[[0, 1]]),
            _node("b", {0: "s0", 1: "s1"}, count=2, islands=[[0, 1]]),
            _node("c", {0: "one"}, count=2, islands=[[0, 1]]),
        ]
        running = {name: {"priority": 0} for name in ("big", "s0", "s1", "one")}
        report = preempt(_cluster(nodes, running), Pod(name="p", gpus=2, priority=1))
        assert [v.pod for v in report.victims] == ["one"]  # 1 GPU, not 2

    def test_a_disruption_budget_moves_the_evictions_to_the_other_node(self):
        nodes, running = _notebooks()
        budget = [{"name": "a-notebooks", "selector": {"node": "a"}, "max_unavailable": 3}]
        report = preempt(_cluster(nodes, running, budget), Pod(name="p", gpus=8, nvlink=True, priority=10))
        assert {v.node for v in report.victims} == {"dgx-b"} and report.cost.budget_violations == 0

    def test_budgets_that_forbid_every_plan_are_infeasible_and_kube_would_break_them(self, gpusched, write):
        nodes, running = _notebooks()
        budget = [{"name": "notebooks", "selector": {"app": "notebook"}, "min_available": 5}]
        cluster = write("c.json", {"nodes": nodes, "running": running, "disruption_budgets": budget})
        pods = write("p.json", [{"name": "p", "gpus": 8, "nvlink": True, "priority": 10}])
        result = gpusched("preempt", "p", "-f", cluster, "--from", pods, "--json")
        assert result.exit_code == 1
        report = result.json()
        assert report["reason"] == "the evictions it needs would break disruption budgets: notebooks"
        kube = report["comparison"][0]
        assert kube["found"] and kube["cost"]["budget_violations"] == 1  # DefaultPreemption only prefers fewer

    def test_a_pod_that_fits_evicts_nothing(self, gpusched, write):
        cluster = write("c.json", {"nodes": [_node("a", {0: "x"})]})
        pods = write("p.json", {"pods": [{"name": "p", "gpus": 4, "priority": 1}]})
        result = gpusched("preempt", "p", "-f", cluster, "--from", pods)
        assert result.exit_code == 0 and "nothing to evict: it fits as the cluster is" in result.lines

    def test_another_node_already_over_its_cpu_is_not_the_plans_doing(self, gpusched, write):
        """A running pod asking 6 cpus on a 4-cpu node: the pod fits elsewhere, and nothing is evicted."""
        two = {"count": 2, "islands": [[0, 1]]}
        nodes = [_node("busy", {0: "hog"}, **two) | {"cpu": "4"}, _node("free", {}, **two) | {"cpu": "8"}]
        cluster = write("c.json", {"nodes": nodes, "running": {"hog": {"cpu": "6"}}})
        pods = write("p.json", {"pods": [{"name": "p", "gpus": 1, "cpu": "1", "priority": 1}]})
        result = gpusched("preempt", "p", "-f", cluster, "--from", pods, "--json")
        report = result.json()
        assert result.exit_code == 0 and report["feasible"] and report["victims"] == []
        assert [p["node"] for p in report["placements"]] == ["free"]

    def test_mig_pod_evicts_the_holder_of_its_profile(self):
        node = {
            "name": "m",
            "gpu": {
                "model": "A100-SXM4-80GB",
                "count": 1,
                "memory_gib": 80,
                "mig": [
                    {"gpu": 0, "profile": "3g.40gb", "start": 0, "holder": "low"},
                    {"gpu": 0, "profile": "3g.40gb", "start": 4, "holder": "high"},
                ],
            },
        }
        cluster = _cluster([node], {"low": {"priority": 1}, "high": {"priority": 9}})
        report = preempt(cluster, Pod(name="p", gpus=1, mig_profile="3g.40gb", priority=5))
        assert [v.pod for v in report.victims] == ["low"] and report.placements[0].mig == [(0, 0)]

    def test_a_job_from_a_jobs_file(self, gpusched, write):
        nodes, running = _notebooks()
        cluster = write("c.json", {"nodes": nodes, "running": running})
        jobs = write(
            "j.json", [{"name": "j", "pods": 2, "gpus_per_pod": 4, "nvlink": True, "priority": 3, "duration": 60}]
        )
        report = gpusched("preempt", "j", "-f", cluster, "--from", jobs, "--json").json()
        assert report["cost"]["victims"] == 0  # each node already has four free GPUs in its one island
        assert sorted(p["node"] for p in report["placements"]) == ["dgx-a", "dgx-b"]


class TestBadInput:
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                ("nope", "-f", "preemption"),
                "no pod or job named 'nope' (pods: train-8, pair-2, big-model; jobs: llm-2x8)",
            ),
            (("train-8", "-f", "preemption", "--time-limit", "0"), "--time-limit: must be more than 0 seconds, got 0"),
            (
                ("train-8", "-f", "preemption", "--time-limit", "-1"),
                "--time-limit: must be more than 0 seconds, got -1",
            ),
            (("train-8", "-f", "preemption", "--workers", "0"), "--workers: must be at least 1, got 0"),
            (("train-8", "-f", "preemption", "--from", "missing.yaml"), "missing.yaml: no such file"),
            (("train-8", "-f", "monday", "--from", "monday", "--json"), None),
        ],
    )
    def test_exit_2_with_one_message(self, gpusched, args, message):
        result = gpusched("preempt", *args)
        if message is None:  # the control: a well-formed request is not bad input
            assert result.exit_code in (0, 1)
            return
        assert result.exit_code == 2 and message in result.stderr and result.stdout == ""

    def test_a_running_pod_is_not_pending(self, gpusched, write):
        cluster = write("c.json", {"nodes": [_node("a", {0: "x"})]})
        pods = write("p.json", [{"name": "x", "gpus": 1}])
        result = gpusched("preempt", "x", "-f", cluster, "--from", pods)
        assert result.exit_code == 2 and "x: is already running on a" in result.stderr


class TestSolverReporting:
    def test_a_solve_not_proven_optimal_says_so_with_its_gap(self):
        from rich.console import Console

        level = LevelReport(
            name="moves", sense="minimize", status="FEASIBLE", objective=5, best_bound=4, gap=0.2, seconds=1
        )
        solve = SolveReport(status="FEASIBLE", levels=[level], seconds=1, time_limit=1, workers=2, seed=0)
        console = Console(record=True, width=200)
        render_solve(console, solve, "moves 5")
        text = console.export_text()
        assert "OPTIMAL" not in text
        assert "solver: FEASIBLE, not proven optimal: moves 5" in text and "bound 4, gap 20.0%" in text

    def test_a_time_limit_too_short_for_any_plan_is_exit_1(self, gpusched):
        from gpusched.bench.repair import busy_cluster

        cluster = busy_cluster(300, fill=1.3)
        report = preempt(
            cluster, Job(name="j", pods=16, gpus_per_pod=1, priority=100, duration=1), SolverConfig(time_limit=0.001)
        )
        if report.solve is None or report.solve.status == "UNKNOWN":  # None: the deadline stopped the model
            assert not report.feasible and "no plan found within the time limit" in report.reason
            return
        assert report.solve.optimal == all(level.status == "OPTIMAL" for level in report.solve.levels)


# --- DefaultPreemption's shared rules ------------------------------------------------------------------------------


class _V:
    def __init__(self, name: str, priority: int) -> None:
        self.name, self.priority, self.start_time = name, priority, None


def test_budget_violating_pods_are_reprieved_first():
    pods = [_V("a", 5), _V("b", 1), _V("c", 1)]
    violating, fine = budget_split(pods, [1], lambda i, v: v.name in ("a", "b"))
    assert [v.name for v in violating] == ["b"] and [v.name for v in fine] == ["a", "c"]
    victims = reprieve(violating, fine, lambda gone: len(gone) >= 1)  # any one eviction is enough
    assert [v.name for v in victims] == ["c"]


def test_pick_prefers_fewer_budget_violations_then_the_lowest_top_victim():
    low, high = _V("low", 1), _V("high", 9)
    assert pick([Candidate("n1", (low,), 1), Candidate("n2", (high,), 0)]).node == "n2"
    assert pick([Candidate("n1", (high,)), Candidate("n2", (low,))]).node == "n2"


# --- properties against exhaustive search ------------------------------------------------------------------------


@st.composite
def small_cases(draw):
    nodes, running = [], {}
    for n in range(draw(st.integers(1, 2))):
        count = draw(st.integers(2, 4))
        split = draw(st.integers(1, count))
        islands = [list(range(split)), list(range(split, count))] if split < count else [list(range(count))]
        free = list(range(count))
        busy = {}
        for p in range(draw(st.integers(0, 3))):
            size = draw(st.integers(1, 2))
            if len(free) < size:
                break
            name = f"r{n}{p}"
            for g in free[:size]:
                busy[g] = name
            free = free[size:]
            running[name] = {
                "priority": draw(st.integers(0, 3)),
                "labels": {"team": draw(st.sampled_from("ab"))},
                "cpu": draw(st.integers(0, 3)),  # may run a node over its allocatable before any plan
            }
        node = _node(f"n{n}", busy, count=count, islands=[i for i in islands if i])
        cpu = draw(st.sampled_from([None, 2, 4]))
        nodes.append(node if cpu is None else node | {"cpu": cpu})
    budgets = (
        [{"name": "b", "selector": {"team": "a"}, "max_unavailable": draw(st.integers(0, 2))}]
        if draw(st.booleans())
        else []
    )
    cluster = _cluster(nodes, running, budgets)
    gpus, nvlink, priority = draw(st.integers(1, 3)), draw(st.booleans()), draw(st.integers(1, 4))
    cpu = draw(st.integers(0, 2))
    if draw(st.booleans()):
        item = Pod(name="p", gpus=gpus, nvlink=nvlink, priority=priority, cpu=cpu)
    else:
        item = Job(
            name="p",
            pods=2,
            gpus_per_pod=draw(st.integers(1, 2)),
            nvlink=nvlink,
            priority=priority,
            duration=1,
            cpu=cpu,
        )
    return cluster, item


def _fits(cluster: Cluster, item) -> bool:
    """Brute force: every combination of GPUs for every pod, judged by the validator alone."""
    pods, gpus = (item.pods, item.gpus_per_pod) if isinstance(item, Job) else (1, item.gpus)
    spots = [(node.name, combo) for node in cluster.nodes for combo in combinations(range(node.gpu.count), gpus)]
    return any(
        not violations(cluster, [Assignment(f"p{i}", item, n, c) for i, (n, c) in enumerate(choice)])
        for choice in product(spots, repeat=pods)
    )


def _exhaustive(cluster: Cluster, item) -> tuple | None:
    """The lexicographically best eviction set by trying every subset of lower-priority pods."""
    allowed = {b.name: b.max_unavailable for b in cluster.disruption_budgets}
    lower = [p for p in cluster.running_pods() if p.needs.priority < item.priority]
    best = None
    for size in range(len(lower) + 1):
        for gone in combinations(lower, size):
            if "b" in allowed and sum(p.needs.labels["team"] == "a" for p in gone) > allowed["b"]:
                continue
            key = (max((p.needs.priority for p in gone), default=-1), sum(len(p.gpus) for p in gone), len(gone))
            if (best is None or key < best) and _fits(without(cluster, [p.name for p in gone]), item):
                best = key
    return best


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases())
def test_optimum_equals_exhaustive_search_is_valid_and_never_worse_than_default_preemption(case):
    cluster, item = case
    report = preempt(cluster, item, SolverConfig(workers=1))
    expected = _exhaustive(cluster, item)
    if expected is None:
        assert not report.feasible
        return
    assert report.feasible and report.solve.optimal
    cost = report.cost
    assert (-1 if cost.highest_priority is None else cost.highest_priority, cost.units, cost.victims) == expected
    placed = [Assignment(p.pod, item, p.node, tuple(p.gpus), tuple(p.mig)) for p in report.placements]
    assert problems(cluster, [v.pod for v in report.victims], placed) == []
    for kube in report.comparison:
        if kube.valid and kube.cost.budget_violations == 0:
            theirs = (
                -1 if kube.cost.highest_priority is None else kube.cost.highest_priority,
                kube.cost.units,
                kube.cost.victims,
            )
            assert expected <= theirs


def test_a_file_with_both_pods_and_jobs(gpusched, write):
    nodes, running = _notebooks()
    cluster = write("c.json", {"nodes": nodes, "running": running})
    both = write(
        "w.json",
        {
            "pods": [{"name": "p", "gpus": 8, "priority": 5}],
            "jobs": [{"name": "j", "pods": 1, "gpus_per_pod": 1, "duration": 1}],
        },
    )
    assert gpusched("preempt", "p", "-f", cluster, "--from", both, "--json").json()["cost"]["victims"] == 4
    result = gpusched("preempt", "p", "-f", cluster, "--from", write("x.json", {"pod": []}))
    assert result.exit_code == 2 and "expected `pods` and/or `jobs` lists" in result.stderr
