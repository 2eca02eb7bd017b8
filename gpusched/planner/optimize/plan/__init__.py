"""`plan`: the best placement of a batch of pending pods and gangs onto the cluster as it is (busy GPUs stay).

build (model.py) → solve → extract (extract.py) → validate (validate.py). A job is all of its pods or none; a pod
of a pods file is a job of one. The model counts, per node class, how many nodes take each pattern (classes.py);
the plan is then disaggregated to concrete GPUs and checked by the independent validator, and compared with
kube-scheduler-style placement under each policy (baselines.py).
"""

from __future__ import annotations

import time

from ....models.cluster import Cluster
from ...state import ClusterState, NodeState
from ..classes import NodeClass, node_classes
from ..solver import LevelReport, SolverConfig, SolveReport, solve_lexicographic
from .baselines import greedy, greedy_plan
from .extract import extract, plan_metrics
from .model import binding_nodes, build, hint, job_types
from .report import (
    HeuristicResult,
    Metrics,
    PendingJob,
    PlanJob,
    PlannedPod,
    PlanReport,
    WarmStart,
    pending_jobs,
    weight_of,
)
from .validate import check_plan

__all__ = [
    "HeuristicResult",
    "Metrics",
    "PendingJob",
    "PlanJob",
    "PlanReport",
    "PlannedPod",
    "WarmStart",
    "check_plan",
    "greedy",
    "pending_jobs",
    "plan",
    "weight_of",
]


def _units(node: NodeState) -> int:
    """Every GPU unit the node has, free or not: replicas of whole GPUs and MIG instances."""
    return sum(len(gpu.mig) if gpu.mig else gpu.replicas for gpu in node.gpus)


def _by_domain(
    classes: list[NodeClass], domain_of: dict[str, str], racks: set[str], smallest: int
) -> tuple[list[NodeClass], list[str | None]]:
    """Split classes so that each lies in one NVLink domain. A node in no rack-scale domain is a domain of its own,
    so a class of its own, but only if it could hold a whole confined job (`smallest` units); the others stay
    aggregated, untagged, and no confined job may use them."""
    split: dict[tuple, NodeClass] = {}
    for c in classes:
        for node in c.nodes:
            tag = domain_of.get(node.name)
            if node.name not in racks and _units(node) < smallest:
                tag = None
            split.setdefault((c.key, tag), NodeClass(c.key + (tag,))).nodes.append(node)
    return list(split.values()), [tag for _, tag in split]


POLICIES = ("binpack", "spread", "topology")  # the heuristics plan is compared with, and starts from


def _warm_start(
    cluster: Cluster, jobs: list[PendingJob], sizes: tuple[int, ...], budget: float | None
) -> tuple[list[HeuristicResult], list[PlannedPod]]:
    """The gang-mode heuristics (complete jobs only, so each is a feasible plan), and the best one's pods. With a
    `budget` (seconds) the ones after the first run only while it lasts; None runs them all."""
    found: list[tuple[HeuristicResult, list[PlannedPod]]] = []
    began = time.perf_counter()
    for policy in POLICIES:
        if found and budget is not None and time.perf_counter() - began > budget:
            break
        metrics, pods = greedy_plan(cluster, jobs, policy, "gang", sizes)
        found.append((HeuristicResult(policy=policy, mode="gang", metrics=metrics), pods))
    best = max(found, key=lambda item: _rank(item[0].metrics))
    return [result for result, _ in found], [*best[1]]


def _rank(metrics: Metrics) -> tuple[int, int]:
    """The first two objective levels, which decide whether one plan beats another."""
    return metrics.weighted_gpus, metrics.jobs_placed


def _fallback(report: SolveReport, best: HeuristicResult) -> SolveReport:
    """The report when the solve found nothing better than the heuristic it started from, whose plan is then the
    answer: FEASIBLE, the heuristic's values, the solver's bound on the first level where it has one."""
    first = report.levels[0] if report.levels else None
    objective = float(best.metrics.weighted_gpus)
    bound = first.best_bound if first is not None else None
    if bound is not None and bound < objective:
        bound = None  # not an upper bound: the search stopped before it proved one
    level = LevelReport(
        name=first.name if first is not None else "priority-weighted GPUs placed",
        sense="maximize",
        status="FEASIBLE",
        objective=objective,
        best_bound=bound,
        gap=None if bound is None else abs(bound - objective) / max(1.0, objective),
        seconds=first.seconds if first is not None else 0.0,
    )
    return report.model_copy(update={"status": "FEASIBLE", "levels": [level]})


def plan(
    cluster: Cluster,
    jobs: list[PendingJob],
    config: SolverConfig | None = None,
    sizes: tuple[int, ...] = (1, 2, 4, 8),
    heuristics: bool = True,
) -> PlanReport:
    """The optimal plan for the batch, validated, beside kube-scheduler-style placement under each policy.

    The solve starts from the best gang-mode heuristic (hinted, and its objective a floor), so the plan is never
    worse than it; the time limit covers building the model and the heuristics too."""
    config = config or SolverConfig()
    began = time.perf_counter()
    largest = max((job.gpus for job in jobs if not job.needs.mig_profile and not job.needs.shared), default=1) or 1
    all_sizes = tuple(sorted(set(sizes) | {largest}))
    gang, start = _warm_start(cluster, jobs, all_sizes, None if heuristics else config.time_limit / 4)
    best = max(gang, key=lambda h: _rank(h.metrics))
    state = ClusterState.from_cluster(cluster)
    binding = binding_nodes(state.nodes, jobs)
    classes = node_classes(state.nodes, frozenset(key for job in jobs for key in job.needs.node_selector), binding)
    tags: list[str | None] = [None] * len(classes)
    confined = [job.pods * job.gpus for job in jobs if job.confined]
    if confined:
        racks = {name for domain in cluster.nvlink_domains for name in domain.nodes}
        classes, tags = _by_domain(classes, cluster.domain_of(), racks, min(confined))
    types = job_types(jobs, classes, tags, binding)
    built, levels = build(classes, types, largest, tags, binding)
    hinted = hint(built, classes, types, start)
    built.model.add(levels[0][2] >= best.metrics.weighted_gpus)  # the heuristic's plan is feasible: a valid floor
    built_seconds = time.perf_counter() - began
    left = config.model_copy(update={"time_limit": max(config.time_limit - built_seconds, 0.05)})
    solver, report = solve_lexicographic(built.model, levels, left)
    report = report.model_copy(update={"time_limit": config.time_limit})
    assignments: list[PlannedPod] = []
    unplaced = [job.name for job in jobs]
    if report.levels[0].objective is not None:
        assignments, unplaced = extract(solver, built, classes, types)
        problems = check_plan(cluster, jobs, assignments)
        if problems:
            raise RuntimeError("internal error: the optimal plan failed validation: " + "; ".join(problems[:5]))
    metrics = plan_metrics(cluster, jobs, assignments, all_sizes)
    if report.levels[0].objective is None or _rank(metrics) < _rank(best.metrics):
        report = _fallback(report, best)  # the solve, out of time, has nothing better than where it started
        assignments = start
        placed = {a.job for a in start}
        unplaced = [job.name for job in jobs if job.name not in placed]
        metrics = best.metrics.model_copy(update={"islands_split": sum(a.split for a in start)})
    by_policy = {h.policy: h for h in gang}
    compared = (
        [
            result
            for policy in POLICIES
            for result in (
                HeuristicResult(policy=policy, mode="pod", metrics=greedy(cluster, jobs, policy, "pod", all_sizes)),
                by_policy[policy],
            )
        ]
        if heuristics
        else []
    )
    return PlanReport(
        jobs=[PlanJob.of(job) for job in jobs],
        solve=report,
        largest_size=largest,
        node_classes=len(classes),
        pod_shapes=len({t.shape for t in types}),
        gpu_shapes=len({t.shape.gpu_view for t in types}),
        binding_nodes=len(binding),
        patterns=sum(len(found) for found in built.class_patterns),
        build_seconds=built_seconds,
        warm_start=WarmStart(policy=best.policy, mode=best.mode, hinted=hinted, metrics=best.metrics),
        assignments=assignments,
        unplaced=unplaced,
        metrics=metrics,
        heuristics=compared,
    )
