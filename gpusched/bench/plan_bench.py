"""How `plan` scales: generated clusters (half their GPUs busy) and generated backlogs of jobs."""

from __future__ import annotations

import time

from pydantic import BaseModel

from ..models.workload import Job
from ..planner.optimize.plan import pending_jobs, plan
from ..planner.optimize.solver import SolverConfig
from ..scenarios.synthetic import synthetic_cluster, synthetic_jobs

__all__ = ["PlanBench", "bench_plan"]


class PlanBench(BaseModel):
    nodes: int
    gpus: int
    busy_fraction: float
    jobs: int
    status: str
    seconds: float  # classes, patterns, model, solve, disaggregation, validation
    solve_seconds: float
    node_classes: int
    pod_shapes: int
    patterns: int
    jobs_placed: int


def bench_plan(
    nodes: int, jobs: int, busy: float = 0.5, seed: int = 42, time_limit: float = 60.0, domain_jobs: int = 0
) -> PlanBench:
    """`domain_jobs` adds that many 4x8-GPU jobs confined to one NVLink domain (each plain node is one)."""
    cluster = synthetic_cluster(nodes, seed, busy)
    confined = [
        Job(name=f"domain-{i}", pods=4, gpus_per_pod=8, duration=3600, nvlink_domain=True) for i in range(domain_jobs)
    ]
    backlog = pending_jobs([], [*synthetic_jobs(jobs, seed), *confined])
    began = time.perf_counter()
    report = plan(cluster, backlog, SolverConfig(time_limit=time_limit, seed=seed), heuristics=False)
    seconds = time.perf_counter() - began
    return PlanBench(
        nodes=nodes,
        gpus=sum(node.gpu.count for node in cluster.nodes if node.gpu),
        busy_fraction=busy,
        jobs=jobs + domain_jobs,
        status=report.solve.status,
        seconds=round(seconds, 3),
        solve_seconds=round(report.solve.seconds, 3),
        node_classes=report.node_classes,
        pod_shapes=report.pod_shapes,
        patterns=report.patterns,
        jobs_placed=report.metrics.jobs_placed,
    )
