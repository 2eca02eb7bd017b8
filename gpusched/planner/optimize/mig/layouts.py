"""MIG repartitioning, what every planner of it shares: the GPUs that may change, the demand, the layouts a GPU
may take, and what a set of layouts achieves.

Words used throughout (and in the README):
- a *layout* is the set of free instances (profile, start) a GPU has; busy instances (with a holder) are never in
  it, because they are never touched; ``None`` is a whole GPU with MIG disabled;
- a GPU is *reconfigured* when its set of instances changes: a free instance destroyed or created, or MIG
  enabled on a whole GPU. A GPU whose free instances stay exactly as they are is not reconfigured, whatever
  happens elsewhere on its node;
- *unused slices* are the compute slices of reconfigured GPUs that end up in no instance: capacity that was
  drained for and that only another reconfiguration could use.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from pydantic import BaseModel

from ....errors import InputError, LimitError
from ....limits import MAX_PODS
from ....models.cluster import Cluster
from ....models.mig import (
    COMPUTE_SLICES,
    MEMORY_SLICES,
    MigProfile,
    mig_family,
    profiles_for,
)
from ....models.workload import Pod

__all__ = [
    "Instance",
    "Layout",
    "MigGpu",
    "NewInstance",
    "RepartitionOutcome",
    "check_demand",
    "compute_of",
    "demand_from_pods",
    "free_layouts",
    "instances_after",
    "inventory",
    "is_reconfigured",
    "outcome",
    "parse_demand",
]

Instance = tuple[str, int]  # (profile name, first memory slice)
Layout = tuple[Instance, ...] | None  # free instances after the plan, sorted by start; None: a whole GPU
NewInstance = tuple[str, int, str | None]  # (profile, start, holder): every instance of a GPU after a plan


@dataclass(frozen=True)
class MigGpu:
    """A GPU a MIG plan may change: one that runs MIG, or an idle whole GPU of a MIG-capable model."""

    node: str
    index: int
    family: str
    busy: tuple[tuple[str, int, str], ...]  # (profile, start, holder): stays exactly where it is
    free: Layout  # the free instances now; None: MIG disabled (a whole, idle GPU)
    allowed: tuple[str, ...]  # profiles the node's MIG configuration may create
    single: bool  # the node's device plugin runs the single strategy: one profile per node
    profiles: dict[str, MigProfile] = field(compare=False, repr=False)

    @cached_property
    def kept(self) -> tuple[Instance, ...]:
        return tuple((profile, start) for profile, start, _ in self.busy)

    @property
    def whole(self) -> bool:
        return self.free is None

    @property
    def name(self) -> str:
        return f"{self.node}/{self.index}"


def inventory(cluster: Cluster) -> list[MigGpu]:
    """Every GPU that runs MIG, and every idle whole GPU that could, in node order then GPU index."""
    gpus = []
    for node in cluster.nodes:
        block = node.gpu
        if block is None or block.replicas > 1 or mig_family(block.model, block.memory_gib) is None:
            continue
        profiles = profiles_for(block.model, block.memory_gib)
        family = mig_family(block.model, block.memory_gib) or ""
        allowed = tuple(name for name in profiles if block.mig_profiles is None or name in block.mig_profiles)
        busy_whole = {entry.gpu for entry in block.busy}
        for index in range(block.count):
            instances = sorted((m for m in block.mig if m.gpu == index), key=lambda m: m.start)
            if not instances and index in busy_whole:
                continue
            busy = tuple((m.profile, m.start, m.holder) for m in instances if m.holder is not None)
            free = tuple((m.profile, m.start) for m in instances if m.holder is None) if instances else None
            gpus.append(MigGpu(node.name, index, family, busy, free, allowed, block.mig_strategy == "single", profiles))
    return gpus


def parse_demand(text: str, source: str = "demand") -> dict[str, int]:
    """`3g.40gb=4,1g.10gb=10` -> {profile: count}; anything else is an InputError naming `source` (where the
    text came from: the CLI passes its flag), a count past MAX_PODS a LimitError (the solver's domains are int64)."""
    demand: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, count = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InputError(source, f"expected PROFILE=COUNT, got {part!r} (e.g. 3g.40gb=4,1g.10gb=10)")
        try:
            number = int(count)
        except ValueError:
            raise InputError(source, f"{name}: expected a whole number of instances, got {count.strip()!r}") from None
        if number < 1:
            raise InputError(source, f"{name}: the count must be at least 1, got {number}")
        if number > MAX_PODS:
            raise LimitError(
                source, f"{name}: {number} instances is more than the {MAX_PODS} gpusched plans (GPUSCHED_MAX_PODS)"
            )
        if name in demand:
            raise InputError(source, f"{name} is given twice")
        demand[name] = number
    if not demand:
        raise InputError(source, "no profile given (e.g. 3g.40gb=4,1g.10gb=10)")
    return demand


def demand_from_pods(pods: list[Pod], source: str = "pending pods") -> dict[str, int]:
    """Instances per profile that pending pods ask for (mig_profile × gpus); pods for whole GPUs ask for none."""
    demand: dict[str, int] = {}
    for pod in pods:
        if pod.mig_profile and pod.gpus:
            demand[pod.mig_profile] = demand.get(pod.mig_profile, 0) + pod.gpus
    if not demand:
        raise InputError(source, "no pod asks for a MIG profile (mig_profile), so there is nothing to plan")
    return demand


def check_demand(demand: dict[str, int], gpus: list[MigGpu], source: str = "demand") -> None:
    """A profile that no MIG-capable GPU model in the cluster has is bad input, not an infeasible request."""
    known: dict[str, list[str]] = {}
    for gpu in gpus:
        known.setdefault(gpu.family, list(gpu.profiles))
    if not known:
        raise InputError(source, "no GPU in the cluster can be MIG-partitioned (idle or running MIG)")
    for name in demand:
        if not any(name in names for names in known.values()):
            listed = "; ".join(f"{family}: {', '.join(names)}" for family, names in known.items())
            raise InputError(source, f"no GPU model in the cluster has MIG profile {name!r} ({listed})")


def compute_of(gpus: list[MigGpu], name: str) -> int:
    """Compute slices of a profile name (the same on every family that has the name)."""
    return next(gpu.profiles[name].compute for gpu in gpus if name in gpu.profiles)


def free_layouts(
    gpu: MigGpu, allowed: tuple[str, ...] | None = None, maximal: bool = False
) -> list[tuple[Instance, ...]]:
    """Every set of free instances the GPU may hold next to its busy ones (maximal: only those that no further
    instance fits into, which serve at least as much with fewer unused slices than anything inside them).

    New instances are of the allowed profiles (default: the node's) at legal starts; the GPU's own free
    instances may also stay where they are, allowed or not. Larger profiles are tried first at each slice,
    so the first layout of a kind fills space with few, large instances.
    """
    names = gpu.allowed if allowed is None else allowed
    order = sorted(gpu.profiles, key=lambda n: _size(gpu.profiles[n]))
    index = {name: i for i, name in enumerate(order)}
    wanted = {(name, start) for name in names for start in gpu.profiles[name].starts} | set(gpu.free or ())
    candidates: list[list[_Candidate]] = [[] for _ in range(MEMORY_SLICES)]
    for name in order:
        profile = gpu.profiles[name]
        for start in profile.starts:
            if (name, start) in wanted:
                mask = sum(1 << s for s in profile.slices(start))
                shape = profile.shape
                candidates[start].append(
                    _Candidate(name, start, mask, shape.compute, index[name], shape.max_per_gpu, shape.media_extensions)
                )
    used = sum(1 << s for name, start in gpu.kept for s in gpu.profiles[name].slices(start))
    counts = [0] * len(order)
    for name, _ in gpu.kept:
        counts[index[name]] += 1
    media = any(gpu.profiles[name].shape.media_extensions for name, _ in gpu.kept)
    compute = sum(gpu.profiles[name].compute for name, _ in gpu.kept)
    found: list[tuple[Instance, ...]] = []
    _walk(candidates, maximal, 0, [], used, compute, counts, media, found)
    return found


def _size(profile: MigProfile) -> tuple[int, int, bool]:
    """Larger first; a +me instance after the plain one of its size (there may be only one per GPU)."""
    return (-profile.compute, -profile.memory_slices, profile.shape.media_extensions)


@dataclass(frozen=True)
class _Candidate:
    """An instance that may be created: its slices as a bit mask, and what it counts against."""

    name: str
    start: int
    mask: int
    compute: int
    index: int
    max_per_gpu: int
    media: bool

    def fits(self, used: int, compute: int, counts: list[int], media: bool) -> bool:
        return not (
            self.mask & used
            or compute + self.compute > COMPUTE_SLICES
            or counts[self.index] >= self.max_per_gpu
            or (self.media and media)
        )


def _walk(
    candidates: list[list[_Candidate]],
    maximal: bool,
    slice_: int,
    chosen: list[Instance],
    used: int,
    compute: int,
    counts: list[int],
    media: bool,
    found: list[tuple[Instance, ...]],
) -> None:
    """Depth-first over memory slices: at each free slice, start an instance there or leave the slice empty."""
    if slice_ == MEMORY_SLICES:
        full = compute == COMPUTE_SLICES or not any(
            c.fits(used, compute, counts, media) for cs in candidates for c in cs
        )
        if full or not maximal:
            found.append(tuple(chosen))
        return
    if not used >> slice_ & 1:
        for candidate in candidates[slice_]:
            if candidate.fits(used, compute, counts, media):
                chosen.append((candidate.name, slice_))
                counts[candidate.index] += 1
                _walk(
                    candidates,
                    maximal,
                    slice_ + 1,
                    chosen,
                    used | candidate.mask,
                    compute + candidate.compute,
                    counts,
                    media or candidate.media,
                    found,
                )
                counts[candidate.index] -= 1
                chosen.pop()
    _walk(candidates, maximal, slice_ + 1, chosen, used, compute, counts, media, found)


def is_reconfigured(gpu: MigGpu, layout: Layout) -> bool:
    if gpu.free is None or layout is None:
        return gpu.free != layout
    return set(gpu.free) != set(layout)


def instances_after(gpu: MigGpu, layout: Layout) -> list[NewInstance] | None:
    """Every instance of the GPU once it takes the layout, busy ones included; None: MIG disabled."""
    if layout is None:
        return None
    return sorted(list(gpu.busy) + [(p, s, None) for p, s in layout], key=lambda i: i[1])


class RepartitionOutcome(BaseModel):
    """What a set of layouts achieves for the demand: comparable across the optimum and the heuristics."""

    served: dict[str, int]  # free instances of each demanded profile, at most the demand
    met: bool
    reconfigured: int  # GPUs whose instances change (see the module docstring)
    unused_slices: int  # compute slices of reconfigured GPUs in no instance


def mixed_single(gpus: list[MigGpu], layouts: dict[str, Layout]) -> set[str]:
    """Single-strategy nodes that end with more than one profile (busy or free): the device plugin advertises none
    of their instances (it needs one profile per node, and the busy instances fix which)."""
    names: dict[str, set[str]] = {}
    for gpu in gpus:
        if gpu.single:
            names.setdefault(gpu.node, set()).update(n for n, _ in gpu.kept + (layouts.get(gpu.name, gpu.free) or ()))
    return {node for node, found in names.items() if len(found) > 1}


def outcome(gpus: list[MigGpu], layouts: dict[str, Layout], demand: dict[str, int]) -> RepartitionOutcome:
    """Score layouts (GPU name -> layout; a GPU not named keeps its own) against the demand."""
    supply: Counter[str] = Counter()
    reconfigured = unused = 0
    silent = mixed_single(gpus, layouts)
    for gpu in gpus:
        layout = layouts.get(gpu.name, gpu.free)
        if gpu.node not in silent:
            supply.update(name for name, _ in layout or ())
        if is_reconfigured(gpu, layout):
            reconfigured += 1
            instances = gpu.kept + (layout or ())
            unused += COMPUTE_SLICES - sum(gpu.profiles[name].compute for name, _ in instances)
    served = {name: min(count, supply[name]) for name, count in demand.items()}
    return RepartitionOutcome(served=served, met=served == demand, reconfigured=reconfigured, unused_slices=unused)
