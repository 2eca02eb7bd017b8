"""Figures of a cluster for people who would rather look than read tables: fragmentation and the GPU map.

Built on matplotlib's object API with the Agg canvas, so importing this never touches pyplot's global state or
needs a display. The data come from the library (FragReport, ClusterMap); this module only draws.
"""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..files import write_files
from ..models.mig import MEMORY_SLICES
from ..planner.frag import FragReport, FragRow
from ..planner.gpumap import ClusterMap, MapGpu

__all__ = ["COLOURS", "frag_figure", "map_figure", "save"]

COLOURS = {
    "free": "#4daf4a",
    "stranded": "#e41a1c",
    "busy": "#7f7f7f",
    "unpartitioned": "#d9d9d9",
    "mig used": "#9e7cc1",
    "mig free": "#cab2d6",
    "replica used": "#4a90c8",
    "replica free": "#a6cee3",
    "count": "#ff7f00",
    "island": "#377eb8",
}
ISLAND_SHADES = ("#4daf4a", "#a1d99b")  # neighbouring islands alternate, so each segment stands out
ISLAND_GAP = 0.25  # cells between NVLink islands of a node
MAX_INCHES = 200  # a map of thousands of nodes stays a picture matplotlib can write
LABELLED_ROWS = 64  # above this many nodes the map is an overview: no GPU index in each cell (--json has them)
DPI = 100


def save(figure: Figure, path: Path) -> None:
    """Write as the name says (.png, .svg, .pdf) through gpusched.files' safe writer, so a failed write leaves
    nothing half-written."""
    FigureCanvasAgg(figure)  # the figure draws on Agg, whatever pyplot's backend is
    kind = path.suffix.lower().lstrip(".")
    write_files([(str(path), lambda handle: figure.savefig(handle, format=kind, dpi=DPI))])


# --- frag ----------------------------------------------------------------------------------------------------------


def _island_pct(report: FragReport, row: FragRow) -> float:
    """Stranded % when every pod must sit inside one NVLink island (frag's table gives the count view)."""
    return 100.0 * (report.free - row.pods_in_island * row.size) / report.free if report.free else 0.0


def _island_segments(report: FragReport) -> list[tuple[int, int, list[int], str]]:
    """(x, bottom, GPU indices, shade) of each island's segment in its node's bar; a node's islands alternate."""
    segments = []
    for x, node in enumerate(report.nodes):
        bottom = 0
        for number, members in enumerate(node.islands):
            segments.append((x, bottom, members, ISLAND_SHADES[number % 2]))
            bottom += len(members)
    return segments


def _free_by_island(axis: Axes, report: FragReport) -> None:
    """(a) One bar per node with free GPUs, one segment per NVLink island, the largest job size as a line."""
    names = [node.node for node in report.nodes]
    segments = _island_segments(report)
    axis.bar(
        [x for x, _, _, _ in segments],
        [len(members) for _, _, members, _ in segments],
        bottom=[bottom for _, bottom, _, _ in segments],
        color=[shade for _, _, _, shade in segments],
        edgecolor="white",
        linewidth=1.5,
    )
    if len(names) <= LABELLED_ROWS:  # beyond that the bars are too thin to read indices on
        for x, bottom, members, _ in segments:
            axis.text(
                x, bottom + len(members) / 2, _indices(members), ha="center", va="center", fontsize=7, in_layout=False
            )
    largest = max(row.size for row in report.rows)
    axis.axhline(largest, linestyle="--", color="black", linewidth=0.8, label=f"a {largest}-GPU job")
    crowded = len(names) > 4
    axis.set_xticks(
        range(len(names)), names, rotation=30 if crowded else 0, ha="right" if crowded else "center", fontsize=8
    )
    axis.set_ylabel("free GPUs (segments: NVLink islands)")
    axis.set_title("(a) free GPUs per node, by NVLink island")
    axis.legend(loc="upper right", fontsize=8)
    if not names:
        axis.text(0.5, 0.5, "no free exclusive GPUs", ha="center", va="center", transform=axis.transAxes)


def _indices(members: list[int]) -> str:
    """GPU indices as ranges: [0, 1, 2, 5] -> 0-2,5."""
    runs = [[i for _, i in run] for _, run in groupby(enumerate(members), key=lambda pair: pair[1] - pair[0])]
    return ",".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def _stranded_by_size(axis: Axes, report: FragReport) -> None:
    """(b) Stranded % per job size, placed by count (extended resources) and inside one NVLink island."""
    sizes = [row.size for row in report.rows]
    series = {
        "count": [row.stranded_pct for row in report.rows],
        "island": [_island_pct(report, row) for row in report.rows],
    }
    labels = {"count": "by count (extended resources)", "island": "inside one NVLink island"}
    for offset, (kind, values) in zip((-0.2, 0.2), series.items(), strict=True):
        positions = [x + offset for x in range(len(sizes))]
        bars = axis.bar(positions, values, width=0.4, color=COLOURS[kind], label=labels[kind])
        axis.bar_label(bars, labels=[f"{v:.0f}%" for v in values], fontsize=7)
    axis.set_xticks(range(len(sizes)), [str(size) for size in sizes])
    axis.set_ylim(0, 115)
    axis.set_xlabel("job size (GPUs per pod)")
    axis.set_ylabel("free GPUs stranded (%)")
    axis.set_title("(b) free GPUs no pod of this size can use")
    axis.legend(loc="upper left", fontsize=8)


def _frag_title(report: FragReport) -> str:
    mig_free = sum(sum(gpu.free.values()) for gpu in report.mig)
    mig = f"; MIG: {mig_free} free instances on {len(report.mig)} GPUs" if report.mig else ""
    return (
        f"{report.free} free exclusive GPUs; largest block on one node {report.largest_node}, "
        f"inside one NVLink island {report.largest_island}{mig}"
    )


def frag_figure(report: FragReport) -> Figure:
    """Free GPUs per node by island beside stranded % per job size: one picture of `gpusched frag`."""
    width = min(MAX_INCHES, max(6.0, 0.5 * len(report.nodes) + 2))
    figure = Figure(figsize=(width + 6, 5), layout="constrained")
    free, stranded = figure.subplots(1, 2, width_ratios=[width, 6])
    _free_by_island(free, report)
    _stranded_by_size(stranded, report)
    figure.suptitle(_frag_title(report), fontsize=10)
    return figure


# --- map -----------------------------------------------------------------------------------------------------------


def _segments(gpu: MapGpu) -> list[tuple[float, float, str]]:
    """(left, width, colour) within a unit-wide cell: MIG instances where they sit, replicas side by side."""
    if gpu.state == "mig":
        unit = 1 / MEMORY_SLICES
        return [
            (i.start * unit, i.slices * unit, COLOURS["mig used" if i.holder else "mig free"]) for i in gpu.instances
        ]
    if gpu.state == "time-sliced":
        unit = 1 / gpu.replicas
        used = len(gpu.holders)
        return [(r * unit, unit, COLOURS["replica used" if r < used else "replica free"]) for r in range(gpu.replicas)]
    return [(0.0, 1.0, COLOURS[gpu.state])]


def _islands(gpus: list[MapGpu]) -> list[list[MapGpu]]:
    """A node's GPUs by NVLink island, in island order (an island need not be a run of indices)."""
    ordered = sorted(gpus, key=lambda gpu: (gpu.island, gpu.index))
    return [list(island) for _, island in groupby(ordered, key=lambda gpu: gpu.island)]


def _layout(rows: list[list[MapGpu]]) -> tuple[list[tuple[float, int, MapGpu]], list[tuple[float, int, int]]]:
    """Where each GPU cell (x, row, GPU) and each island outline (x, row, width) goes: a gap between islands."""
    cells: list[tuple[float, int, MapGpu]] = []
    outlines: list[tuple[float, int, int]] = []
    for row, gpus in enumerate(rows):
        x = 0.0
        for island in _islands(gpus):
            cells += [(x + offset, row, gpu) for offset, gpu in enumerate(island)]
            outlines.append((x, row, len(island)))
            x += len(island) + ISLAND_GAP
    return cells, outlines


def _draw_cells(axis: Axes, cells: list[tuple[float, int, MapGpu]]) -> None:
    """Backgrounds (MIG slices in no instance show through) and segments, as two collections: one artist each, so
    that a map of thousands of GPUs draws in seconds."""
    backgrounds = [Rectangle((x, row + 0.12), 1, 0.76) for x, row, _ in cells]
    axis.add_collection(PatchCollection(backgrounds, facecolors=COLOURS["unpartitioned"], edgecolors="white"))
    segments = [
        (Rectangle((x + left, row + 0.12), width, 0.76), colour)
        for x, row, gpu in cells
        for left, width, colour in _segments(gpu)
    ]
    axis.add_collection(
        PatchCollection(
            [r for r, _ in segments], facecolors=[c for _, c in segments], edgecolors="white", linewidths=0.5
        )
    )


def _draw_indices(axis: Axes, cells: list[tuple[float, int, MapGpu]]) -> None:
    """The GPU index in each cell (islands reorder them); left out of the layout, which would measure each one."""
    for x, row, gpu in cells:
        axis.text(x + 0.5, row + 0.5, str(gpu.index), ha="center", va="center", fontsize=7, in_layout=False)


def _draw_outlines(axis: Axes, outlines: list[tuple[float, int, int]]) -> None:
    boxes = [Rectangle((x, row + 0.06), width, 0.88) for x, row, width in outlines]
    axis.add_collection(PatchCollection(boxes, facecolors="none", edgecolors="black", linewidths=1.6))


def _legend(size: int, placement: str) -> list[Patch]:
    where = "island" if placement == "island" else "node"
    labels = {
        "free": f"free (room for {size}-GPU pods)",
        "stranded": f"free, stranded: {where} too small for {size}",
        "busy": "busy",
        "mig used": "MIG instance, used",
        "mig free": "MIG instance, free",
        "replica used": "time-sliced replica, used",
        "replica free": "time-sliced replica, free",
        "unpartitioned": "MIG slices in no instance",
    }
    patches = [Patch(facecolor=COLOURS[key], label=label) for key, label in labels.items()]
    return [*patches, Patch(fill=False, edgecolor="black", linewidth=1.6, label="NVLink island")]


def _map_title(cluster: ClusterMap) -> str:
    how = "inside one NVLink island" if cluster.placement == "island" else "by count on one node"
    counts = ", ".join(f"{count} {state}" for state, count in cluster.counts.items())
    return f"GPU map, stranded for {cluster.size}-GPU pods {how}: {counts}"


def map_figure(cluster: ClusterMap) -> Figure:
    """Nodes as rows of GPU cells coloured by state, islands outlined, node names on the left, legend below."""
    rows = [(node, list(gpus)) for node, gpus in groupby(cluster.gpus, key=lambda gpu: gpu.node)]
    cells, outlines = _layout([gpus for _, gpus in rows])
    columns = max((x + width for x, _, width in outlines), default=1.0)
    height = min(MAX_INCHES, 2.6 + 0.4 * len(rows))
    figure = Figure(figsize=(max(8.0, 2.5 + 0.7 * columns), height), layout="constrained")
    axis = figure.subplots()
    _draw_cells(axis, cells)
    _draw_outlines(axis, outlines)
    labelled = len(rows) <= LABELLED_ROWS
    if labelled:
        _draw_indices(axis, cells)
    axis.set_xlim(-0.05, columns + 0.05)
    axis.set_ylim(len(rows), 0)  # first node on top
    axis.set_yticks([row + 0.5 for row in range(len(rows))], [node for node, _ in rows], fontsize=8)
    axis.set_xticks([])
    axis.set_xlabel("GPUs grouped by NVLink island" + (" (numbers: GPU index)" if labelled else ""))
    axis.tick_params(length=0)
    for spine in axis.spines.values():
        spine.set_visible(False)
    axis.set_title(_map_title(cluster), fontsize=9)
    figure.legend(handles=_legend(cluster.size, cluster.placement), loc="outside lower center", ncol=4, fontsize=8)
    return figure
