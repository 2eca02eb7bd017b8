"""`bench openb` (the FGD paper's experiment, reproduced and compared), `bench synthetic` (heuristics against the
CP-SAT optimum on generated clusters) and `bench replay` (the openb trace with its own arrival and departure times).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..bench.fanout import LOCAL_RAY
from ..bench.openb import DEFAULT_RATIO
from ..bench.openb_bench import OpenbBench, bench_openb, write_outputs
from ..bench.published import published
from ..bench.replay import ReplayBench, bench_replay, write_replay
from ..bench.synthetic_bench import SyntheticBench, bench_synthetic, write_synthetic
from ..limits import MAX_NODES
from ..planner.gpushare import POLICIES, policy_named
from ..scenarios.openb import OPENB_TRACES
from .common import (
    SECONDS_MAX,
    SEED_MAX,
    WORKERS_MAX,
    JsonFlag,
    finite,
    new_table,
    run,
    show,
)
from .core import bench_app
from .progress import progress_bar

DATA_DIR = "../shared/data/openb"  # beside the repository, where the project keeps the trace (never in it)
DataDir = Annotated[
    str, typer.Option("--data", envvar="GPUSCHED_OPENB", help="folder with the openb CSVs (or $GPUSCHED_OPENB)")
]
NodesFile = Annotated[str | None, typer.Option("--nodes-file", help="node list CSV (default: the one in --data)")]
NodeCount = Annotated[int | None, typer.Option("--nodes", min=1, max=MAX_NODES, help="an evenly spaced subset of this many nodes")]
Workers = Annotated[int, typer.Option("--workers", min=1, max=WORKERS_MAX, help="local processes (default: one per CPU)")]
CPUS = os.cpu_count() or 1
Ray = Annotated[bool, typer.Option("--ray", help="run on a Ray instance started here (needs the ray extra)")]
RayAddress = Annotated[str | None, typer.Option("--ray-address", help="run on the Ray cluster at this address")]
Out = Annotated[Path | None, typer.Option("--out", help="write CSV, JSON and a PNG plot into this folder")]
Timing = Annotated[bool, typer.Option("--timing/--no-timing", help="show times (off: output that repeats exactly)")]


def seed_list(text: str) -> list[int]:
    """42-51, 42,43 or a mix of both."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        first, _, last = part.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            raise ValueError(f"--seeds: expected numbers or ranges like 42-51, got {part!r}") from None
        if high < low:
            raise ValueError(f"--seeds: the range {part} runs backwards")
        seeds.extend(range(low, high + 1))
    if not seeds:
        raise ValueError("--seeds: give at least one seed")
    return seeds


def policy_list(text: str) -> list[str]:
    """Comma-separated policy names, or `all`."""
    if text.strip() == "all":
        return list(POLICIES)
    return [policy_named(name.strip()).name for name in text.split(",") if name.strip()]


def trace_list(text: str) -> list[str]:
    """Comma-separated shipped names or CSV paths, or `all` (the shipped traces)."""
    return list(OPENB_TRACES) if text.strip() == "all" else [t.strip() for t in text.split(",") if t.strip()]


def ray_target(flag: bool, address: str | None) -> str | None:
    return address or (LOCAL_RAY if flag else None)


def _write_and_show(
    result: Any,
    out: Path | None,
    write: Callable[[Any, Path, Callable], list[str]],
    plot: str,
    as_json: bool,
    render: Callable[[Console, Any, bool], None],
    timing: bool,
) -> int:
    """A bench's outputs (CSV, JSON and the plot named `plot`) written when --out asks, then its result shown."""
    if out is not None:
        from ..bench import plots  # matplotlib only when a plot is wanted

        result.outputs = write(result, out, getattr(plots, plot))
    show(result, as_json, lambda console, r: render(console, r, timing))
    return 0


@bench_app.command("openb")
def bench_openb_command(
    trace: Annotated[
        str,
        typer.Option(
            "--trace", help="default, cpu050, gpushare40, multigpu20, gpuspec33, all, or CSV paths (comma-separated)"
        ),
    ] = "default",
    policies: Annotated[
        str, typer.Option("--policies", help=f"comma-separated, or all: {', '.join(POLICIES)}")
    ] = "all",
    seeds: Annotated[str, typer.Option("--seeds", help="seeds, e.g. 42-51 (the paper's) or 42,43")] = "42-51",
    data: DataDir = DATA_DIR,
    nodes_file: NodesFile = None,
    nodes: NodeCount = None,
    ratio: Annotated[float, typer.Option("--ratio", parser=finite(0.01, 100), help="arrived GPU demand, × capacity")] = DEFAULT_RATIO,
    bound: Annotated[
        bool,
        typer.Option(
            "--bound/--no-bound", help="the offline bound per seed (LP relaxation and an offline greedy placement)"
        ),
    ] = True,
    workers: Workers = CPUS,
    ray: Ray = False,
    ray_address: RayAddress = None,
    out: Out = None,
    timing: Timing = True,
    as_json: JsonFlag = False,
) -> None:
    """The FGD paper's experiment on the Alibaba openb trace: every policy's GPU allocation at 130% arrived."""

    def body() -> int:
        chosen = policy_list(policies)
        with progress_bar("openb runs") as progress:
            result = bench_openb(
                trace_list(trace),
                chosen,
                seed_list(seeds),
                data,
                nodes_file,
                nodes,
                ratio,
                bound,
                workers,
                ray_target(ray, ray_address),
                progress,
            )
        return _write_and_show(result, out, write_outputs, "plot_openb", as_json, render_openb, timing)

    run(body)


def _seeds_text(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 1:
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def render_openb(console: Console, result: OpenbBench, timing: bool) -> None:
    for trace in result.traces:
        console.print(
            f"trace {trace.trace}: {trace.nodes} nodes, {trace.gpus} GPUs, {trace.pods} pods; "
            f"{trace.arrivals:g} arrive ({100 * trace.ratio:g}% of GPU capacity); seeds {_seeds_text(trace.seeds)}",
            markup=False,
        )
        columns = ["policy", "paper", "alloc", "sd", "diff", "LP gap", "dropped"]
        table = new_table(*columns, *(["µs/dec"] if timing else []))
        for p in trace.policies:
            row = [
                p.policy,
                _number(p.published_pct),
                _number(p.allocation_pct),
                _number(p.std_pct),
                _number(p.difference_pp, True),
                _number(p.gap_to_lp_pp),
                f"{p.dropped:g}",
            ]
            table.add_row(*row, *([f"{p.decision_us:.0f}"] if timing else []))
        console.print(table)
        ours = next((p for p in trace.policies if p.policy == "gpusched"), None)
        fgd = published(trace.trace, "FGD") if trace.published else None
        if ours is not None and fgd is not None:
            console.print(
                f"gpusched {ours.allocation_pct:.2f}% against FGD's published {fgd:.2f}%: "
                f"{ours.allocation_pct - fgd:+.2f} points",
                markup=False,
            )
        if trace.lp_pct is not None and trace.offline_pct is not None:
            console.print(
                f"offline bound: placed all at once, these pods allocate between {trace.offline_pct:.2f}% "
                f"(offline greedy) and {trace.lp_pct:.2f}% (LP relaxation)",
                markup=False,
            )
    if timing:
        runs = len(result.runs) + len(result.bounds)
        console.print(f"{runs} runs in {result.seconds:.1f} s ({result.executor})", markup=False)
    for path in result.outputs:
        console.print(f"wrote {path}", markup=False)


@bench_app.command("synthetic")
def bench_synthetic_command(
    nodes: Annotated[str, typer.Option("--nodes", help="cluster sizes, comma-separated")] = "100,1000,10000",
    jobs_per_node: Annotated[float, typer.Option("--jobs-per-node", parser=finite(0.001, 1000), help="pending jobs per node")] = 0.5,
    busy: Annotated[float, typer.Option("--busy", parser=finite(0.0, 1.0), help="fraction of GPUs already busy")] = 0.2,
    mix: Annotated[
        str, typer.Option("--mix", help="node kinds and weights of dgx, pcie, l4, mig")
    ] = "dgx=4,pcie=2,l4=2,mig=2",
    seed: Annotated[int, typer.Option("--seed", min=0, max=SEED_MAX, help="generator and solver seed")] = 42,
    time_limit: Annotated[float, typer.Option("--time-limit", parser=finite(0.01, SECONDS_MAX), help="CP-SAT seconds per cluster")] = 60.0,
    workers: Workers = CPUS,
    ray: Ray = False,
    ray_address: RayAddress = None,
    out: Out = None,
    timing: Timing = True,
    as_json: JsonFlag = False,
) -> None:
    """Batch placement on generated clusters: each heuristic against the CP-SAT optimum."""

    def body() -> int:
        sizes = [int(n) for n in _counts("--nodes", nodes)]
        with progress_bar("clusters") as progress:
            result = bench_synthetic(
                sizes, jobs_per_node, busy, _mix(mix), seed, time_limit, workers, ray_target(ray, ray_address), progress
            )
        return _write_and_show(result, out, write_synthetic, "plot_synthetic", as_json, render_synthetic, timing)

    run(body)


def _counts(option: str, text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"{option}: expected comma-separated whole numbers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise ValueError(f"{option}: expected whole numbers of at least 1")
    return values


def _mix(text: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        kind, _, weight = part.partition("=")
        try:
            found[kind.strip()] = float(weight or 1)
        except ValueError:
            raise ValueError(f"--mix: expected kind=weight, got {part!r}") from None
    return found


def render_synthetic(console: Console, result: SyntheticBench, timing: bool) -> None:
    sizes = "/".join(map(str, result.sizes))
    for row in result.rows:
        took = f" in {row.optimum_seconds:.2f} s" if timing else ""
        console.print(f"{row.nodes} nodes, {row.gpus} GPUs, {row.jobs} jobs: optimum {row.status}{took}", markup=False)
        table = new_table("plan", "GPUs", "% opt", "jobs", f"stranded {sizes}", *(["seconds"] if timing else []))
        table.add_row(
            "optimum",
            str(row.optimum.gpus_placed),
            "100.0",
            str(row.optimum.jobs_placed),
            "/".join(str(row.optimum.stranded[s]) for s in result.sizes),
            *([f"{row.optimum_seconds:.2f}"] if timing else []),
        )
        for h in row.heuristics:
            table.add_row(
                h.name,
                str(h.gpus_placed),
                f"{h.gpus_placed_pct:.1f}",
                str(h.jobs_placed),
                "/".join(str(h.stranded[s]) for s in result.sizes),
                *([f"{h.seconds:.2f}"] if timing else []),
            )
        console.print(table)
    for path in result.outputs:
        console.print(f"wrote {path}", markup=False)


@bench_app.command("replay")
def bench_replay_command(
    trace: Annotated[
        str, typer.Option("--trace", help="a shipped trace with creation/deletion times, or a CSV path")
    ] = "default",
    policies: Annotated[
        str, typer.Option("--policies", help=f"comma-separated, or all: {', '.join(POLICIES)}")
    ] = "BestFit,FGD,binpack",
    data: DataDir = DATA_DIR,
    nodes_file: NodesFile = None,
    nodes: NodeCount = None,
    seed: Annotated[int, typer.Option("--seed", min=0, max=SEED_MAX, help="seed for the policies' tie orders")] = 42,
    speedup: Annotated[
        float, typer.Option("--speedup", min=1.0, help="arrivals this many times faster, lifetimes kept")
    ] = 1.0,
    workers: Workers = CPUS,
    ray: Ray = False,
    ray_address: RayAddress = None,
    out: Out = None,
    timing: Timing = True,
    as_json: JsonFlag = False,
) -> None:
    """Replay openb with its own creation and deletion times: allocation and pending time per policy."""

    def body() -> int:
        with progress_bar("replays") as progress:
            result = bench_replay(
                trace,
                policy_list(policies),
                data,
                nodes_file,
                nodes,
                seed,
                speedup,
                workers,
                ray_target(ray, ray_address),
                progress,
            )
        return _write_and_show(result, out, write_replay, "plot_replay", as_json, render_replay, timing)

    run(body)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.0f} hours"


def render_replay(console: Console, result: ReplayBench, timing: bool) -> None:
    pace = "the trace's own times" if result.speedup == 1 else f"arrivals {result.speedup:g}× faster, lifetimes kept"
    console.print(
        f"replay {result.trace}: {result.nodes} nodes, {result.gpus} GPUs, {result.pods} pods arriving over "
        f"{_duration(result.seconds)} ({pace})",
        markup=False,
    )
    table = new_table(
        "policy", "at end %", "peak %", "waited", "wait s mean/p95/max", "never", *(["µs/dec"] if timing else [])
    )
    for p in result.policies:
        waits = f"{p.mean_wait_s:.0f}/{p.p95_wait_s:.0f}/{p.max_wait_s:.0f}"
        table.add_row(
            p.policy,
            f"{p.last_arrival_pct:.2f}",
            f"{p.peak_allocation_pct:.2f}",
            str(p.waited),
            waits,
            str(p.never_placed),
            *([f"{p.decision_us:.0f}"] if timing else []),
        )
    console.print(table)
    for path in result.outputs:
        console.print(f"wrote {path}", markup=False)
