"""How the bench results read in a terminal: one renderer per `gpusched bench` command."""

from __future__ import annotations

from pydantic import BaseModel
from rich.console import Console

from ...bench import PlaceBench
from ...bench.cel_bench import CelBench
from ...bench.dra_bench import DraBench
from ...bench.k8s_bench import K8sBench
from ...bench.mig_bench import MigBench
from ...bench.openb_bench import OpenbBench
from ...bench.plan_bench import PlanBench
from ...bench.published import published
from ...bench.repair import ExplainBench, RepairBench
from ...bench.replay import ReplayBench
from ...bench.scale_bench import ScaleBench
from ...bench.synthetic_bench import SyntheticBench
from ..common import new_table

__all__ = [
    "Downloaded",
    "render_downloaded",
    "render_place_bench",
    "render_openb",
    "render_synthetic",
    "render_replay",
    "render_dra_bench",
    "render_mig_bench",
    "render_plan_bench",
    "render_repair_bench",
    "render_explain_bench",
]


class Downloaded(BaseModel):
    folder: str
    files: list[str]


def render_downloaded(console: Console, result: Downloaded) -> None:
    console.print(f"downloaded {len(result.files)} openb files into {result.folder}", markup=False)


def render_place_bench(console: Console, result: PlaceBench) -> None:
    console.print(
        f"place {result.pods} pods (sizes {result.sizes}) on {result.nodes} nodes, view {result.view}, "
        f"policy {result.policy}: {result.placed} placed, {result.pending} Pending in {result.seconds:.3f} s "
        f"({result.pods_per_second:.0f} pods/s)",
        markup=False,
    )


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
        columns = ["policy", "paper", "alloc", "sd", "diff", "to opt", "closed%", "wins", "dropped"]
        table = new_table(*columns, *(["µs/dec"] if timing else []))
        for p in trace.policies:
            row = [
                p.policy,
                _number(p.published_pct),
                _number(p.allocation_pct),
                _number(p.std_pct),
                _number(p.difference_pp, True),
                _number(p.to_upper_pp),
                _number(p.closed_pct),
                "-" if p.wins is None else f"{p.wins}/{p.paired}",
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
        if ours is not None and ours.wins is not None:
            closed = (
                "" if ours.closed_pct is None else f"closes {ours.closed_pct:.1f}% of FGD's distance to the bound, "
            )
            console.print(f"gpusched {closed}beats FGD on {ours.wins} of {ours.paired} seeds", markup=False)
        if trace.upper_pct is not None and trace.lower_pct is not None and trace.gap_pp is not None:
            console.print(
                f"offline optimum of these pods, placed all at once: between {trace.lower_pct:.2f}% (a checked "
                f"placement) and {trace.upper_pct:.2f}% (pattern LP bound), gap {trace.gap_pp:.2f} points",
                markup=False,
            )
    if timing:
        runs = len(result.runs) + len(result.brackets)
        console.print(f"{runs} runs in {result.seconds:.1f} s ({result.executor})", markup=False)
    for path in result.outputs:
        console.print(f"wrote {path}", markup=False)


def render_synthetic(console: Console, result: SyntheticBench, timing: bool) -> None:
    sizes = "/".join(map(str, result.sizes))
    for row in result.rows:
        took = f" in {row.optimum_seconds:.2f} s" if timing else ""
        bound = "-" if row.upper_weighted_gpus is None else f"{row.upper_weighted_gpus:g}"
        console.print(
            f"{row.nodes} nodes, {row.gpus} GPUs, {row.jobs} jobs: optimum {row.status}{took}; priority-weighted "
            f"GPUs between {row.optimum.weighted_gpus} (validated plan) and {bound} (CP-SAT bound)",
            markup=False,
        )
        columns = ("plan", "GPUs", "% opt", "to bound", "jobs", f"stranded {sizes}")
        table = new_table(*columns, *(["seconds"] if timing else []))
        table.add_row(
            "optimum",
            str(row.optimum.gpus_placed),
            "100.0",
            _number(row.gap_pct),
            str(row.optimum.jobs_placed),
            "/".join(str(row.optimum.stranded[s]) for s in result.sizes),
            *([f"{row.optimum_seconds:.2f}"] if timing else []),
        )
        for h in row.heuristics:
            table.add_row(
                h.name,
                str(h.gpus_placed),
                f"{h.gpus_placed_pct:.1f}",
                _number(h.to_upper_pct),
                str(h.jobs_placed),
                "/".join(str(h.stranded[s]) for s in result.sizes),
                *([f"{h.seconds:.2f}"] if timing else []),
            )
        console.print(table)
    for path in result.outputs:
        console.print(f"wrote {path}", markup=False)


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


def render_cel_bench(console: Console, result: CelBench) -> None:
    console.print(
        f"{result.selectors} selectors ({result.refused} refused): compiled in {result.compile_seconds:.3f} s "
        f"({result.compile_cpu_seconds:.3f} s CPU); on {result.devices} devices each, "
        f"{result.matched} matches in {result.evaluate_seconds:.3f} s ({result.evaluate_cpu_seconds:.3f} s CPU)",
        markup=False,
    )


def render_k8s_bench(console: Console, result: K8sBench) -> None:
    console.print(
        f"k8s on {result.nodes} nodes, {result.pods} pods: {result.seconds:.3f} s ({result.cpu_seconds:.3f} s CPU); "
        f"{result.feasible_nodes} feasible nodes scored by {len(result.scored_plugins)} plugins, "
        f"{result.top} in the top set",
        markup=False,
    )


def render_dra_bench(console: Console, result: DraBench) -> None:
    console.print(
        f"{result.nodes} nodes x {result.gpus_per_node} GPUs ({result.fragmented_nodes} fragmented), "
        f"prune={'on' if result.prune else 'off'}: {result.seconds:.3f} s ({result.cpu_seconds:.3f} s CPU); "
        f"{result.feasible_nodes} feasible nodes, "
        f"allocated on {result.node}: {', '.join(result.devices)}",
        markup=False,
    )


def render_mig_bench(console: Console, result: MigBench) -> None:
    bound = "-" if result.reconfigured_bound is None else f"{result.reconfigured_bound:g} reconfigured"
    console.print(
        f"mig plan on {result.gpus} GPUs ({result.nodes} nodes, "
        f"{'realistic' if result.realistic else 'random' if result.random_layouts else 'common'} "
        f"layouts; {result.classes} classes, {result.options} layouts to choose from): "
        f"demand {', '.join(f'{k}={v}' for k, v in result.demand.items())}; {result.status}, "
        f"{'met' if result.met else 'NOT met'}, {result.reconfigured} GPUs reconfigured, "
        f"{result.unused_slices} unused slices (bound {bound}); solve {result.solve_seconds:.3f} s, total "
        f"{result.seconds:.3f} s ({result.cpu_seconds:.2f} s of processor time), limit {result.time_limit:g} s "
        f"(first-fit reconfigures {result.first_fit_reconfigured}, met: {'yes' if result.first_fit_met else 'no'})",
        markup=False,
    )


def render_plan_bench(console: Console, result: PlanBench) -> None:
    gap = "-" if result.gap is None else f"{100 * result.gap:.2f}%"
    console.print(
        f"plan {result.jobs} jobs on {result.nodes} {'realistic ' if result.realistic else ''}nodes "
        f"({result.gpus} GPUs, {result.busy_fraction:.0%} busy"
        f"{', every node a different cpu and memory' if result.distinct_nodes else ''}): "
        f"{result.status} (gap {gap}), {result.jobs_placed} jobs placed, {result.weighted_gpus} weighted GPUs; "
        f"{result.seconds:.2f} s in all ({result.cpu_seconds:.2f} s of processor time), limit {result.time_limit:g} s "
        f"({result.build_seconds:.2f} s building, "
        f"{result.solve_seconds:.2f} s solving)",
        markup=False,
    )
    console.print(
        f"model: {result.node_classes} node classes ({result.binding_nodes} nodes where cpu or memory may run out), "
        f"{result.pod_shapes} pod shapes ({result.gpu_shapes} as the GPUs see them), {result.patterns} patterns",
        markup=False,
    )
    if result.ran_out:
        console.print(f"out of time: {', '.join(result.ran_out)}", markup=False)
    if result.warm_start is None:
        why = "proven without" if result.status == "OPTIMAL" else "out of time before"
        console.print(f"answer: the {result.source} plan, {why} a heuristic to start from", markup=False)
    else:
        console.print(
            f"answer: the {result.source} plan; started from {result.warm_start}: {result.warm_start_jobs} jobs, "
            f"{result.warm_start_weighted_gpus} weighted GPUs",
            markup=False,
        )
    for row in result.heuristics:
        done = row.seconds is not None
        console.print(
            f"heuristic {row.policy} (gang): {row.jobs_placed} jobs, {row.weighted_gpus} weighted GPUs "
            f"({row.seconds:.2f} s)"
            if done
            else f"heuristic {row.policy} (gang): not run: out of time",
            markup=False,
        )
    spent = ", ".join(f"{name} {seconds:.2f}" for name, seconds in result.phases.items())
    console.print(f"time: {spent}", markup=False)


def render_repair_bench(console: Console, result: RepairBench) -> None:
    console.print(
        f"{result.command} on {result.nodes} nodes ({result.running} running pods, {result.kinds} kinds of node): "
        f"{result.status} in {result.seconds:g} s ({result.cpu_seconds:g} s of processor time, limit "
        f"{result.time_limit:g} s; solver {result.solve_seconds:g} s); {result.objective}",
        markup=False,
    )


def render_explain_bench(console: Console, result: ExplainBench) -> None:
    state = "fits" if result.fits else f"Pending ({result.verdict})"
    console.print(
        f"explain on a {result.nodes}-node busy cluster ({result.running} running pods): {state}; "
        f"changes {', '.join(result.changes) or 'none'}; {result.seconds:g} s",
        markup=False,
    )


def render_scale_bench(console: Console, result: ScaleBench) -> None:
    rules = list(result.rows[0].baselines) if result.rows else []
    table = new_table(
        "pods",
        "shapes",
        "offerings",
        "status",
        "gap",
        "cost/h",
        "bound/h",
        *rules,
        "left pending",
        "CPU s",
        "all CPU s",
    )
    for row in result.rows:
        gap = "-" if row.gap is None else f"{100 * row.gap:.2f}%"
        bound = "-" if row.bound_per_hour is None else f"{row.bound_per_hour:g}"
        others = [
            f"{row.baselines[r]:g} (+{100 * (row.baselines[r] / row.cost_per_hour - 1):.1f}%)"
            if row.cost_per_hour
            else f"{row.baselines[r]:g}"
            for r in rules
        ]
        table.add_row(
            str(row.pending_pods), str(row.shapes), str(row.offerings), row.status, gap, f"{row.cost_per_hour:g}", bound,
            *others, str(row.unplaced), f"{row.cpu_seconds:.2f}", f"{row.all_cpu_seconds:.2f}",
        )  # fmt: skip
    console.print(table)
    console.print(
        f"time limit {result.time_limit:g} s, seed {result.seed}; cost per hour of each rule (over gpusched's)",
        markup=False,
    )
