"""`bench synthetic`: batch placement on generated clusters of any size, every heuristic against the CP-SAT optimum.

Per cluster size: a generated cluster (a share of its GPUs busy) and a generated backlog (notebooks, inference,
training gangs, MIG slices); `plan` proves the optimum, `greedy` runs binpack, spread and topology in pod mode
(partial gangs keep their GPUs) and gang mode (all or nothing). GPUs placed count complete jobs only.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from pydantic import BaseModel, Field

from ..files import make_folder
from ..planner.frag import DEFAULT_SIZES
from ..planner.optimize.plan import greedy, pending_jobs, plan
from ..planner.optimize.solver import SolverConfig
from ..planner.ranking import RANKINGS
from ..scenarios.synthetic import synthetic_cluster, synthetic_workload
from .fanout import executor_name, fan_out
from .openb_bench import write_plot_and_document

__all__ = ["HeuristicRow", "SyntheticBench", "SyntheticRow", "SyntheticSpec", "bench_synthetic", "write_synthetic"]

MODES = ("pod", "gang")


class SyntheticSpec(BaseModel):
    nodes: int
    jobs: int
    busy: float
    mix: dict[str, float]
    seed: int
    time_limit: float


class HeuristicRow(BaseModel):
    name: str  # policy/mode
    weighted_gpus: int = Field(description="priority-weighted GPUs placed: what the optimum maximises first")
    gpus_placed: int
    gpus_placed_pct: float = Field(description="% of the optimum's GPUs placed")
    to_upper_pct: float | None = Field(description="how far below the upper bound on the weighted GPUs, % of the bound")
    jobs_placed: int
    gpus_held_by_partial_jobs: int
    stranded: dict[int, int]
    seconds: float


class OptimumRow(BaseModel):
    weighted_gpus: int
    gpus_placed: int
    jobs_placed: int
    stranded: dict[int, int]


class SyntheticRow(BaseModel):
    nodes: int
    gpus: int
    jobs: int
    status: str = Field(description="CP-SAT: OPTIMAL when proven")
    optimum: OptimumRow
    upper_weighted_gpus: float | None = Field(
        description="CP-SAT's proven bound on the priority-weighted GPUs placed (None: no bound known)"
    )
    gap_pct: float | None = Field(
        description="bound minus the validated plan's weighted GPUs, % of the bound: 0 if proven"
    )
    optimum_seconds: float = Field(description="classes, patterns, solve, disaggregation and validation")
    heuristics: list[HeuristicRow]

    def heuristic(self, name: str) -> HeuristicRow:
        return next(h for h in self.heuristics if h.name == name)


class SyntheticBench(BaseModel):
    sizes: list[int] = Field(description="job sizes of the stranded columns")
    heuristics: list[str]
    rows: list[SyntheticRow]
    executor: str
    outputs: list[str] = Field(default_factory=list)


def _one(spec: SyntheticSpec) -> SyntheticRow:
    cluster = synthetic_cluster(spec.nodes, spec.seed, spec.busy, spec.mix)
    jobs = pending_jobs([], synthetic_workload(spec.jobs, spec.seed))
    began = time.perf_counter()
    report = plan(
        cluster,
        jobs,
        SolverConfig(time_limit=spec.time_limit, workers=1, seed=spec.seed),
        DEFAULT_SIZES,
        heuristics=False,
    )
    optimum_seconds = time.perf_counter() - began
    sizes = tuple(sorted(report.metrics.stranded))
    best = max(1, report.metrics.gpus_placed)
    first = report.solve.levels[0]  # priority-weighted GPUs placed: the bracket is on this level
    upper = first.best_bound

    def below(weighted: int) -> float | None:
        return None if upper is None else round(100 * (upper - weighted) / max(1.0, upper), 2)

    rows = []
    for policy in RANKINGS:
        for mode in MODES:
            began = time.perf_counter()
            metrics = greedy(cluster, jobs, policy, mode, sizes)
            rows.append(
                HeuristicRow(
                    name=f"{policy}/{mode}",
                    weighted_gpus=metrics.weighted_gpus,
                    gpus_placed=metrics.gpus_placed,
                    gpus_placed_pct=round(100 * metrics.gpus_placed / best, 2),
                    to_upper_pct=below(metrics.weighted_gpus),
                    jobs_placed=metrics.jobs_placed,
                    gpus_held_by_partial_jobs=metrics.gpus_held_by_partial_jobs,
                    stranded=metrics.stranded,
                    seconds=round(time.perf_counter() - began, 3),
                )
            )
    return SyntheticRow(
        nodes=spec.nodes,
        gpus=sum(node.gpu.count for node in cluster.nodes if node.gpu),
        jobs=spec.jobs,
        status=report.solve.status,
        optimum=OptimumRow(
            weighted_gpus=report.metrics.weighted_gpus,
            gpus_placed=report.metrics.gpus_placed,
            jobs_placed=report.metrics.jobs_placed,
            stranded=report.metrics.stranded,
        ),
        upper_weighted_gpus=upper,
        gap_pct=below(report.metrics.weighted_gpus),
        optimum_seconds=round(optimum_seconds, 3),
        heuristics=rows,
    )


def bench_synthetic(
    nodes: list[int],
    jobs_per_node: float,
    busy: float,
    mix: dict[str, float],
    seed: int,
    time_limit: float,
    workers: int = 1,
    ray: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SyntheticBench:
    synthetic_cluster(1, seed, busy, mix)  # a bad mix fails here, before any worker starts
    specs = [
        SyntheticSpec(
            nodes=n, jobs=max(1, round(n * jobs_per_node)), busy=busy, mix=mix, seed=seed, time_limit=time_limit
        )
        for n in nodes
    ]
    rows = fan_out(_one, specs, workers, ray, progress)
    first = rows[0]
    return SyntheticBench(
        sizes=sorted(first.optimum.stranded),
        heuristics=[h.name for h in first.heuristics],
        rows=rows,
        executor=executor_name(workers, ray),
    )


def write_synthetic(result: SyntheticBench, out: Path, plot: Callable[[SyntheticBench, IO[bytes]], None]) -> list[str]:
    """synthetic.csv (one row per cluster and plan), synthetic.json and synthetic.png in `out`."""
    make_folder(out)
    rows = out / "synthetic.csv"
    with io.StringIO(newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "nodes",
                "gpus",
                "jobs",
                "plan",
                "weighted_gpus",
                "gpus_placed",
                "gpus_placed_pct",
                "jobs_placed",
                *(f"stranded_{s}" for s in result.sizes),
                "seconds",
            ]
        )
        for row in result.rows:
            best = row.optimum
            writer.writerow(
                [
                    row.nodes,
                    row.gpus,
                    row.jobs,
                    "optimum",
                    best.weighted_gpus,
                    best.gpus_placed,
                    100.0,
                    best.jobs_placed,
                    *(best.stranded[s] for s in result.sizes),
                    row.optimum_seconds,
                ]
            )
            for h in row.heuristics:
                writer.writerow(
                    [
                        row.nodes,
                        row.gpus,
                        row.jobs,
                        h.name,
                        h.weighted_gpus,
                        h.gpus_placed,
                        h.gpus_placed_pct,
                        h.jobs_placed,
                        *(h.stranded[s] for s in result.sizes),
                        h.seconds,
                    ]
                )
        return write_plot_and_document(result, out, "synthetic", (rows, handle.getvalue()), plot)
