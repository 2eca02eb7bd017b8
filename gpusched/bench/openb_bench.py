"""`bench openb`: every (trace, policy, seed) run of the FGD protocol and the offline bracket per (trace, seed), fanned
out, then summarised per trace beside the published numbers, and written as CSV, JSON and a plot on request.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

import numpy as np
from pydantic import BaseModel, Field

from ..errors import InputError
from ..files import make_folder, write_files
from ..planner.gpushare.policies import Fgd
from ..scenarios.openb import trace_files
from ..scenarios.openb_variants import UnbuildableVariant
from .bracket import Bracket, bracket
from .fanout import executor_name, fan_out
from .openb import (
    CURVE_POINTS,
    DEFAULT_RATIO,
    MAX_TASKS,
    Prepared,
    RunResult,
    RunSpec,
    check_arrivals,
    prepare,
    require_at_most,
    run,
)
from .published import published

__all__ = [
    "BRACKET",
    "OpenbBench",
    "PolicySummary",
    "Skipped",
    "TraceSummary",
    "bench_openb",
    "write_outputs",
    "write_plot_and_document",
]

R = TypeVar("R", bound=BaseModel)

BRACKET = "offline-bracket"  # the pseudo-policy of a bracket task
REFERENCE = Fgd.name  # every policy is measured against FGD, reproduced in the same runs


class PolicySummary(BaseModel):
    policy: str
    runs: int
    allocation_pct: float = Field(description="GPU allocation at the last arrived percentage, mean over seeds")
    std_pct: float
    published_pct: float | None = Field(description="the FGD paper's number (full cluster at 130% only)")
    difference_pp: float | None
    to_upper_pp: float | None = Field(
        description="the offline upper bound minus the allocation, mean over seeds: at least the distance to the optimum"
    )
    closed_pct: float | None = Field(
        description="the share (%) of FGD's distance to the upper bound this policy closes: the mean gain over FGD "
        "divided by FGD's mean distance to the bound, over the seeds that have both (None for FGD itself, or "
        "without FGD's runs or a bound)"
    )
    wins: int | None = Field(description="seeds on which this policy allocates more than FGD (None for FGD itself)")
    paired: int = Field(description="seeds on which both this policy and FGD ran: what `wins` counts out of")
    dropped: float = Field(description="pods that fitted nowhere, mean over seeds")
    decision_us: float = Field(description="CPU time per decision, microseconds, mean over seeds")
    curve: list[float | None] = Field(description="mean allocation % per arrived % 0..130")


class Skipped(BaseModel):
    """A trace × variant that cannot be built (the trace lacks the pods the variant moves): reported, not run."""

    trace: str
    variant: str
    reason: str


class TraceSummary(BaseModel):
    trace: str
    file: str
    nodes: int
    gpus: int
    pods: int = Field(description="rows in the trace")
    arrivals: float = Field(description="pods that arrive (trace tuned to the ratio), mean over seeds")
    ratio: float
    published: bool = Field(description="the full cluster at 130%: the paper's numbers apply")
    seeds: list[int]
    policies: list[PolicySummary]
    upper_pct: float | None = Field(
        description="offline upper bound on the allocation (pattern LP), mean over the seeds whose bracket is whole"
    )
    lower_pct: float | None = Field(description="a checked offline placement of the arrived pods, mean likewise")
    gap_pp: float | None = Field(description="upper minus lower, mean likewise: the optimum is known to this")
    gap_max_pp: float | None = Field(description="upper minus lower, the widest over those seeds")
    bound_failures: list[str] = Field(
        default_factory=list, description="seeds whose bracket could not be completed, each with the reason"
    )


class OpenbBench(BaseModel):
    traces: list[TraceSummary]
    runs: list[RunResult]
    brackets: list[Bracket] = Field(description="the offline bracket per trace and seed")
    skipped: list[Skipped] = Field(default_factory=list, description="trace × variant pairs that cannot be built")
    executor: str
    seconds: float
    outputs: list[str] = Field(default_factory=list)


def _execute(spec: RunSpec) -> RunResult | Bracket:
    """One task, in whichever process or Ray worker it lands."""
    return bracket(spec) if spec.policy == BRACKET else run(spec)


def _mean(values: list[float]) -> float:
    return round(float(np.mean(values)), 4)


def _mean_curve(runs: list[RunResult]) -> list[float | None]:
    curve: list[float | None] = []
    for x in range(CURVE_POINTS):
        points = [y for r in runs if (y := r.curve[x]) is not None]
        curve.append(round(float(np.mean(points)), 4) if points else None)
    return curve


def _against_fgd(
    policy: str, runs: list[RunResult], fgd: dict[int, float], upper: dict[int, float]
) -> tuple[float | None, int | None, int]:
    """The share of FGD's distance to the bound closed, the wins over FGD, and the seeds paired with FGD's."""
    mine = {r.seed: r.allocation_pct for r in runs if r.seed in fgd}
    if policy == REFERENCE:
        return None, None, len(mine)
    wins = sum(value > fgd[seed] for seed, value in mine.items()) if mine else None
    bounded = [seed for seed in mine if seed in upper]
    distance = sum(upper[seed] - fgd[seed] for seed in bounded)
    if distance <= 0:  # no bound, or FGD at the bound: nothing to close
        return None, wins, len(mine)
    gain = sum(mine[seed] - fgd[seed] for seed in bounded)
    return round(100 * gain / distance, 2), wins, len(mine)


def _summary(
    policy: str, runs: list[RunResult], full: bool, upper: dict[int, float], fgd: dict[int, float]
) -> PolicySummary:
    allocation = _mean([r.allocation_pct for r in runs])
    paper = published(runs[0].trace, policy) if full else None
    closed, wins, paired = _against_fgd(policy, runs, fgd, upper)
    return PolicySummary(
        policy=policy,
        runs=len(runs),
        allocation_pct=allocation,
        std_pct=round(float(np.std([r.allocation_pct for r in runs])), 4),
        published_pct=paper,
        difference_pp=None if paper is None else round(allocation - paper, 2),
        to_upper_pp=_mean([upper[r.seed] - r.allocation_pct for r in runs if r.seed in upper]) if upper else None,
        closed_pct=closed,
        wins=wins,
        paired=paired,
        dropped=_mean([r.dropped for r in runs]),
        decision_us=round(float(np.mean([r.decision_us for r in runs])), 1),
        curve=_mean_curve(runs),
    )


def bench_openb(
    traces: list[str],
    policies: list[str],
    seeds: list[int],
    data_dir: str | None = None,
    nodes_file: str | None = None,
    node_count: int | None = None,
    ratio: float = DEFAULT_RATIO,
    bound: bool = True,
    workers: int = 1,
    ray: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    variants: list[str | None] | None = None,
) -> OpenbBench:
    """The protocol for every trace (× variant) × policy × seed (plus the bracket per trace × seed), summarised per
    trace. A variant (scenarios.openb_variants) is generated from its trace in each worker; None is the trace as is.
    A variant that a trace cannot give is reported in `skipped` and the others run; a bracket that cannot be
    completed is reported in its trace's `bound_failures` and every run keeps its result.
    """
    node_path, pod_paths = trace_files(traces, data_dir, nodes_file)
    nodes, files = str(node_path), [str(path) for path in pod_paths]
    cases, skipped = _cases(files, nodes, node_count, variants or [None], ratio)
    tasks = [
        RunSpec(trace=file, nodes=nodes, node_count=node_count, variant=variant, policy=kind, seed=seed, ratio=ratio)
        for file, variant in cases
        for kind in policies + ([BRACKET] if bound else [])
        for seed in seeds
    ]
    require_at_most(len(tasks), MAX_TASKS, "runs (traces × variants × policies and bracket × seeds)")
    began = time.perf_counter()
    results = fan_out(_execute, tasks, workers, ray, progress)
    seconds = time.perf_counter() - began
    runs = [r for r in results if isinstance(r, RunResult)]
    brackets = [r for r in results if isinstance(r, Bracket)]
    full = node_count is None and nodes_file is None and ratio == DEFAULT_RATIO
    summaries = [
        _trace_summary(file, variant, prepare(file, nodes, node_count, variant), runs, brackets, policies, seeds,
                       ratio, full)
        for file, variant in cases
    ]  # fmt: skip
    return OpenbBench(
        traces=summaries,
        runs=runs,
        brackets=brackets,
        skipped=skipped,
        executor=executor_name(workers, ray),
        seconds=round(seconds, 2),
    )


def _cases(
    files: list[str], nodes: str, node_count: int | None, variants: list[str | None], ratio: float
) -> tuple[list[tuple[str, str | None]], list[Skipped]]:
    """Every trace × variant to run, checked here (bad input fails with its file and field before any worker
    starts), and those a trace cannot give, skipped with the reason; InputError when nothing is left to run."""
    cases, skipped = [], []
    for file in files:
        check_arrivals(prepare(file, nodes, node_count), ratio)  # the trace itself must be good
        for variant in variants:
            try:
                check_arrivals(prepare(file, nodes, node_count, variant), ratio)
            except UnbuildableVariant as error:
                skipped.append(Skipped(trace=file, variant=str(variant), reason=error.message))
                continue
            cases.append((file, variant))
    if not cases:
        reasons = "; ".join(f"{s.trace} × {s.variant}: {s.reason}" for s in skipped)
        raise InputError("variant", f"no trace can give any of the variants asked for ({reasons})")
    return cases, skipped


def _trace_summary(
    file: str,
    variant: str | None,
    prepared: Prepared,
    runs: list[RunResult],
    brackets: list[Bracket],
    policies: list[str],
    seeds: list[int],
    ratio: float,
    full: bool,
) -> TraceSummary:
    mine = [r for r in runs if r.trace == prepared.name]
    limits = [b for b in brackets if b.trace == prepared.name]
    upper = {b.seed: b.upper_pct for b in limits if b.upper_pct is not None}
    whole = [b for b in limits if b.failed is None and b.gap_pp is not None]
    fgd = {r.seed: r.allocation_pct for r in mine if r.policy == REFERENCE}
    return TraceSummary(
        trace=prepared.name,
        file=file,
        nodes=len(prepared.cluster.nodes),
        gpus=sum(node.gpu.count for node in prepared.cluster.nodes if node.gpu),
        pods=len(prepared.table.pods),
        arrivals=_mean([r.arrivals for r in mine]),
        ratio=ratio,
        published=full and variant is None,
        seeds=seeds,
        policies=[
            _summary(p, [r for r in mine if r.policy == p], full and variant is None, upper, fgd) for p in policies
        ],
        upper_pct=_mean([b.upper_pct for b in whole if b.upper_pct is not None]) if whole else None,
        lower_pct=_mean([b.lower_pct for b in whole if b.lower_pct is not None]) if whole else None,
        gap_pp=_mean([b.gap_pp for b in whole if b.gap_pp is not None]) if whole else None,
        gap_max_pp=max(b.gap_pp for b in whole if b.gap_pp is not None) if whole else None,
        bound_failures=[f"seed {b.seed}: {b.failed}" for b in limits if b.failed is not None],
    )


def write_outputs(result: OpenbBench, out: Path, plot: Callable[[OpenbBench, IO[bytes]], None]) -> list[str]:
    """openb.csv (one row per run), openb.json (everything) and openb.png (the curves) in `out`."""
    make_folder(out)
    rows = out / "openb.csv"
    with io.StringIO(newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["trace", "policy", "seed", "arrivals", "placed", "dropped", "arrived_pct", "allocation_pct", "decision_us"]
        )
        for r in result.runs:
            writer.writerow(
                [
                    r.trace,
                    r.policy,
                    r.seed,
                    r.arrivals,
                    r.placed,
                    r.dropped,
                    r.arrived_pct,
                    r.allocation_pct,
                    r.decision_us,
                ]
            )
        return write_plot_and_document(result, out, "openb", (rows, handle.getvalue()), plot)


def write_plot_and_document(
    result: R, out: Path, name: str, rows: tuple[Path, str], plot: Callable[[R, IO[bytes]], None]
) -> list[str]:
    """A bench's CSV (path, text), NAME.png (the plot) and NAME.json (the result, listing what was written): all
    three through gpusched.files' safe writer, together or not at all."""
    figure, document = out / f"{name}.png", out / f"{name}.json"
    written = [str(rows[0]), str(document), str(figure)]
    write_files(
        [
            (str(rows[0]), rows[1]),
            (str(figure), lambda handle: plot(result, handle)),
            (str(document), result.model_copy(update={"outputs": written}).model_dump_json(indent=2)),
        ]
    )
    return written
