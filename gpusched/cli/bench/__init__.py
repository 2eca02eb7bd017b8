"""Every `gpusched bench` command, in one place: `bench openb` (the FGD paper's experiment, reproduced and compared),
`bench synthetic` (heuristics against the CP-SAT optimum on generated clusters), `bench replay` (the openb trace with
its own arrival and departure times), and the timings of the other commands at scale (`place`, `dra`, `mig`, `plan`,
`preempt`, `defrag`, `explain`). Registered in the order `bench --help` lists them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ...bench import PlaceBench, bench_place
from ...bench.cel_bench import CelBench, bench_cel
from ...bench.dra_bench import DraBench, bench_dra
from ...bench.fanout import LOCAL_RAY
from ...bench.k8s_bench import K8sBench, bench_k8s
from ...bench.mig_bench import MigBench, bench_mig
from ...bench.openb import DEFAULT_RATIO, MAX_TASKS, require_at_most
from ...bench.openb_bench import OpenbBench, bench_openb, write_outputs
from ...bench.plan_bench import PlanBench, bench_plan
from ...bench.repair import FILL, ExplainBench, RepairBench, bench_defrag, bench_explain, bench_preempt
from ...bench.replay import ReplayBench, bench_replay, write_replay
from ...bench.scale_bench import ScaleBench, bench_scale
from ...bench.synthetic_bench import SyntheticBench, bench_synthetic, write_synthetic
from ...errors import InputError, require
from ...limits import MAX_NODES, MAX_POD_GPUS, MAX_PODS
from ...planner.gpushare import SHARE_POLICIES, share_policy
from ...planner.optimize.defrag import parse_shape
from ...planner.scheduler.views import View
from ...scenarios.openb import OPENB_TRACES, openb_dir
from ...scenarios.openb_download import OPENB_URL, download_openb
from ...scenarios.openb_variants import VARIANT_KINDS, parse_variant
from ..common import (
    DEFAULT_WORKERS,
    SECONDS_MAX,
    SEED_MAX,
    WORKERS_MAX,
    JsonFlag,
    PolicyOpt,
    Seed,
    SolverWorkers,
    TimeLimit,
    app,
    counts,
    err,
    finite,
    run,
    run_and_show,
    shape,
    show,
    solver_config,
    usage,
)
from ..progress import progress_bar
from .render import (
    Downloaded,
    render_cel_bench,
    render_downloaded,
    render_dra_bench,
    render_explain_bench,
    render_k8s_bench,
    render_mig_bench,
    render_openb,
    render_place_bench,
    render_plan_bench,
    render_repair_bench,
    render_replay,
    render_scale_bench,
    render_synthetic,
)

DataDir = Annotated[
    str | None,
    typer.Option("--data", help="folder with the openb CSVs (default: $GPUSCHED_OPENB, else ~/.cache/gpusched/openb)"),
]
NodesFile = Annotated[str | None, typer.Option("--nodes-file", help="node list CSV (default: the one in --data)")]
NodeCount = Annotated[
    int | None, typer.Option("--nodes", min=1, max=MAX_NODES, help="an evenly spaced subset of this many nodes")
]
Workers = Annotated[
    int, typer.Option("--workers", min=1, max=WORKERS_MAX, help="local processes (default: one per CPU)")
]
CPUS = os.cpu_count() or 1
Ray = Annotated[bool, typer.Option("--ray", help="run on a Ray instance started here (needs the ray extra)")]
RayAddress = Annotated[str | None, typer.Option("--ray-address", help="run on the Ray cluster at this address")]
Out = Annotated[
    Path | None, typer.Option("--output-dir", metavar="DIR", help="write CSV, JSON and a PNG plot into this folder")
]
Timing = Annotated[bool, typer.Option("--timing/--no-timing", help="show times (off: output that repeats exactly)")]
BusyNodes = Annotated[
    int, typer.Option(min=1, max=MAX_NODES, help="generated nodes, made busy by placing generated pods")
]
GeneratorSeed = Annotated[int, typer.Option(min=0, max=SEED_MAX, help="generator seed")]
Fill = Annotated[
    float, typer.Option(parser=finite(0.0, 100.0), help="generated pods ask for this many times the exclusive GPUs")
]


bench_app = typer.Typer(
    help="Benchmarks on generated clusters (timed here, never in unit tests).", no_args_is_help=True
)
app.add_typer(bench_app, name="bench")


def seed_list(text: str) -> list[int]:
    """42-51, 42,43 or a mix of both; each seed at most SEED_MAX, at most MAX_TASKS of them (counted before any
    list is made, so 1-1000000000 is refused at once)."""
    ranges: list[tuple[int, int]] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        first, _, last = part.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            raise InputError("--seeds", f"expected numbers or ranges like 42-51, got {part!r}") from None
        if high < low:
            raise InputError("--seeds", f"the range {part} runs backwards")
        if high > SEED_MAX:
            raise InputError("--seeds", f"{high} is past the largest seed, {SEED_MAX}")
        ranges.append((low, high))
        require_at_most(sum(b - a + 1 for a, b in ranges), MAX_TASKS, "--seeds")
    if not ranges:
        raise InputError("--seeds", "give at least one seed")
    return [seed for low, high in ranges for seed in range(low, high + 1)]


def policy_list(text: str) -> list[str]:
    """Comma-separated share policies (name or name:key=value:…), or `all`; each named as its runs will be."""
    if text.strip() == "all":
        return list(SHARE_POLICIES)
    try:
        names = [share_policy(name).label for name in text.split(",") if name.strip()]
    except ValueError as error:
        raise InputError("--policies", str(error)) from None
    if not names:
        raise InputError("--policies", "give at least one policy name, or all")
    return names


def trace_list(text: str) -> list[str]:
    """Comma-separated shipped names or CSV paths, or `all` (the shipped traces)."""
    traces = list(OPENB_TRACES) if text.strip() == "all" else [t.strip() for t in text.split(",") if t.strip()]
    if not traces:
        raise InputError("--trace", "give at least one trace name or CSV path, or all")
    return traces


def variant_list(text: str | None) -> list[str | None] | None:
    """Comma-separated kind:level[@seed], each checked here; `none` is the trace as shipped."""
    if text is None:
        return None
    try:
        return [
            None if part == "none" else parse_variant(part).label
            for part in (p.strip() for p in text.split(","))
            if part
        ]
    except InputError as error:
        raise InputError("--variant", f"{error.source}: {error.message}") from None


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
    """A bench's outputs (CSV, JSON and the plot named `plot`) written when --output-dir asks, then its result shown."""
    if out is not None:
        require("matplotlib", "plots")
        from ...bench import plots  # matplotlib only when a plot is wanted

        result.outputs = write(result, out, getattr(plots, plot))
    show(result, as_json, lambda console, r: render(console, r, timing))
    return 0


@shape(PlaceBench)
@bench_app.command("place")
def bench_place_command(
    nodes: Annotated[
        int, typer.Option(min=1, max=MAX_NODES, help="generated nodes (DGX, PCIe pairs, time-sliced L4, 5:3:2)")
    ] = 1000,
    pods: Annotated[int, typer.Option(min=1, max=MAX_PODS, help="generated pods")] = 10000,
    sizes: Annotated[str, typer.Option(metavar="N,N", help="GPU counts to draw pods from, comma-separated")] = "1",
    view: Annotated[View, typer.Option(help="gpu | extended")] = "gpu",
    policy: PolicyOpt = "binpack",
    seed: Annotated[int, typer.Option(min=0, max=SEED_MAX, help="generator seed")] = 42,
    as_json: JsonFlag = False,
) -> None:
    """Time `place` on a generated cluster: how fast the greedy placer is at scale."""

    def body() -> int:
        result = bench_place(nodes, pods, view, policy, seed, counts("--sizes", sizes) or (1,))
        show(result, as_json, render_place_bench)
        return 0

    run(body)


@shape(OpenbBench | Downloaded)
@bench_app.command("openb")
def bench_openb_command(
    trace: Annotated[
        str,
        typer.Option(
            "--trace", help="default, cpu050, gpushare40, multigpu20, gpuspec33, all, or CSV paths (comma-separated)"
        ),
    ] = "default",
    policies: Annotated[
        str,
        typer.Option(
            "--policies", help=f"comma-separated, or all: {', '.join(SHARE_POLICIES)}; arguments as name:key=value"
        ),
    ] = "all",
    seeds: Annotated[str, typer.Option("--seeds", help="seeds, e.g. 42-51 (the paper's) or 42,43")] = "42-51",
    variant: Annotated[
        str | None,
        typer.Option(
            "--variant",
            help="generated variants of each trace, comma-separated kind:level[@seed] (kinds: "
            f"{', '.join(VARIANT_KINDS)}; none: the trace as is), e.g. cpu-heavy:0.3,none",
        ),
    ] = None,
    data: DataDir = None,
    nodes_file: NodesFile = None,
    nodes: NodeCount = None,
    ratio: Annotated[
        float, typer.Option("--ratio", parser=finite(0.01, 100), help="arrived GPU demand, × capacity")
    ] = DEFAULT_RATIO,
    bound: Annotated[
        bool,
        typer.Option(
            "--bound/--no-bound",
            help="the offline bracket per seed: a pattern-LP upper bound and a checked offline placement",
        ),
    ] = True,
    workers: Workers = CPUS,
    ray: Ray = False,
    ray_address: RayAddress = None,
    out: Out = None,
    timing: Timing = True,
    download: Annotated[
        bool, typer.Option("--download", help="fetch the public trace into --data (default: the cache), then stop")
    ] = False,
    download_url: Annotated[
        str, typer.Option("--download-url", help="where the trace CSVs are (a mirror)")
    ] = OPENB_URL,
    as_json: JsonFlag = False,
) -> None:
    """The FGD paper's experiment on the Alibaba openb trace: every policy's GPU allocation at 130% arrived."""

    def body() -> int:
        if download:
            folder = openb_dir(data)
            with progress_bar("openb download (bytes)") as progress:
                written = download_openb(folder, download_url, progress=progress)
            show(Downloaded(folder=str(folder), files=[str(path) for path in written]), as_json, render_downloaded)
            return 0
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
                variant_list(variant),
            )
        code = _write_and_show(result, out, write_outputs, "plot_openb", as_json, render_openb, timing)
        for summary in result.traces:  # every result is shown and written; say what is missing
            for failure in summary.bound_failures:
                err.print(f"warning: {summary.trace}: offline bracket {failure}", markup=False)
        for skipped in result.skipped:
            err.print(f"warning: {skipped.trace}: skipped variant {skipped.variant}: {skipped.reason}", markup=False)
        return code

    run(body)


@shape(SyntheticBench)
@bench_app.command("synthetic")
def bench_synthetic_command(
    nodes: Annotated[str, typer.Option("--nodes", help="cluster sizes, comma-separated")] = "100,1000,10000",
    jobs_per_node: Annotated[
        float, typer.Option("--jobs-per-node", parser=finite(0.001, 1000), help="pending jobs per node")
    ] = 0.5,
    busy: Annotated[float, typer.Option("--busy", parser=finite(0.0, 1.0), help="fraction of GPUs already busy")] = 0.2,
    mix: Annotated[
        str, typer.Option("--mix", help="node kinds and weights of dgx, pcie, l4, mig")
    ] = "dgx=4,pcie=2,l4=2,mig=2",
    seed: Annotated[int, typer.Option("--seed", min=0, max=SEED_MAX, help="generator and solver seed")] = 42,
    time_limit: Annotated[
        float, typer.Option("--time-limit", parser=finite(0.01, SECONDS_MAX), help="CP-SAT seconds per cluster")
    ] = 60.0,
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
        raise usage(f"{option}: expected comma-separated whole numbers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise usage(f"{option}: expected whole numbers of at least 1")
    return values


def _mix(text: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        kind, _, weight = part.partition("=")
        try:
            found[kind.strip()] = float(weight or 1)
        except ValueError:
            raise usage(f"--mix: expected kind=weight, got {part!r}") from None
    return found


@shape(ReplayBench)
@bench_app.command("replay")
def bench_replay_command(
    trace: Annotated[
        str, typer.Option("--trace", help="a shipped trace with creation/deletion times, or a CSV path")
    ] = "default",
    policies: Annotated[
        str,
        typer.Option(
            "--policies", help=f"comma-separated, or all: {', '.join(SHARE_POLICIES)}; arguments as name:key=value"
        ),
    ] = "BestFit,FGD,binpack",
    data: DataDir = None,
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


@shape(CelBench)
@bench_app.command("cel")
def bench_cel_command(
    selectors: Annotated[int, typer.Option(min=1, max=100_000, help="distinct device selectors to compile")] = 2000,
    devices: Annotated[int, typer.Option(min=1, max=10_000, help="devices each selector runs on")] = 64,
    as_json: JsonFlag = False,
) -> None:
    """Time compiling many distinct DRA device selectors (the API server's checks included), then running each on
    every device."""

    def body() -> int:
        show(bench_cel(selectors, devices), as_json, render_cel_bench)
        return 0

    run(body)


@shape(K8sBench)
@bench_app.command("k8s")
def bench_k8s_command(
    nodes: Annotated[int, typer.Option(min=2, max=MAX_NODES, help="generated nodes (64 cpu, 8 GPUs, 3 zones)")] = 5000,
    pods: Annotated[int, typer.Option(min=0, max=100_000, help="pods bound round the nodes")] = 5000,
    as_json: JsonFlag = False,
) -> None:
    """Time `gpusched k8s` with scores on a generated cluster: every Filter, then every Score plugin."""

    run_and_show(lambda: bench_k8s(nodes, pods), as_json, render_k8s_bench)


@shape(DraBench)
@bench_app.command("dra")
def bench_dra_command(
    nodes: Annotated[
        int, typer.Option(min=1, max=MAX_NODES, help="generated nodes, 8 GPUs each in two NVLink islands of four")
    ] = 1000,
    every: Annotated[
        int, typer.Option(min=1, max=MAX_NODES, help="one node in EVERY keeps an island free; the rest are fragmented")
    ] = 20,
    prune: Annotated[
        bool, typer.Option("--prune/--no-prune", help="gpusched's per-node bounds before the search")
    ] = True,
    as_json: JsonFlag = False,
) -> None:
    """Time one 4-GPU matchAttribute claim over a mostly fragmented cluster (Filter on every node, then Score)."""

    run_and_show(lambda: bench_dra(nodes, every, prune), as_json, render_dra_bench)


@shape(MigBench)
@bench_app.command("mig")
def bench_mig_command(
    gpus: Annotated[int, typer.Option(min=8, max=8 * MAX_NODES, help="generated MIG-capable GPUs (8 per node)")] = 1000,
    seed: Annotated[int, typer.Option(min=0, max=SEED_MAX, help="generator seed (and CP-SAT seed)")] = 42,
    random_layouts: Annotated[
        bool,
        typer.Option(
            "--random-layouts", help="random instances on every GPU (few identical GPUs) instead of common layouts"
        ),
    ] = False,
    realistic: Annotated[
        bool,
        typer.Option("--realistic", help="GPUs that differ (A100/H100/H200/L4/L40S/GB200, MIG, time-slicing, taints)"),
    ] = False,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    as_json: JsonFlag = False,
) -> None:
    """Time `mig plan` on a generated cluster of MIG GPUs (half their instances busy) against a demand."""

    run_and_show(
        lambda: bench_mig(gpus, seed, solver_config(time_limit, workers, seed), random_layouts, realistic),
        as_json,
        render_mig_bench,
    )


@shape(PlanBench)
@bench_app.command("plan")
def bench_plan_command(
    nodes: Annotated[
        int, typer.Option(min=1, max=MAX_NODES, help="generated nodes (DGX, PCIe pairs, time-sliced L4, 5:3:2)")
    ] = 10000,
    jobs: Annotated[
        int, typer.Option(min=1, max=MAX_PODS, help="generated pending jobs (1-8 GPUs per pod, 1-8 pods)")
    ] = 2000,
    busy: Annotated[float, typer.Option(parser=finite(0.0, 1.0), help="fraction of GPUs already busy")] = 0.5,
    domain_jobs: Annotated[
        int, typer.Option(min=0, max=MAX_PODS, help="add 4x8-GPU jobs confined to one NVLink domain")
    ] = 0,
    shapes: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_PODS, help="re-cut the jobs to this many distinct pod shapes (GPUs, cpu, memory)"),
    ] = None,
    distinct_nodes: Annotated[
        bool, typer.Option("--distinct-nodes", help="every node a different allocatable cpu and memory")
    ] = False,
    compare: Annotated[
        bool,
        typer.Option("--compare", help="plan as the plan command does: every heuristic, once, inside the time limit"),
    ] = False,
    realistic: Annotated[
        bool,
        typer.Option("--realistic", help="GPUs that differ (A100/H100/H200/L4/L40S/GB200, MIG, time-slicing, taints)"),
    ] = False,
    seed: Seed = 42,
    time_limit: TimeLimit = 60.0,
    as_json: JsonFlag = False,
) -> None:
    """Time `plan` on a generated cluster and backlog: heuristics, classes, patterns, solve, disaggregation,
    validation; with the status, the gap, which plan is the answer and the heuristic the solve started from."""

    def body() -> int:
        solver_config(time_limit, 1, seed)
        result = bench_plan(
            nodes, jobs, busy, seed, time_limit, domain_jobs, shapes, distinct_nodes, compare, realistic
        )
        show(result, as_json, render_plan_bench)
        return 0

    run(body)


@shape(RepairBench)
@bench_app.command("preempt")
def bench_preempt_command(
    nodes: BusyNodes = 1000,
    pods: Annotated[int, typer.Option(min=1, max=MAX_PODS, help="pods of the pending priority-100 NVLink job")] = 2,
    gpus: Annotated[int, typer.Option(min=1, max=MAX_POD_GPUS, help="GPUs per pod of the pending job")] = 8,
    seed: GeneratorSeed = 42,
    fill: Fill = FILL,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    as_json: JsonFlag = False,
) -> None:
    """Time `preempt` on a busy generated cluster."""

    run_and_show(
        lambda: bench_preempt(nodes, seed, pods, gpus, solver_config(time_limit, workers, 0), fill),
        as_json,
        render_repair_bench,
    )


@shape(RepairBench)
@bench_app.command("defrag")
def bench_defrag_command(
    nodes: BusyNodes = 1000,
    shape: Annotated[str, typer.Option("--for", help="the target shape")] = "8x2@island",
    max_moves: Annotated[int | None, typer.Option("--max-moves", max=MAX_PODS, help="at most this many moves")] = None,
    seed: GeneratorSeed = 42,
    fill: Fill = FILL,
    realistic: Annotated[
        bool,
        typer.Option("--realistic", help="GPUs that differ (A100/H100/H200/L4/L40S/GB200, MIG, time-slicing, taints)"),
    ] = False,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    as_json: JsonFlag = False,
) -> None:
    """Time `defrag` on a busy generated cluster."""

    def body() -> int:
        parse_shape(shape, "--for")
        result = bench_defrag(nodes, seed, shape, max_moves, solver_config(time_limit, workers, 0), fill, realistic)
        show(result, as_json, render_repair_bench)
        return 0

    run(body)


@shape(ExplainBench)
@bench_app.command("explain")
def bench_explain_command(
    nodes: BusyNodes = 1000,
    gpus: Annotated[int, typer.Option(min=1, max=MAX_POD_GPUS, help="GPUs of the pending priority-100 NVLink pod")] = 8,
    seed: GeneratorSeed = 42,
    fill: Fill = FILL,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    as_json: JsonFlag = False,
) -> None:
    """Time `explain` on a busy generated cluster: the diagnosis and every planner behind its changes."""

    run_and_show(
        lambda: bench_explain(nodes, seed, gpus, solver_config(time_limit, workers, 0), fill),
        as_json,
        render_explain_bench,
    )


@shape(ScaleBench)
@bench_app.command("scale")
def bench_scale_command(
    pods: Annotated[
        str, typer.Option("--pods", metavar="N,...", help="pending pods of each random backlog (a tenth in gangs)")
    ] = "100,500,1000,2000",
    offerings: Annotated[
        int, typer.Option("--offerings", min=1, max=60, help="random offerings of the catalogue's cloud GPU types")
    ] = 30,
    shapes: Annotated[
        int, typer.Option("--shapes", min=1, max=1000, help="pod templates each backlog is cut from")
    ] = 60,
    seed: Seed = 0,
    time_limit: TimeLimit = 10.0,
    workers: SolverWorkers = DEFAULT_WORKERS,
    as_json: JsonFlag = False,
) -> None:
    """Time `scale up` on random backlogs over random offerings (an empty cluster): status, gap, cost against
    Karpenter's provisioning and Cluster Autoscaler's expanders, CPU seconds."""

    def body() -> int:
        config = solver_config(time_limit, workers, seed)
        sizes = list(counts("--pods", pods))
        show(bench_scale(sizes, offerings, seed, config, shapes), as_json, render_scale_bench)
        return 0

    run(body)
