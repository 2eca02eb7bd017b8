"""The two repartitionings an operator would try without a solver, to compare the optimum against.

- first-fit: for each missing instance (demand order), the first GPU in cluster order where it can be created
  next to everything already there, at its first legal start. Nothing is destroyed.
- all-balanced: the GPU Operator's default `all-balanced` config (2×1g + 1×2g + 1×3g) on every GPU whose busy
  instances fit inside it and whose node allows those profiles and runs the mixed strategy.
"""

from __future__ import annotations

from collections import Counter

from ....models.mig import placement_error
from .layouts import Instance, Layout, MigGpu, free_layouts, is_reconfigured, mixed_single

__all__ = ["BALANCED", "all_balanced", "first_fit"]

BALANCED = {19: 2, 14: 1, 9: 1}  # profile ID -> count: 2×1g, 1×2g, 1×3g


def first_fit(gpus: list[MigGpu], demand: dict[str, int]) -> dict[str, Layout]:
    """Create each missing instance on the first GPU that takes it; returns the layouts that changed."""
    layouts: dict[str, Layout] = {gpu.name: gpu.free for gpu in gpus}
    silent = mixed_single(gpus, layouts)  # advertise nothing as they are, and first-fit never changes them
    supply = Counter(name for gpu in gpus if gpu.node not in silent for name, _ in layouts[gpu.name] or ())
    peers: dict[str, list[MigGpu]] = {}
    for gpu in gpus:
        peers.setdefault(gpu.node, []).append(gpu)
    for name, count in demand.items():
        cursor = 0  # GPUs before it cannot take `name`, and never will: first-fit only adds instances
        for _ in range(count - supply[name]):
            while cursor < len(gpus) and not _try_add(gpus[cursor], name, layouts, peers):
                cursor += 1
            if cursor == len(gpus):
                break
    return {gpu.name: layouts[gpu.name] for gpu in gpus if layouts[gpu.name] != gpu.free}


def _try_add(gpu: MigGpu, name: str, layouts: dict[str, Layout], peers: dict[str, list[MigGpu]]) -> bool:
    """Add one `name` instance at its first legal start on this GPU, if the GPU and its node allow it."""
    if name not in gpu.allowed or (gpu.single and not _single_allows(name, layouts, peers[gpu.node])):
        return False
    layout = layouts[gpu.name] or ()
    for start in gpu.profiles[name].starts:
        if placement_error(gpu.profiles, list(gpu.kept + layout) + [(name, start)]) is None:
            layouts[gpu.name] = tuple(sorted(layout + ((name, start),), key=lambda i: i[1]))
            return True
    return False


def _single_allows(name: str, layouts: dict[str, Layout], on_node: list[MigGpu]) -> bool:
    """On a single-strategy node every instance has the same profile."""
    names = {n for g in on_node for n, _ in g.kept + (layouts[g.name] or ())}
    return names <= {name}


def all_balanced(gpus: list[MigGpu]) -> dict[str, Layout]:
    """`all-balanced` wherever it fits next to the busy instances; returns the layouts that changed."""
    changed: dict[str, Layout] = {}
    seen: dict[tuple, tuple[Instance, ...] | None] = {}  # identical GPUs get the same answer
    for gpu in gpus:
        key = (gpu.family, gpu.kept, gpu.free, gpu.allowed, gpu.single)
        if key not in seen:
            seen[key] = _balanced(gpu)
        layout = seen[key]
        if layout is not None and is_reconfigured(gpu, layout):
            changed[gpu.name] = layout
    return changed


def _balanced(gpu: MigGpu) -> tuple[Instance, ...] | None:
    """The free part of a balanced layout next to the busy instances, or None when there is none."""
    names = {profile.shape.profile_id: name for name, profile in gpu.profiles.items()}
    wanted = Counter({names[pid]: count for pid, count in BALANCED.items()})
    if gpu.single or not set(wanted) <= set(gpu.allowed):
        return None
    if gpu.free is not None and Counter(n for n, _ in gpu.kept + gpu.free) == wanted:
        return gpu.free
    for layout in free_layouts(gpu, tuple(wanted)):
        if Counter(n for n, _ in gpu.kept + layout) == wanted:
            return layout
    return None
