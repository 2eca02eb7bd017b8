"""Who holds which GPU: the pods bound to a node, phase-aware (Succeeded and Failed pods hold nothing).

The device plugin does not publish which GPU a pod got, so whole GPUs are given best-fit by NVLink island (as the
plugin's preferred allocation aims to) in the pods' start order, replicas lowest GPU first, MIG instances of the
profile asked for lowest first. DRA claims say exactly which device a pod holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from ...models.cluster import BusyGpu, MigInstance
from ...models.graph import choose_gpus
from ...models.kube import KubePod
from ...models.workload import GpuNeeds
from .gfd import mig_profile_name
from .gpus import GPU, MIG_PREFIX, SHARED, Gpus, NodeContext

__all__ = ["Holdings", "assign", "gpu_request", "needs_of"]

# Tolerations the API server adds to every pod (DefaultTolerationSeconds admission): not the pod's own constraint.
_DEFAULT_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_NEVER = datetime.max.replace(tzinfo=UTC)


@dataclass
class Holdings:
    busy: list[BusyGpu] = field(default_factory=list)
    mig: list[MigInstance] = field(default_factory=list)
    running: dict[str, GpuNeeds] = field(default_factory=dict)

    @property
    def holders(self) -> int:
        return len({b.pod for b in self.busy} | {m.holder for m in self.mig if m.holder})


@dataclass(frozen=True)
class Request:
    units: int  # whole GPUs, or replicas on a shared node
    mig: dict[str, int]  # profile -> instances

    @property
    def empty(self) -> bool:
        return not self.units and not any(self.mig.values())


def gpu_request(pod: KubePod, single_profile: str | None = None) -> Request:
    """What a pod asks of the device plugin; under MIG `single` nvidia.com/gpu means instances of the one profile."""
    units = pod.requests.get(GPU, 0) + pod.requests.get(SHARED, 0)
    mig = {
        mig_profile_name(name.removeprefix(MIG_PREFIX)): count
        for name, count in sorted(pod.requests.items())
        if name.startswith(MIG_PREFIX) and count
    }
    if single_profile and pod.requests.get(GPU, 0):
        mig[single_profile] = mig.get(single_profile, 0) + pod.requests[GPU]
        units -= pod.requests[GPU]
    return Request(units, mig)


def needs_of(pod: KubePod, shared: bool = False, mig_profile: str | None = None) -> GpuNeeds:
    """What a running pod needs, for planners that may preempt or move it: priority, labels, constraints."""
    return GpuNeeds(
        priority=pod.priority,
        labels=pod.labels,
        node_selector=pod.node_selector,
        tolerations=[t for t in pod.tolerations if t.key not in _DEFAULT_TOLERATIONS],
        shared=shared,
        mig_profile=mig_profile,
    )


def assign(ctx: NodeContext, gpus: Gpus, pods: list[KubePod], claims: dict[tuple[str, str], str]) -> Holdings:
    if ctx.dra is not None and (ctx.dra.gpus or ctx.dra.migs):
        return _from_claims(ctx, gpus, pods, claims)
    held = Holdings(mig=[m.model_copy() for m in gpus.mig])
    free = _free_units(gpus)
    whole_held = False
    for pod in sorted(pods, key=lambda p: (p.start_time or _NEVER, p.namespace, p.name)):
        request = gpu_request(pod, gpus.mig[0].profile if gpus.mig_strategy == "single" and gpus.mig else None)
        if request.empty:
            continue
        units = _take_units(gpus, free, request.units)
        instances = _take_mig(held.mig, request.mig)
        if units is None or instances is None:
            ctx.note(
                "error",
                "holder-overflow",
                f"pod {pod.key} holds {_describe(request)}, more than is free in the "
                "model: left out (labels and allocatable disagree, or the node is oversubscribed)",
            )
            continue
        for index in units:
            free[index] -= 1
            held.busy.append(BusyGpu(gpu=index, pod=pod.key))
        for instance in instances:
            instance.holder = pod.key
        whole_held = whole_held or bool(units)
        needs = needs_of(pod, shared=gpus.replicas > 1 and bool(units), mig_profile=next(iter(request.mig), None))
        if needs != GpuNeeds():
            held.running[pod.key] = needs
    if whole_held and gpus.count > 1:
        ctx.note("info", "indices-unknown", "GPU indices of running pods are not published: assigned")
    if whole_held and gpus.replicas > 1:
        ctx.note("info", "no-gpu-memory-declared", "running pods declare no GPU memory: 0 GiB each on shared GPUs")
    return held


def _free_units(gpus: Gpus) -> dict[int, int]:
    mig_gpus = {m.gpu for m in gpus.mig}
    return {index: gpus.replicas for index in range(gpus.count) if index not in mig_gpus}


@dataclass(frozen=True)
class _FreeGpu:  # not a NamedTuple: its `index` would shadow tuple.index
    index: int
    island: int


def _take_units(gpus: Gpus, free: dict[int, int], count: int) -> list[int] | None:
    """Whole GPUs best-fit by island; replicas lowest GPU first, as many from one GPU as it has."""
    if count == 0:
        return []
    if sum(free.values()) < count:
        return None
    if gpus.replicas > 1:
        taken: list[int] = []
        for index in sorted(free):
            taken += [index] * min(free[index], count - len(taken))
        return taken
    islands = {index: number for number, island in enumerate(gpus.islands) for index in island}
    candidates = [
        _FreeGpu(index, islands.get(index, len(gpus.islands) + index)) for index in sorted(free) if free[index]
    ]
    chosen, _, _ = choose_gpus(candidates, count)
    return list(chosen)


def _take_mig(slots: list[MigInstance], wanted: dict[str, int]) -> list[MigInstance] | None:
    taken: list[MigInstance] = []
    for profile, count in wanted.items():
        free = [s for s in sorted(slots, key=lambda s: (s.gpu, s.start)) if s.profile == profile and s.holder is None]
        if len(free) < count:
            return None
        taken += free[:count]
    return taken


def _describe(request: Request) -> str:
    parts = [f"{request.units} GPU unit(s)"] if request.units else []
    parts += [f"{count} x {profile}" for profile, count in request.mig.items()]
    return ", ".join(parts)


def _from_claims(ctx: NodeContext, gpus: Gpus, pods: list[KubePod], claims: dict[tuple[str, str], str]) -> Holdings:
    """DRA: the claims' allocation results name the devices; reservedFor names the pods."""
    assert ctx.dra is not None
    by_key = {pod.key: pod for pod in pods}
    held = Holdings(mig=[m.model_copy() for m in gpus.mig])
    mig_gpus = {m.gpu for m in gpus.mig}
    by_device = {(m.gpu, m.start): m for m in held.mig}
    names = {mig.device: (mig.gpu, mig.start) for mig in ctx.dra.migs}
    for (pool, device), holder in sorted(claims.items()):
        if pool != ctx.dra.pool:
            continue
        pod = by_key.get(holder)
        if device in names and names[device] in by_device:
            by_device[names[device]].holder = holder
            needs = needs_of(pod, mig_profile=by_device[names[device]].profile) if pod else None
        elif device.startswith("gpu-") and device[4:].isdigit() and int(device[4:]) < gpus.count:
            if int(device[4:]) in mig_gpus:
                ctx.note(
                    "error",
                    "holder-overflow",
                    f"claim gives {holder} whole GPU {device}, which has MIG devices: left out",
                )
                continue
            held.busy.append(BusyGpu(gpu=int(device[4:]), pod=holder))
            needs = needs_of(pod) if pod else None
        else:
            ctx.note(
                "warning", "dra-unknown-device", f"claim of {holder} names device {device}, not in the slices: left out"
            )
            continue
        if needs is not None and needs != GpuNeeds():
            held.running[holder] = needs
    return held
