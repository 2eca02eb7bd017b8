"""`plan` inside its time limit: every phase, the heuristics included, accounted for; a heuristic out of time is
named, never dropped. The accounting is the report's own (no timed assertions on the test's clock)."""

from __future__ import annotations

import gc
import itertools
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

import gpusched.planner.optimize.plan as planning
from gpusched.models.cluster import Cluster
from gpusched.models.workload import Pod
from gpusched.planner.frag import fragmentation, stranded
from gpusched.planner.optimize.plan import POLICIES, Metrics, PlannedPod, pending_jobs, plan
from gpusched.planner.optimize.plan.baselines import greedy_plan
from gpusched.planner.optimize.solver import LevelReport, SolverConfig, SolveReport, collector_paused
from gpusched.planner.state import ClusterState
from gpusched.scenarios.synthetic import synthetic_cluster, synthetic_jobs

EVERY = {(policy, mode) for policy, mode in itertools.product(POLICIES, ("pod", "gang"))}


def _accounted(report: dict) -> None:
    """Each of the six heuristics is a row or named as not run; the phases are the report's whole time."""
    rows = {(h["policy"], h["mode"]) for h in report["heuristics"]}
    skipped = {(h["policy"], h["mode"]) for h in report["not_run"]}
    assert rows | skipped == EVERY and not rows & skipped
    assert all(h["reason"] == "out of time" for h in report["not_run"])
    assert set(report["phases"]) == {"input", "heuristics", "model", "solve", "check"}
    assert sum(report["phases"].values()) <= report["seconds"] + 1e-3
    assert report["solve"]["seconds"] == report["phases"]["solve"]
    assert all(report["metrics"]["weighted_gpus"] >= h["metrics"]["weighted_gpus"] for h in report["heuristics"])


def test_a_thousands_of_nodes_plan_keeps_its_one_second_by_its_own_accounting(gpusched, write):
    """The whole command, reading the input included, within the limit and the second it may run over."""
    with collector_paused():
        cluster = synthetic_cluster(2000, 7, 0.5)
    jobs = [job.model_dump(exclude_defaults=True) for job in synthetic_jobs(500, 7)]
    cluster_file = write("cluster.json", cluster.model_dump_json(exclude_defaults=True))
    jobs_file = write("jobs.json", {"jobs": jobs})
    result = gpusched("plan", cluster_file, "--pending", jobs_file, "--time-limit", "1", "--json")
    assert result.exit_code in (0, 1)
    report = result.json()
    _accounted(report)
    assert report["phases"]["input"] > 0 and report["seconds"] <= 1 + 1
    assert report["solve"]["status"] in ("OPTIMAL", "FEASIBLE")
    plan_file = write("plan.json", result.stdout)
    assert gpusched("validate", cluster_file, plan_file).lines == ["valid"]


def test_heuristics_out_of_time_are_named(gpusched):
    """At 0.01 s the first gang-mode heuristic still runs (the floor), the solve's least time spends the rest: the
    pod-mode ones are said not to have run, in the table's place."""
    report = gpusched("plan", "monday", "--time-limit", "0.01", "--json").json()
    _accounted(report)
    assert ("binpack", "gang") in {(h["policy"], h["mode"]) for h in report["heuristics"]}
    assert {(h["policy"], h["mode"]) for h in report["not_run"]} >= {(policy, "pod") for policy in POLICIES}
    text = gpusched("plan", "monday", "--time-limit", "0.01").lines
    not_run = [line for line in text if line.startswith("not run: ")]
    assert len(not_run) == 1 and not_run[0].endswith(": out of time") and "binpack (pod)" in not_run[0]
    assert text[-1].startswith("time: ") and " of 0.01 s (input " in text[-1]


def test_with_time_every_heuristic_runs_once_inside_the_limit(gpusched):
    report = gpusched("plan", "backlog", "--json").json()
    _accounted(report)
    assert report["not_run"] == [] and len(report["heuristics"]) == 6
    assert report["phases"]["heuristics"] >= sum(h["seconds"] for h in report["heuristics"])
    start = report["warm_start"]
    best = max((h for h in report["heuristics"] if h["mode"] == "gang"), key=lambda h: h["metrics"]["weighted_gpus"])
    assert start["metrics"] == best["metrics"]


def test_a_heuristic_that_would_end_past_its_deadline_gives_no_result():
    cluster = Cluster.model_validate(
        {"nodes": [{"name": "n", "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80}}]}
    )
    jobs = pending_jobs([Pod(name=f"p{i}", gpus=1) for i in range(4)], [])
    assert greedy_plan(cluster, jobs, "binpack", "gang", (1, 8), deadline=time.perf_counter() - 1) is None
    found = greedy_plan(cluster, jobs, "binpack", "gang", (1, 8), deadline=time.perf_counter() + 60)
    assert found is not None and found[0].jobs_placed == 4


def test_plan_pauses_the_collector_and_gives_it_back():
    cluster = Cluster.model_validate(
        {"nodes": [{"name": "n", "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80}}]}
    )
    assert gc.isenabled()
    plan(cluster, pending_jobs([Pod(name="p", gpus=2)], []), SolverConfig(time_limit=5))
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("out")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_bench_plan_compare_counts_the_heuristics_inside_the_limit(gpusched):
    report = gpusched(
        "bench", "plan", "--nodes", "200", "--jobs", "100", "--time-limit", "0.3", "--compare", "--json"
    ).json()
    assert set(report["phases"]) == {"input", "heuristics", "model", "solve", "check"}
    assert sum(report["phases"].values()) <= report["seconds"] + 1e-3
    assert [row["policy"] for row in report["heuristics"]] == list(POLICIES)  # run or not, each named
    assert all(
        (row["seconds"] is None) == (row["weighted_gpus"] is None) == (row["jobs_placed"] is None)
        for row in report["heuristics"]
    )
    assert json.dumps(report)  # the report is plain JSON


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 60), st.integers(0, 10_000), st.floats(0.0, 1.0))
def test_the_stranded_gpus_alone_are_the_fragmentation_reports(nodes, seed, busy):
    """frag.stranded, which plan's metrics use, counts what fragmentation's rows count, on any generated cluster."""
    state = ClusterState.from_cluster(synthetic_cluster(nodes, seed, busy))
    sizes = (1, 2, 3, 4, 8)
    assert stranded(state, sizes) == {row.size: row.stranded for row in fragmentation(state, sizes).rows}


def _unknown(model, levels, config):
    """A solve that found no solution in its time."""
    name, sense, _ = levels[0]
    level = LevelReport(name=name, sense=sense, status="UNKNOWN", objective=None, best_bound=None, gap=None, seconds=0)
    return cp_model.CpSolver(), SolveReport(
        status="UNKNOWN", levels=[level], seconds=0, time_limit=config.time_limit, workers=1, seed=0
    )


def test_when_neither_a_heuristic_nor_the_solve_ends_in_time_the_cut_heuristic_is_the_plan(monkeypatch):
    """The one plan always at hand: a cluster too large for any heuristic to finish (the first one cut before
    its first job), a solve that found no solution in its time (both stood in for here: neither happens on a
    test-sized input)."""
    monkeypatch.setattr(planning, "solve_lexicographic", _unknown)
    monkeypatch.setattr(planning, "greedy_plan", lambda *args: None)
    nothing = Metrics(weighted_gpus=0, gpus_placed=0, jobs_placed=0, stranded={1: 0, 2: 0, 4: 0, 8: 0})
    monkeypatch.setattr(planning, "greedy_cut", lambda *args: (nothing, [], False))
    cluster = Cluster.model_validate(
        {"nodes": [{"name": "n", "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80}}]}
    )
    report = plan(cluster, pending_jobs([Pod(name="a", gpus=2), Pod(name="b", gpus=4)], []))
    assert report.assignments == [] and report.unplaced == ["a", "b"]
    assert report.source == "binpack (gang), cut at the deadline after 0 jobs placed" and report.warm_start is None
    first = report.solve.levels[0]
    assert report.solve.status == "FEASIBLE" and first.objective == 0 and first.best_bound == 6
    assert {(h.policy, h.mode) for h in report.not_run} == EVERY and report.heuristics == []


def test_a_heuristics_plan_is_validated_before_it_is_the_answer(monkeypatch):
    """A heuristic's plan that wins (the solve found none) is checked like any other: one on a node the cluster
    does not have is a bug, raised, never printed."""
    monkeypatch.setattr(planning, "solve_lexicographic", _unknown)
    bogus = [PlannedPod(pod="a", job="a", node="elsewhere", gpus=[0, 1])]
    metrics = Metrics(weighted_gpus=2, gpus_placed=2, jobs_placed=1, stranded={1: 0, 2: 0})
    monkeypatch.setattr(planning, "greedy_plan", lambda *args: (metrics, bogus))
    monkeypatch.setattr(planning, "greedy_cut", lambda *args: (metrics, bogus, True))
    monkeypatch.setattr(planning, "hint", lambda *args: False)  # a plan off the cluster cannot be hinted
    cluster = Cluster.model_validate(
        {"nodes": [{"name": "n", "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80}}]}
    )
    with pytest.raises(RuntimeError, match="failed validation: a: unknown node elsewhere"):
        plan(cluster, pending_jobs([Pod(name="a", gpus=2)], []))
