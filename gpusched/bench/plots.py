"""PNG plots of the benchmarks (matplotlib, no display needed). Policies whose curves lie on top of each other stay
apart: each has its own colour, dash pattern and marker, and the openb figure adds each policy's distance below
the best one at every point, where equal curves separate."""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

if TYPE_CHECKING:
    from .openb_bench import OpenbBench
    from .replay import ReplayBench
    from .synthetic_bench import SyntheticBench

__all__ = ["plot_openb", "plot_replay", "plot_synthetic"]


_DASHES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1)), (0, (1, 1)), (0, (5, 2, 1, 2))]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


def _style(number: int, points: int) -> dict:
    """The plot keywords of the n-th policy: colour, dashes and marker all differ, markers spread along the curve
    (shifted per policy, so coinciding curves show every marker)."""
    every = max(1, points // 8)
    return {
        "color": f"C{number % 10}",
        "linestyle": _DASHES[number % len(_DASHES)],
        "marker": _MARKERS[number % len(_MARKERS)],
        "markevery": (number % every, every),
        "markersize": 4,
        "linewidth": 1.4,
    }


def _grid(count: int, width: float = 6.0, height: float = 4.0):
    columns = min(count, 3)
    rows = (count + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    for extra in axes.flat[count:]:
        extra.set_visible(False)
    return figure, list(axes.flat)


def plot_openb(result: OpenbBench, path: Path | IO[bytes]) -> None:
    """Unallocated GPU % against arrived workload %, one panel per trace, as the FGD paper draws it; under each,
    every policy's distance below the best one (curves that coincide above separate there)."""
    columns = min(len(result.traces), 3)
    rows = (len(result.traces) + columns - 1) // columns
    figure, axes = plt.subplots(
        2 * rows, columns, figsize=(6.0 * columns, 6.0 * rows), squeeze=False, height_ratios=[3, 2] * rows
    )
    for extra in range(len(result.traces), rows * columns):
        axes[2 * (extra // columns)][extra % columns].set_visible(False)
        axes[2 * (extra // columns) + 1][extra % columns].set_visible(False)
    for at, trace in enumerate(result.traces):
        axis, below = axes[2 * (at // columns)][at % columns], axes[2 * (at // columns) + 1][at % columns]
        curves = {s.policy: {x: y for x, y in enumerate(s.curve) if y is not None} for s in trace.policies}
        best = {x: max(curve[x] for curve in curves.values() if x in curve) for x in set().union(*curves.values())}
        for number, (policy, curve) in enumerate(curves.items()):
            xs = sorted(curve)
            style = _style(number, len(xs))
            axis.plot(xs, [100 - curve[x] for x in xs], label=policy, **style)
            below.plot(xs, [best[x] - curve[x] for x in xs], label=policy, **style)
        axis.plot([0, 100], [100, 0], linestyle=":", color="grey", label="ideal")
        if trace.upper_pct is not None:
            axis.axhline(
                100 - trace.upper_pct, linestyle="--", color="black", linewidth=0.8, label="offline upper bound"
            )
        for panel in (axis, below):
            panel.set_xlim(70, 130)
            panel.grid(alpha=0.4)
        axis.set_ylim(0, 30)
        axis.set_title(f"{trace.trace}: {trace.nodes} nodes, {trace.gpus} GPUs, mean of {len(trace.seeds)} seeds")
        axis.set_ylabel("unallocated GPU (%)")
        below.set_ylim(bottom=0)
        below.set_xlabel("arrived workload (% of GPU capacity)")
        below.set_ylabel("below the best (points)")
    axes[0][0].legend(fontsize=8, loc="upper left", ncol=2)
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=110)
    plt.close(figure)


def plot_synthetic(result: SyntheticBench, path: Path | IO[bytes]) -> None:
    """GPUs placed as a share of the optimum, and time, against cluster size, per heuristic."""
    figure, (placed, seconds) = plt.subplots(1, 2, figsize=(12, 4.5))
    sizes = [row.nodes for row in result.rows]
    for number, name in enumerate(result.heuristics):
        style = _style(number, len(sizes))
        placed.plot(sizes, [row.heuristic(name).gpus_placed_pct for row in result.rows], label=name, **style)
        seconds.plot(sizes, [row.heuristic(name).seconds for row in result.rows], label=name, **style)
    seconds.plot(
        sizes, [row.optimum_seconds for row in result.rows], marker="s", color="black", label="optimum (CP-SAT)"
    )
    for axis in (placed, seconds):
        axis.set_xscale("log")
        axis.set_xlabel("nodes")
        axis.grid(alpha=0.4)
    placed.set_ylabel("GPUs placed (% of the optimum)")
    seconds.set_ylabel("seconds")
    seconds.set_yscale("log")
    placed.legend(fontsize=8)
    seconds.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=110)
    plt.close(figure)


def plot_replay(result: ReplayBench, path: Path | IO[bytes]) -> None:
    """Allocation and waiting pods over the busy part of the replay, per policy."""
    figure, (allocation, pending) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    last = max(point.seconds for policy in result.policies for point in policy.timeline)
    unit, scale = ("hours", 3600.0) if last > 7200 else ("seconds", 1.0)
    for number, policy in enumerate(result.policies):
        x = [point.seconds / scale for point in policy.timeline]
        style = _style(number, len(x))
        allocation.plot(x, [point.allocation_pct for point in policy.timeline], label=policy.policy, **style)
        pending.plot(x, [point.pending for point in policy.timeline], label=policy.policy, **style)
    allocation.set_ylabel("GPU allocation (%)")
    pending.set_ylabel("waiting pods")
    pending.set_xlabel(f"{unit} since the first arrival (after a {result.speedup:g}× speedup)")
    allocation.set_title(f"{result.trace}: replay of creation and deletion times")
    for axis in (allocation, pending):
        axis.grid(alpha=0.4)
    allocation.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=110)
    plt.close(figure)
