"""How `plan` scales: generated clusters (half their GPUs busy) and generated backlogs of jobs.

`shapes` gives the backlog that many distinct pod shapes (GPUs, cpu and memory per pod), and `distinct_nodes`
gives every node a different allocatable cpu and memory (some too little for what its GPUs could take), as real
clusters have: the two things that once made the class model explode.
"""

from __future__ import annotations

import random
import time

from pydantic import BaseModel, Field

from ..models.cluster import Cluster
from ..models.workload import Job
from ..planner.optimize.plan import POLICIES, PendingJob, pending_jobs, plan
from ..planner.optimize.solver import SolverConfig, collector_paused
from ..scenarios.realistic import realistic_cluster, realistic_jobs
from ..scenarios.synthetic import synthetic_cluster, synthetic_jobs

__all__ = ["HeuristicRow", "PlanBench", "bench_plan"]


class HeuristicRow(BaseModel):
    policy: str  # gang mode: complete jobs only
    jobs_placed: int | None  # None: not run, out of time
    weighted_gpus: int | None
    seconds: float | None


class PlanBench(BaseModel):
    nodes: int
    gpus: int
    busy_fraction: float
    jobs: int
    distinct_nodes: bool = False
    realistic: bool = False
    status: str
    gap: float | None  # of the first objective level (priority-weighted GPUs); 0 when proven
    seconds: float  # heuristics, classes, patterns, model, solve, disaggregation, validation: plan's own accounting
    cpu_seconds: float  # the same, as processor time (user and system, every solver thread): what load does not stretch
    build_seconds: float  # heuristics (when run), classes, patterns, models: all but solves and extraction
    solve_seconds: float
    phases: dict[str, float] = Field(default_factory=dict)  # where the seconds went, as plan reports it
    time_limit: float
    node_classes: int
    binding_nodes: int  # nodes whose cpu or memory may run out: fitted pod by pod, rows in the full model
    pod_shapes: int
    gpu_shapes: int
    patterns: int
    jobs_placed: int
    weighted_gpus: int
    ran_out: list[str] = Field(default_factory=list)  # the phases the deadline stopped
    source: str  # which plan is the answer: "gpu view" (the first stage's), "full", or a heuristic's
    warm_start: str | None  # the heuristic the solve started from; None when the first stage needed none
    warm_start_jobs: int | None
    warm_start_weighted_gpus: int | None
    heuristics: list[HeuristicRow] = Field(
        default_factory=list
    )  # with compare: every gang-mode heuristic, run inside the time limit as `plan` runs them


def _shaped(jobs: list[Job], shapes: int, seed: int) -> list[Job]:
    """The jobs re-cut to `shapes` distinct pod shapes: GPUs per pod as generated, cpu and memory per pod drawn
    from `shapes` distinct pairs (1-8 cores and 8-64 GiB per GPU)."""
    rng = random.Random(seed)
    table = []
    for index in range(shapes):
        gpus = rng.choice((1, 1, 2, 4, 8))
        cpu = gpus * (1000 + (index * 7919) % 7000)  # distinct per index: 1-8 cores per GPU
        table.append((gpus, cpu, f"{gpus * 8 + index % 56 * gpus}Gi"))
    cut = []
    for job in jobs:
        gpus, cpu, memory = rng.choice(table)
        cut.append(
            job.model_copy(update={"gpus_per_pod": gpus, "nvlink": gpus > 1, "cpu": f"{cpu}m", "memory": memory})
        )
    return cut


def _distinct(cluster: Cluster, seed: int) -> Cluster:
    """Every node a different allocatable cpu (32-256 cores, as GPU servers have; no two alike) and memory
    (256 GiB-2 TiB): where a node has fewer cores than its free GPUs could ask for, cpu binds."""
    rng = random.Random(seed)
    nodes = []
    for index, node in enumerate(cluster.nodes):
        cpu = rng.randrange(32, 256) * 1000 + index % 1000
        memory = (rng.randrange(256, 2048) << 30) + (index << 20)
        nodes.append(node.model_copy(update={"cpu": f"{cpu}m", "memory": str(memory)}))
    return cluster.model_copy(update={"nodes": nodes})


def bench_plan(
    nodes: int,
    jobs: int,
    busy: float = 0.5,
    seed: int = 42,
    time_limit: float = 60.0,
    domain_jobs: int = 0,
    shapes: int | None = None,
    distinct_nodes: bool = False,
    compare: bool = False,
    realistic: bool = False,
) -> PlanBench:
    """`domain_jobs` adds that many 4x8-GPU jobs confined to one NVLink domain (each plain node is one);
    `compare` runs the plan as the `plan` command does, every heuristic inside the time limit (once each: the
    gang-mode ones are the warm start too), to show the plan is no worse than any. `realistic`: GPUs that
    differ (scenarios/realistic.py), the backlog over `shapes` GPU-visible shapes (300 unless given)."""
    with collector_paused():  # generating 10,000 nodes' models: see collector_paused
        if realistic:
            return _timed(
                realistic_cluster(nodes, seed, busy),
                pending_jobs([], realistic_jobs(jobs, seed, shapes or 300)),
                SolverConfig(time_limit=time_limit, seed=seed),
                compare,
                busy,
                distinct_nodes=False,
                realistic=True,
            )
        cluster = synthetic_cluster(nodes, seed, busy)
        if distinct_nodes:
            cluster = Cluster.model_validate(_distinct(cluster, seed).model_dump())
        confined = [
            Job(name=f"domain-{i}", pods=4, gpus_per_pod=8, duration=3600, nvlink_domain=True)
            for i in range(domain_jobs)
        ]
        generated = synthetic_jobs(jobs, seed)
        if shapes is not None:
            generated = _shaped(generated, shapes, seed)
        backlog = pending_jobs([], [*generated, *confined])
    return _timed(cluster, backlog, SolverConfig(time_limit=time_limit, seed=seed), compare, busy, distinct_nodes)


def _timed(
    cluster: Cluster,
    backlog: list[PendingJob],
    config: SolverConfig,
    compare: bool,
    busy: float,
    distinct_nodes: bool,
    realistic: bool = False,
) -> PlanBench:
    """One timed plan of the backlog, as a benchmark row (wall and processor time from the call)."""
    began, processor = time.perf_counter(), time.process_time()
    report = plan(cluster, backlog, config, heuristics=compare)
    seconds, cpu_seconds = time.perf_counter() - began, time.process_time() - processor
    start = report.warm_start
    ran = {h.policy: h for h in report.heuristics if h.mode == "gang"}
    skipped = {h.policy for h in report.not_run if h.mode == "gang"}
    rows = [
        HeuristicRow(policy=policy, jobs_placed=None, weighted_gpus=None, seconds=None)
        if policy not in ran
        else HeuristicRow(
            policy=policy,
            jobs_placed=ran[policy].metrics.jobs_placed,
            weighted_gpus=ran[policy].metrics.weighted_gpus,
            seconds=round(ran[policy].seconds, 3),
        )
        for policy in POLICIES
        if policy in ran or policy in skipped
    ]
    return PlanBench(
        nodes=len(cluster.nodes),
        gpus=sum(node.gpu.count for node in cluster.nodes if node.gpu),
        busy_fraction=busy,
        jobs=len(backlog),
        distinct_nodes=distinct_nodes,
        realistic=realistic,
        status=report.solve.status,
        gap=report.solve.levels[0].gap,
        seconds=round(seconds, 3),
        cpu_seconds=round(cpu_seconds, 3),
        build_seconds=round(report.build_seconds, 3),
        solve_seconds=round(report.solve.seconds, 3),
        phases={name: round(spent, 3) for name, spent in report.phases.items()},
        time_limit=config.time_limit,
        node_classes=report.node_classes,
        binding_nodes=report.binding_nodes,
        pod_shapes=report.pod_shapes,
        gpu_shapes=report.gpu_shapes,
        patterns=report.patterns,
        jobs_placed=report.metrics.jobs_placed,
        weighted_gpus=report.metrics.weighted_gpus,
        source=report.source,
        ran_out=report.ran_out,
        warm_start=None if start is None else f"{start.policy} ({start.mode})",
        warm_start_jobs=None if start is None else start.metrics.jobs_placed,
        warm_start_weighted_gpus=None if start is None else start.metrics.weighted_gpus,
        heuristics=rows,
    )
