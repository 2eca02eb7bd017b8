"""Figures of a cluster for people who would rather look than read tables: fragmentation and the GPU map.

Built on matplotlib's object API with the Agg canvas, so importing this never touches pyplot's global state or
needs a display. The data come from the library (FragReport, ClusterMap); this module only draws. Every figure keeps
a size a screen shows whole from 5 nodes to thousands: nodes are grouped by kind (model, count, sharing) and sorted
by free GPUs; above LABELLED_ROWS nodes the map is a heat-map grid of one cell per node, and frag draws histograms
of nodes by free GPUs rather than a bar per node.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from math import ceil
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PatchCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from ..files import write_files
from ..models.mig import MEMORY_SLICES
from ..planner.frag import FragReport, FragRow
from ..planner.gpumap import ClusterMap, MapGpu, MapNode

__all__ = ["COLOURS", "by_kind", "frag_figure", "map_figure", "save"]

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
LABELLED_ROWS = 64  # up to this many nodes the map draws every GPU, with its index and holder; above, a grid
GRID_COLUMNS = 40  # nodes per row of the heat-map grid
KIND_SHADES = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
HOLDER_CHARS = 10  # a busy cell names its holder, cut to this many characters
DPI = 100


def save(figure: Figure, path: Path) -> None:
    """Write as the name says (.png, .svg, .pdf) through gpusched.files' safe writer, so a failed write leaves
    nothing half-written."""
    FigureCanvasAgg(figure)  # the figure draws on Agg, whatever pyplot's backend is
    kind = path.suffix.lower().lstrip(".")
    write_files([(str(path), lambda handle: figure.savefig(handle, format=kind, dpi=DPI))])


# --- grouping nodes ---------------------------------------------------------------------------------------------


def by_kind(nodes: Iterable[MapNode]) -> list[tuple[str, list[MapNode]]]:
    """Nodes grouped by kind (the kinds with most GPUs first), each group sorted by free GPUs, most first."""
    groups: dict[str, list[MapNode]] = {}
    for node in nodes:
        groups.setdefault(node.kind, []).append(node)
    ordered = sorted(groups.items(), key=lambda item: (-sum(n.gpus for n in item[1]), item[0]))
    return [(kind, sorted(members, key=lambda n: (-n.free, n.node))) for kind, members in ordered]


# --- frag ----------------------------------------------------------------------------------------------------------


def _island_pct(report: FragReport, row: FragRow) -> float:
    """Stranded % when every pod must sit inside one NVLink island (frag's table gives the count view)."""
    return 100.0 * (report.free - row.pods_in_island * row.size) / report.free if report.free else 0.0


def _free_histogram(axis: Axes, report: FragReport, nodes: list[MapNode]) -> None:
    """(a) Nodes by free exclusive GPUs, stacked by kind; a dashed line at each job size: nodes right of it take one."""
    groups = by_kind(nodes)
    most = max((node.gpus for node in nodes), default=0)
    xs = list(range(most + 1))
    bottom = [0] * len(xs)
    for number, (kind, members) in enumerate(groups):
        counts = [sum(1 for node in members if node.free == x) for x in xs]
        shade = KIND_SHADES[number % len(KIND_SHADES)]
        axis.bar(
            xs, counts, bottom=bottom, color=shade, edgecolor="white", linewidth=0.5, label=f"{kind} ({len(members)})"
        )
        bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    for row in report.rows:
        if row.size <= most:
            axis.axvline(row.size - 0.5, linestyle="--", color="black", linewidth=0.7)
            axis.text(row.size - 0.45, 0.97, f"{row.size}-GPU", fontsize=7, va="top",
                      transform=axis.get_xaxis_transform())  # fmt: skip
    axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_ylim(0, max(max(bottom, default=0), 1) * 1.3)  # room for the sizes and the legend above the bars
    axis.set_xticks(xs if len(xs) <= 17 else xs[:: max(1, len(xs) // 16)])
    axis.set_xlabel("free exclusive GPUs on the node (dashed: a job size; nodes right of it take one by count)")
    axis.set_ylabel("nodes")
    axis.set_title(f"(a) {len(nodes)} nodes by free GPUs, by kind")
    axis.legend(loc="upper right", fontsize=7, title="kind (nodes)", title_fontsize=7)
    if not nodes:
        axis.text(0.5, 0.5, "no node has GPUs", ha="center", va="center", transform=axis.transAxes)


def _stranded_by_size(axis: Axes, report: FragReport, nodes: list[MapNode]) -> None:
    """(b) Stranded % per job size, by count and inside one NVLink island; only for sizes some node (island) could
    hold at all: a size bigger than every node strands nothing, it never fits."""
    node_max = max((node.gpus for node in nodes), default=0)
    island_max = max((node.largest_island for node in nodes), default=0)
    sizes = [row.size for row in report.rows]
    series = {
        "count": [row.stranded_pct if row.size <= node_max else None for row in report.rows],
        "island": [_island_pct(report, row) if row.size <= island_max else None for row in report.rows],
    }
    labels = {"count": "by count (extended resources)", "island": "inside one NVLink island"}
    for offset, (kind, values) in zip((-0.2, 0.2), series.items(), strict=True):
        shown = [(x + offset, v) for x, v in enumerate(values) if v is not None]
        bars = axis.bar(
            [x for x, _ in shown], [v for _, v in shown], width=0.4, color=COLOURS[kind], label=labels[kind]
        )
        axis.bar_label(bars, labels=[f"{v:.0f}%" for _, v in shown], fontsize=7)
        for x, value in enumerate(values):
            if value is None:
                axis.text(x + offset, 2, "no node" if kind == "count" else "no island", rotation=90, fontsize=6,
                          ha="center", va="bottom", color=COLOURS[kind])  # fmt: skip
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


def frag_figure(report: FragReport, nodes: list[MapNode]) -> Figure:
    """Nodes by free GPUs (by kind) beside stranded % per job size: one picture of `gpusched frag`, the same size
    for 5 nodes or 5,000. `nodes`: every node with GPUs (gpusched.planner.gpumap.node_summaries)."""
    figure = Figure(figsize=(13, 5), layout="constrained")
    free, stranded = figure.subplots(1, 2, width_ratios=[7, 6])
    _free_histogram(free, report, nodes)
    _stranded_by_size(stranded, report, nodes)
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
    """Backgrounds (MIG slices in no instance show through) and segments, as two collections: one artist each."""
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


def _holder(gpu: MapGpu) -> str:
    """Who holds the GPU, short: `train-8`, `chat +2` for three replicas' pods."""
    if not gpu.holders:
        return ""
    name = gpu.holders[0].rpartition("/")[2]
    name = name if len(name) <= HOLDER_CHARS else name[: HOLDER_CHARS - 1] + "…"
    return name + (f" +{len(gpu.holders) - 1}" if len(gpu.holders) > 1 else "")


def _draw_labels(axis: Axes, cells: list[tuple[float, int, MapGpu]]) -> None:
    """The GPU index in each cell (islands reorder them), and below it the pod holding it; left out of the layout,
    which would measure each one."""
    for x, row, gpu in cells:
        holder = _holder(gpu)
        axis.text(x + 0.5, row + (0.38 if holder else 0.5), str(gpu.index), ha="center", va="center", fontsize=7,
                  in_layout=False)  # fmt: skip
        if holder:
            axis.text(x + 0.5, row + 0.7, holder, ha="center", va="center", fontsize=4.5, in_layout=False)


def _draw_outlines(axis: Axes, outlines: list[tuple[float, int, int]]) -> None:
    boxes = [Rectangle((x, row + 0.06), width, 0.88) for x, row, width in outlines]
    axis.add_collection(PatchCollection(boxes, facecolors="none", edgecolors="black", linewidths=1.6))


def _legend(size: int, placement: str) -> list[Patch]:
    where = "island" if placement == "island" else "node"
    labels = {
        "free": f"free (an {where} of fewer than {size} GPUs strands none)"
        if where == "island"
        else f"free (a {where} of fewer than {size} GPUs strands none)",
        "stranded": f"free, stranded: {where} left too small for {size}",
        "busy": "busy (the pod under the index)",
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
    return f"GPU map of {len(cluster.nodes)} nodes, stranded for {cluster.size}-GPU pods {how}: {counts}"


def map_figure(cluster: ClusterMap) -> Figure:
    """Every GPU as a cell up to LABELLED_ROWS nodes, else one cell per node: grouped by kind, most free first."""
    if len(cluster.nodes) > LABELLED_ROWS:
        return _grid_figure(cluster)
    gpus_of = {node: list(gpus) for node, gpus in groupby(cluster.gpus, key=lambda gpu: gpu.node)}
    rows: list[tuple[str, list[MapGpu]]] = []
    headers: list[tuple[int, str]] = []
    for kind, members in by_kind(cluster.nodes):
        headers.append((len(rows), f"{kind}: {len(members)} node(s), most free GPUs first"))
        rows += [("", [])] + [(node.node, gpus_of[node.node]) for node in members]
    cells, outlines = _layout([gpus for _, gpus in rows])
    columns = max((x + width for x, _, width in outlines), default=1.0)
    figure = Figure(figsize=(max(8.0, 2.5 + 0.7 * columns), 2.6 + 0.4 * len(rows)), layout="constrained")
    axis = figure.subplots()
    _draw_cells(axis, cells)
    _draw_outlines(axis, outlines)
    _draw_labels(axis, cells)
    for row, text in headers:
        axis.text(0, row + 0.7, text, fontsize=8, fontweight="bold", va="center", in_layout=False)
    axis.set_xlim(-0.05, columns + 0.05)
    axis.set_ylim(len(rows), 0)  # first node on top
    axis.set_yticks([row + 0.5 for row in range(len(rows))], [node for node, _ in rows], fontsize=8)
    axis.set_xticks([])
    axis.set_xlabel("GPUs grouped by NVLink island (numbers: GPU index; under it, the pod holding it)")
    axis.tick_params(length=0)
    for spine in axis.spines.values():
        spine.set_visible(False)
    axis.set_title(_map_title(cluster), fontsize=9)
    figure.legend(handles=_legend(cluster.size, cluster.placement), loc="outside lower center", ncol=4, fontsize=8)
    return figure


# --- map, pool scale: one cell per node ---------------------------------------------------------------------------

GRID = {
    "room": "#1a9641",  # free GPUs that take a pod of the size: the more pods, the darker
    "room light": "#a6d96a",
    "stranded": COLOURS["stranded"],  # free GPUs, none of them enough for a pod of the size
    "small": "#d9ef8b",  # free GPUs on a node with no group of the size at all: not stranded
    "full": COLOURS["busy"],
    "shared": "#9e7cc1",  # MIG or time-sliced: shares in use
}


def _grid_colour(node: MapNode, cluster: ClusterMap) -> tuple[float, float, float, float]:
    """The node's category, its shade the share of its GPUs free (so the sort by free GPUs shows)."""
    if "MIG" in node.kind or "time-sliced" in node.kind:
        key = "shared"
    elif node.fits:
        key = "room" if node.fits * cluster.size * 2 > node.gpus else "room light"
    elif node.free:
        key = "stranded" if node.stranded else "small"
    else:
        key = "full"
    shade = 1.0 if key in ("shared", "full") or not node.gpus else 0.35 + 0.65 * node.free / node.gpus
    return to_rgba(GRID[key], shade)


def _grid_legend(size: int) -> list[Patch]:
    labels = {
        "room": f"room for {size}-GPU pods, over half the node",
        "room light": f"room for {size}-GPU pods",
        "stranded": f"free GPUs, none enough for {size} (stranded; paler: fewer free)",
        "small": f"free GPUs, no island or node of {size} (paler: fewer free)",
        "full": "no free GPU",
        "shared": "MIG or time-sliced",
    }
    return [Patch(facecolor=GRID[key], label=label) for key, label in labels.items()]


def _grid_figure(cluster: ClusterMap) -> Figure:
    """A heat-map grid: a block per kind, one cell per node, GRID_COLUMNS to a row, most free GPUs first."""
    blocks = by_kind(cluster.nodes)
    cells: list[tuple[int, float, tuple[float, float, float, float]]] = []
    headers: list[tuple[float, str]] = []
    top = 0.0
    for kind, members in blocks:
        free = sum(node.free for node in members)
        stranded = sum(node.stranded for node in members)
        headers.append((top, f"{kind}: {len(members)} nodes, {free} free GPUs, {stranded} stranded"))
        top += 1.2
        for at, node in enumerate(members):
            cells.append((at % GRID_COLUMNS, top + at // GRID_COLUMNS, _grid_colour(node, cluster)))
        top += ceil(len(members) / GRID_COLUMNS) + 0.4
    figure = Figure(figsize=(12, 2.0 + 0.26 * top), layout="constrained")
    axis = figure.subplots()
    squares = [Rectangle((x + 0.05, y + 0.05), 0.9, 0.9) for x, y, _ in cells]
    axis.add_collection(PatchCollection(squares, facecolors=[c for _, _, c in cells], edgecolors="none"))
    for y, text in headers:
        axis.text(0, y + 0.75, text, fontsize=8, fontweight="bold", va="center", in_layout=False)
    axis.set_xlim(0, GRID_COLUMNS)
    axis.set_ylim(top, 0)
    axis.set_xticks([])
    axis.set_yticks([])
    for spine in axis.spines.values():
        spine.set_visible(False)
    axis.set_title(_map_title(cluster) + "; one cell per node, most free first", fontsize=9)
    figure.legend(handles=_grid_legend(cluster.size), loc="outside lower center", ncol=3, fontsize=8)
    return figure
