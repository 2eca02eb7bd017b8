"""One deadline per command: every planner keeps it, and answers with its floor when it has passed. The
deadlines here have passed before the planner starts (deterministic: no clock is raced)."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.models.workload import Job
from gpusched.planner.deadline import Deadline, OutOfTime
from gpusched.planner.optimize.defrag import defrag, parse_shape
from gpusched.planner.optimize.mig import plan_mig
from gpusched.planner.optimize.plan import check_plan, pending_jobs, plan
from gpusched.planner.optimize.preempt import preempt
from gpusched.planner.optimize.solver import SolverConfig
from gpusched.scenarios.realistic import realistic_cluster, realistic_jobs, realistic_mig_cluster


def _expired(limit: float = 1.0) -> Deadline:
    return Deadline.start(limit, time.perf_counter() - 60)


def test_a_deadline_counts_down_notes_what_ran_out_and_stops_a_phase():
    deadline = _expired()
    assert deadline.passed() and deadline.left() == 0.0 and deadline.solve_seconds() > 0
    try:
        deadline.check("model")
    except OutOfTime as error:
        assert error.phase == "model"
    else:
        raise AssertionError("an expired deadline let the phase run")
    deadline.note("model")
    assert deadline.ran_out == ["model"]
    fresh = Deadline.start(60)
    fresh.check("model")
    assert not fresh.passed() and 59 < fresh.left() <= 60 and fresh.ran_out == []


def test_plan_past_its_deadline_answers_with_the_heuristic_floor_and_names_what_ran_out():
    """The first gang-mode heuristic always runs (its FIRST grace: milliseconds here), the model's build, whose
    grace the heuristic spent, stops at once: the answer is the heuristic's plan, FEASIBLE, its gap measured
    from the whole backlog, 'model' named."""
    cluster = realistic_cluster(20, seed=4)
    jobs = pending_jobs([], realistic_jobs(12, seed=4, shapes=10))
    report = plan(cluster, jobs, SolverConfig(time_limit=1), deadline=_expired())
    assert report.ran_out and report.ran_out[0].startswith("model")
    best = max((h for h in report.heuristics if h.mode == "gang"), key=lambda h: h.metrics.weighted_gpus)
    assert report.source == f"{best.policy} (gang)" and report.metrics.weighted_gpus == best.metrics.weighted_gpus
    assert report.solve.status == "FEASIBLE" and report.solve.levels[0].best_bound is not None
    assert report.metrics.jobs_placed > 0


def test_mig_plan_past_its_deadline_answers_with_first_fit():
    cluster = realistic_mig_cluster(400, seed=6)
    free = sum(1 for node in cluster.nodes for m in node.gpu.mig if m.holder is None)  # type: ignore[union-attr]
    demand = {"1g.10gb": free, "3g.40gb": 20}
    result = plan_mig(cluster, demand, SolverConfig(time_limit=0.01), deadline=_expired(0.01))
    first_fit = next(row.outcome for row in result.comparison if row.plan == "first-fit")
    assert result.outcome.served == first_fit.served or _served(result) >= _served_of(first_fit)
    assert result.outcome.reconfigured <= first_fit.reconfigured or _served(result) > _served_of(first_fit)
    assert result.solve.status in ("FEASIBLE", "OPTIMAL")


def _served(result) -> int:
    return _served_of(result.outcome)


def _served_of(outcome) -> int:
    return sum(outcome.served.values())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([0.05, 2.0]))
def test_the_answer_is_never_worse_than_a_heuristic_it_prints(seed, limit):
    """On realistic clusters (MIG nodes of both strategies among them), with time or without: no heuristic
    printed beside the answer beats it."""
    cluster = realistic_cluster(40, seed)
    jobs = pending_jobs([], realistic_jobs(40, seed, shapes=30))
    report = plan(cluster, jobs, SolverConfig(time_limit=limit))
    for heuristic in report.heuristics:
        if heuristic.mode == "gang":
            assert (report.metrics.weighted_gpus, report.metrics.jobs_placed) >= (
                heuristic.metrics.weighted_gpus,
                heuristic.metrics.jobs_placed,
            ) or report.metrics.weighted_gpus > heuristic.metrics.weighted_gpus


def test_plan_on_realistic_mig_nodes_gives_mig_pods_their_instances():
    """Found by the property above: a MIG pod given two instances of one GPU had that GPU named once, not once
    per instance, and the plan failed its own validation (exit 3)."""
    cluster = realistic_cluster(40, 512)
    jobs = pending_jobs([], realistic_jobs(40, 512, shapes=30))
    report = plan(cluster, jobs, SolverConfig(time_limit=2), heuristics=False)
    assert check_plan(cluster, jobs, report.assignments, report.unplaced) == []
    mig = [a for a in report.assignments if a.mig]
    assert mig and all(a.gpus == [gpu for gpu, _ in a.mig] for a in mig)
    assert any(len(set(a.gpus)) < len(a.gpus) for a in mig)  # the case that failed: two instances of one GPU


def test_defrag_past_its_deadline_names_what_ran_out_and_the_descheduler_floor():
    cluster = realistic_cluster(60, seed=8)
    report = defrag(cluster, parse_shape("8x2@island"), None, SolverConfig(time_limit=1), deadline=_expired())
    assert not report.feasible and report.reason is not None
    assert "not proven impossible either); out of time: model; the descheduler" in report.reason
    assert report.comparison and report.comparison[0].name.startswith("descheduler")


def test_preempt_past_its_deadline_names_what_ran_out_beside_default_preemption():
    cluster = realistic_cluster(60, seed=9)
    job = Job(name="llm", pods=2, gpus_per_pod=8, nvlink=True, priority=100, duration=3600)
    report = preempt(cluster, job, SolverConfig(time_limit=1), deadline=_expired())
    assert not report.feasible and report.reason is not None and report.reason.endswith("out of time: model")
    assert len(report.comparison) == 2  # DefaultPreemption in both views: the floor, printed beside


def test_a_heuristic_cut_at_the_deadline_is_still_a_plan_and_the_floor(monkeypatch):
    """The first gang-mode heuristic stopped at its deadline keeps the jobs it placed whole: with no time at
    all that is none, named as cut, and still the answer (validated) rather than no answer."""
    import gpusched.planner.optimize.plan as planning
    from gpusched.planner.optimize.plan.baselines import greedy_cut, greedy_plan

    cluster = realistic_cluster(20, seed=4)
    jobs = pending_jobs([], realistic_jobs(12, seed=4, shapes=10))
    metrics, pods, finished = greedy_cut(cluster, jobs, "binpack", "gang", (1, 8), time.perf_counter() - 1)
    assert not finished and metrics.jobs_placed == 0 and pods == []
    whole = greedy_plan(cluster, jobs, "binpack", "gang", (1, 8))
    assert whole is not None and greedy_cut(cluster, jobs, "binpack", "gang", (1, 8))[:2] == whole
    monkeypatch.setattr(planning, "FIRST", 0.0)
    report = plan(cluster, jobs, SolverConfig(time_limit=1), deadline=_expired())
    assert report.source.startswith("binpack (gang), cut at the deadline after 0 jobs placed")
    assert report.metrics.jobs_placed == 0 and report.ran_out[0] == "model"
