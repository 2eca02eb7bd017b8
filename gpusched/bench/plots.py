"""PNG plots of the benchmarks (matplotlib, no display needed)."""

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


def _grid(count: int, width: float = 6.0, height: float = 4.0):
    columns = min(count, 3)
    rows = (count + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    for extra in axes.flat[count:]:
        extra.set_visible(False)
    return figure, list(axes.flat)


def plot_openb(result: OpenbBench, path: Path | IO[bytes]) -> None:
    """Unallocated GPU % against arrived workload %, one panel per trace, as the FGD paper draws it."""
    figure, axes = _grid(len(result.traces))
    for axis, trace in zip(axes, result.traces, strict=False):
        for summary in trace.policies:
            points = [(x, 100 - y) for x, y in enumerate(summary.curve) if y is not None]
            axis.plot([x for x, _ in points], [y for _, y in points], label=summary.policy, linewidth=1.5)
        axis.plot([0, 100], [100, 0], linestyle=":", color="grey", label="ideal")
        if trace.upper_pct is not None:
            axis.axhline(
                100 - trace.upper_pct, linestyle="--", color="black", linewidth=0.8, label="offline upper bound"
            )
        axis.set_xlim(70, 130)
        axis.set_ylim(0, 30)
        axis.set_title(f"{trace.trace}: {trace.nodes} nodes, {trace.gpus} GPUs, mean of {len(trace.seeds)} seeds")
        axis.set_xlabel("arrived workload (% of GPU capacity)")
        axis.set_ylabel("unallocated GPU (%)")
        axis.grid(alpha=0.4)
    axes[0].legend(fontsize=8, loc="upper right", ncol=2)
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=110)
    plt.close(figure)


def plot_synthetic(result: SyntheticBench, path: Path | IO[bytes]) -> None:
    """GPUs placed as a share of the optimum, and time, against cluster size, per heuristic."""
    figure, (placed, seconds) = plt.subplots(1, 2, figsize=(12, 4.5))
    sizes = [row.nodes for row in result.rows]
    for name in result.heuristics:
        placed.plot(sizes, [row.heuristic(name).gpus_placed_pct for row in result.rows], marker="o", label=name)
        seconds.plot(sizes, [row.heuristic(name).seconds for row in result.rows], marker="o", label=name)
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
    for policy in result.policies:
        x = [point.seconds / scale for point in policy.timeline]
        allocation.plot(x, [point.allocation_pct for point in policy.timeline], label=policy.policy, linewidth=1.2)
        pending.plot(x, [point.pending for point in policy.timeline], label=policy.policy, linewidth=1.2)
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
