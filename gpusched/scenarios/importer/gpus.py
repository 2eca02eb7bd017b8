"""A node's GPUs from what it publishes: device plugin resources or DRA slices first (what the scheduler counts),
GFD labels and nvidia-smi captures for the model and memory, nvidia-smi topo or the catalogue for NVLink.

Every fact records its source in `sources`; what cannot be known becomes a finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...errors import InputError, LimitError
from ...limits import MAX_GPUS_PER_NODE, MAX_REPLICAS
from ...models.cluster import MigInstance
from ...models.kube import KubeNode
from ...models.mig import profiles_for
from .catalogue import Catalogue, Server, instance_type
from .gfd import GfdLabels, mig_profile_name, model_name
from .mig_layout import layout, per_gpu
from .nvidia_dra import DraNode
from .nvsmi import Capture, SmiLog, SmiTopology
from .nvsmi_mig import SmiComputeInstances, SmiGpuInstances, listed_layout, split_instances
from .report import Findings

__all__ = ["GPU", "MIG_PREFIX", "SHARED", "Gpus", "NodeContext", "infer_gpus"]

GPU = "nvidia.com/gpu"
SHARED = "nvidia.com/gpu.shared"
MIG_PREFIX = "nvidia.com/mig-"
DEFAULT_NVLINK_GBPS = 300.0
MAX_MIG_PER_GPU = 7  # instances of the smallest profile on one GPU (A100, H100, B200)


@dataclass
class Gpus:
    """A node's GPUs as inferred, before anyone holds them."""

    model: str
    count: int
    memory_gib: float
    replicas: int = 1
    rename_shared: bool = False  # replicas advertised as nvidia.com/gpu.shared (renameByDefault)
    sharing: str = "exclusive"
    mig_strategy: str = "mixed"
    mig: list[MigInstance] = field(default_factory=list)
    islands: list[list[int]] = field(default_factory=list)
    nvlink_gbps: float | None = None
    server: Server | None = None


@dataclass
class NodeContext:
    """Everything known about one node, and where findings and sources go."""

    kube: KubeNode
    gfd: GfdLabels
    dra: DraNode | None
    captures: list[Capture]
    catalogue: Catalogue
    findings: Findings
    sources: dict[str, str] = field(default_factory=dict)
    origin: str = "nodes"  # the input the node came from (a file, or a server's /api/v1/nodes)

    @property
    def name(self) -> str:
        return self.kube.name

    def note(self, level: str, kind: str, message: str) -> None:
        self.findings.add(level, kind, message, self.name)  # type: ignore[arg-type]

    @property
    def topologies(self) -> list[SmiTopology]:
        return [c for c in self.captures if isinstance(c, SmiTopology)]

    @property
    def smi(self) -> SmiLog | None:
        return next((c for c in reversed(self.captures) if isinstance(c, SmiLog)), None)

    @property
    def mig_listing(self) -> SmiGpuInstances | None:
        return next((c for c in reversed(self.captures) if isinstance(c, SmiGpuInstances)), None)

    @property
    def compute_listing(self) -> SmiComputeInstances | None:
        return next((c for c in reversed(self.captures) if isinstance(c, SmiComputeInstances)), None)

    def allocatable(self, name: str) -> int:
        return self.kube.allocatable.get(name, 0)

    def mig_allocatable(self) -> dict[str, int]:
        return {
            mig_profile_name(key.removeprefix(MIG_PREFIX)): value
            for key, value in sorted(self.kube.allocatable.items())
            if key.startswith(MIG_PREFIX) and value > 0
        }


def infer_gpus(ctx: NodeContext) -> Gpus | None:
    """The node's GPUs, or None when it advertises none (a GPU the scheduler cannot give out is not modelled)."""
    for problem in ctx.gfd.unreadable:
        ctx.note("warning", "unreadable-label", f"label {problem}: ignored")
    _bounded(ctx)
    dra = ctx.dra and (ctx.dra.gpus or ctx.dra.migs)
    plugin = ctx.allocatable(GPU) or ctx.allocatable(SHARED) or ctx.mig_allocatable()
    if dra and plugin:
        ctx.note(
            "warning",
            "both-dra-and-plugin",
            "GPUs in DRA ResourceSlices and as device plugin resources: modelled from the slices",
        )
    if dra:
        gpus = _from_dra(ctx)
    elif plugin:
        gpus = _from_plugin(ctx)
    else:
        if ctx.gfd.count or ctx.smi:
            ctx.note(
                "warning",
                "gpus-not-advertised",
                "has GPUs (labels or nvidia-smi) but advertises no nvidia.com/gpu, "
                "nvidia.com/gpu.shared or nvidia.com/mig-* and no DRA devices: modelled without GPUs",
            )
        return None
    if gpus is not None:
        _check_captures(ctx, gpus)
        _topology(ctx, gpus)
    return gpus


def _too_many(ctx: NodeContext, what: str, value: int, most: int, field: str) -> LimitError:
    return LimitError(
        ctx.origin,
        f"{what} {value}: more than the {most} a node may have (set GPUSCHED_MAX_GPUS_PER_NODE to raise the limit)",
        f"node {ctx.name}: {field}",
    )


def _bounded(ctx: NodeContext) -> None:
    """Refuse counts no node could have before any list is made of them: `nvidia.com/mig-1g.10gb: 1000000000`
    from a server would otherwise be a billion instances laid out one by one."""
    mig = 0
    for name, value in ctx.kube.allocatable.items():
        if (name in (GPU, SHARED) or name.startswith(MIG_PREFIX)) and value < 0:
            field = f"node {ctx.name}: status.allocatable.{name}"
            raise InputError(ctx.origin, f"{value}: a count of devices cannot be negative", field)
        if name in (GPU, SHARED) and value > MAX_GPUS_PER_NODE * MAX_REPLICAS:
            raise _too_many(ctx, name, value, MAX_GPUS_PER_NODE * MAX_REPLICAS, f"status.allocatable.{name}")
        if name.startswith(MIG_PREFIX) and value > 0:
            mig += value
            if mig > MAX_GPUS_PER_NODE * MAX_MIG_PER_GPU:
                most = MAX_GPUS_PER_NODE * MAX_MIG_PER_GPU
                raise _too_many(ctx, "MIG instances", mig, most, f"status.allocatable.{name}")
    if ctx.gfd.count is not None and ctx.gfd.count > MAX_GPUS_PER_NODE * MAX_MIG_PER_GPU:
        raise _too_many(
            ctx,
            "GPUs labelled",
            ctx.gfd.count,
            MAX_GPUS_PER_NODE * MAX_MIG_PER_GPU,
            "metadata.labels.nvidia.com/gpu.count",
        )


def _check_limit(ctx: NodeContext, count: int) -> None:
    if count > MAX_GPUS_PER_NODE:
        raise _too_many(ctx, "GPUs", count, MAX_GPUS_PER_NODE, "status.allocatable")


# --- device plugin ----------------------------------------------------------------------------------------------


def _from_plugin(ctx: NodeContext) -> Gpus | None:
    gfd = ctx.gfd
    if gfd.mig_strategy == "single" and gfd.single_profile:
        return _single(ctx)
    replicas = _replicas(ctx)
    units = ctx.allocatable(GPU) + ctx.allocatable(SHARED)
    whole, rest = divmod(units, replicas)
    if rest:
        ctx.note(
            "warning",
            "labels-contradict-allocatable",
            f"advertises {units} GPU units, not a multiple of {replicas} replicas: modelled {whole} GPUs",
        )
    instances = ctx.mig_allocatable()
    model = _model(ctx)
    memory = _memory(ctx, gfd.memory_mib, model) if model else None
    if model is None or memory is None:
        return None
    mig_gpus = _mig_gpu_count(ctx, whole, instances, model, memory)
    count = whole + mig_gpus
    _check_limit(ctx, count)
    _check_count(ctx, count)
    ctx.sources["count"] = "allocatable " + " + ".join(
        [n for n in (GPU, SHARED) if ctx.allocatable(n)] + ([MIG_PREFIX + "*"] if instances else [])
    )
    gpus = Gpus(
        model=model,
        count=count,
        memory_gib=memory,
        replicas=replicas,
        sharing=_sharing(ctx, replicas),
        rename_shared=replicas > 1 and ctx.allocatable(SHARED) > 0,
    )
    if instances:
        if replicas > 1:
            ctx.note("warning", "shared-mig", "time-sliced MIG devices are not modelled: GPUs modelled unshared")
            gpus.replicas, gpus.sharing, gpus.rename_shared = 1, "exclusive", False
        gpus.mig = _mig_from_counts(ctx, model, memory, instances, list(range(whole, count)))
        gpus.sharing = "MIG mixed"
    return gpus


def _replicas(ctx: NodeContext) -> int:
    replicas = ctx.gfd.replicas or 1
    if replicas > 1:
        ctx.sources["replicas"] = f"label nvidia.com/gpu.replicas={replicas}"
        if ctx.gfd.sharing == "mps":
            ctx.note(
                "info",
                "mps",
                f"MPS with {replicas} replicas: modelled as {replicas} replicas per GPU (MPS also "
                "caps each client's memory at 1/replicas; not modelled)",
            )
    return max(replicas, 1)


def _sharing(ctx: NodeContext, replicas: int) -> str:
    if replicas == 1:
        return "exclusive"
    return f"{ctx.gfd.sharing if ctx.gfd.sharing in ('time-slicing', 'mps') else 'time-slicing'} x{replicas}"


def _mig_gpu_count(ctx: NodeContext, whole: int, instances: dict[str, int], model: str, memory: float) -> int:
    """MIG-enabled GPUs: GFD's GPU count less the whole GPUs advertised; without a count, the fewest that fit."""
    if not instances:
        return 0
    if ctx.gfd.count is not None and ctx.gfd.count > whole:
        return ctx.gfd.count - whole
    profiles = profiles_for(model, memory)
    needed = sum(count / per_gpu(profiles[name]) for name, count in instances.items() if name in profiles)
    return max(1, math.ceil(needed))


def _single(ctx: NodeContext) -> Gpus | None:
    """MIG `single`: every GPU cut into one profile, each instance advertised as nvidia.com/gpu."""
    gfd = ctx.gfd
    profile_name = gfd.single_profile or ""
    model = _model(ctx)
    if model is None:
        return None
    memory = _single_memory(ctx, model, profile_name)
    if memory is None:
        return None
    profile = profiles_for(model, memory).get(profile_name)
    if profile is None:
        ctx.note(
            "error", "mig-unknown", f"MIG profile {profile_name!r} of {model} unknown to gpusched: GPUs not modelled"
        )
        return None
    instances = ctx.allocatable(GPU)
    fits = per_gpu(profile)
    count = -(-instances // fits)
    _check_limit(ctx, count)
    ctx.sources["count"] = f"allocatable {GPU}={instances} MIG {profile_name} instances, {fits} per GPU"
    ctx.note(
        "info",
        "single-count",
        f"MIG single: {instances} {profile_name} instances taken as {count} GPU(s) of "
        f"{fits} (the labels count instances, not GPUs)",
    )
    gpus = Gpus(model=model, count=count, memory_gib=memory, mig_strategy="single", sharing="MIG single")
    gpus.mig = _mig_from_counts(ctx, model, memory, {profile_name: instances}, list(range(count)))
    return gpus


def _memory_of_gpu(ctx: NodeContext, model: str | None) -> float | None:
    """A whole GPU's memory from nvidia-smi, else the catalogue (recording which); None when neither knows."""
    smi = ctx.smi
    if smi and smi.gpus[0].memory_mib:
        ctx.sources["memory"] = f"nvidia-smi -q -x ({smi.source})"
        return _gib(smi.gpus[0].memory_mib)
    spec = ctx.catalogue.gpu(model)
    if spec:
        ctx.sources["memory"] = f"catalogue: {spec.sources['memory']}"
        return spec.memory_gib
    return None


def _single_memory(ctx: NodeContext, model: str, profile: str) -> float | None:
    """Under `single` the memory label is one instance's: the GPU's comes from nvidia-smi or the catalogue."""
    found = _memory_of_gpu(ctx, model)
    if found is not None:
        return found
    ctx.note(
        "error", "memory-unknown", f"memory of {model} unknown (under MIG single the label is one {profile} instance's)"
    )
    return None


def _mig_from_counts(
    ctx: NodeContext, model: str, memory: float, counts: dict[str, int], gpus: list[int]
) -> list[MigInstance]:
    profiles = profiles_for(model, memory)
    unknown = sorted(set(counts) - set(profiles))
    if unknown:
        ctx.note("error", "mig-unknown", f"MIG profiles {', '.join(unknown)} unknown for {model}: left out")
    known = {name: n for name, n in counts.items() if name in profiles}
    labelled = ctx.gfd.mig_counts
    if labelled and ctx.gfd.mig_strategy == "mixed" and labelled != known:
        ctx.note(
            "warning",
            "labels-contradict-allocatable",
            f"MIG counts in labels {labelled} differ from allocatable {known}: modelled the allocatable",
        )
    _split_instances(ctx)
    listed = _mig_from_listing(ctx, profiles, known, gpus)
    if listed is not None:
        return listed
    found = layout(profiles, known, gpus)
    if found is None:
        ctx.note("error", "mig-unfit", f"MIG instances {known} do not fit on {len(gpus)} GPU(s): left out")
        return []
    ctx.note("info", "mig-layout-inferred", f"MIG layout of {known} inferred on GPUs {gpus}")
    ctx.sources["mig"] = "allocatable nvidia.com/mig-* and nvidia.com/gpu (positions inferred)"
    _mig_config(ctx)
    return [MigInstance(gpu=gpu, profile=name, start=start) for gpu, name, start in found]


def _mig_from_listing(
    ctx: NodeContext, profiles: dict, counts: dict[str, int], gpus: list[int]
) -> list[MigInstance] | None:
    """The instances exactly as `nvidia-smi mig -lgi` lists them, when it was captured on the node and fits what
    the node advertises; None (the layout inferred) otherwise, with why."""
    listing = ctx.mig_listing
    if listing is None:
        return None
    found, problem = listed_layout(listing, profiles, counts, gpus)
    if found is None:
        ctx.note("warning", "capture-contradicts", f"nvidia-smi mig -lgi ({listing.source}) {problem}: layout inferred")
        return None
    ctx.sources["mig"] = f"nvidia-smi mig -lgi ({listing.source})"
    _mig_config(ctx)
    return [MigInstance(gpu=gpu, profile=name, start=start) for gpu, name, start in found]


def _split_instances(ctx: NodeContext) -> None:
    """A GPU instance split into compute instances (`nvidia-smi mig -lci`) is modelled whole: said."""
    if ctx.compute_listing is not None:
        for message in split_instances(ctx.compute_listing):
            ctx.note("info", "mig-compute-instances", message)


def _mig_config(ctx: NodeContext) -> None:
    state, config = ctx.gfd.mig_config_state, ctx.gfd.mig_config
    if state and state != "success":
        ctx.note(
            "warning",
            "mig-config-state",
            f"MIG configuration {config or '?'} is {state}: the layout may be "
            "about to change; modelled as advertised now",
        )


# --- DRA --------------------------------------------------------------------------------------------------------


def _from_dra(ctx: NodeContext) -> Gpus | None:
    dra = ctx.dra
    assert dra is not None
    for reason in dra.skipped:
        ctx.note("warning", "dra-skipped", f"DRA device {reason}")
    products = {model_name(g.product) for g in dra.gpus.values() if g.product}
    if len(products) > 1:
        ctx.note("warning", "mixed-models", f"GPUs of several products {sorted(products)}: modelled as {min(products)}")
    indices = set(dra.gpus) | {m.gpu for m in dra.migs}
    count = max(indices) + 1
    if len(indices) != count:
        ctx.note(
            "warning", "dra-gaps", f"DRA devices name GPUs {sorted(indices)}: GPUs in the gaps modelled as present"
        )
    ctx.sources["count"] = f"ResourceSlice devices of gpu.nvidia.com (pool {dra.pool})"
    model = min(products) if products else _model(ctx)
    if products:
        ctx.sources["model"] = "ResourceSlice attribute productName"
    memories = [g.memory_bytes for g in dra.gpus.values() if g.memory_bytes]
    memory = _gib(min(memories) / 2**20) if memories else None
    if memory is not None:
        ctx.sources["memory"] = "ResourceSlice capacity memory"
    else:
        memory = _memory(ctx, ctx.gfd.memory_mib, model)
    if model is None or memory is None:
        return None
    gpus = Gpus(model=model, count=count, memory_gib=memory)
    if dra.migs:
        profiles = profiles_for(model, memory)
        known = [m for m in dra.migs if m.profile in profiles]
        for m in dra.migs:
            if m.profile not in profiles:
                ctx.note(
                    "error",
                    "mig-unknown",
                    f"DRA MIG device {m.device}: profile {m.profile} unknown for {model}: left out",
                )
        gpus.mig = [
            MigInstance(gpu=m.gpu, profile=m.profile, start=m.start)
            for m in sorted(known, key=lambda m: (m.gpu, m.start))
        ]
        gpus.sharing = "MIG (DRA)"
        ctx.sources["mig"] = "ResourceSlice MIG devices (exact positions)"
    return gpus


# --- model, memory, count ---------------------------------------------------------------------------------------


def _model(ctx: NodeContext) -> str | None:
    """The product as the labels name it, else nvidia-smi's, else the catalogue's for the instance type."""
    smi = ctx.smi
    if ctx.gfd.model:
        model, source = ctx.gfd.model, f"label nvidia.com/gpu.product={ctx.gfd.product}"
    elif smi:
        model, source = model_name(smi.gpus[0].product), f"nvidia-smi -q -x ({smi.source})"
    else:
        server = ctx.catalogue.server(ctx.kube.labels, None, None)
        if not server or not server.model:
            ctx.note(
                "error",
                "model-unknown",
                "no GPU product in labels, DRA slices, nvidia-smi or the catalogue: GPUs not modelled",
            )
            return None
        model, source = server.model, f"catalogue: {server.name} ({server.sources['model']})"
    ctx.sources["model"] = source
    if ctx.catalogue.gpu(model) is None:
        ctx.note(
            "warning",
            "model-not-in-catalogue",
            f"GPU product {model!r} is not in gpusched's catalogue: model kept as "
            "published; no MIG, NVLink or memory facts beyond what the node says",
        )
    return model


def _memory(ctx: NodeContext, mib: int | None, model: str | None) -> float | None:
    if mib:
        ctx.sources["memory"] = f"label nvidia.com/gpu.memory={mib} (MiB)"
        return _gib(mib)
    found = _memory_of_gpu(ctx, model)
    if found is not None:
        return found
    ctx.note(
        "error",
        "memory-unknown",
        "GPU memory unknown (no nvidia.com/gpu.memory, nvidia-smi or catalogue entry): GPUs not modelled",
    )
    return None


def _gib(mib: float) -> float:
    return round(mib / 1024, 1)


def _check_count(ctx: NodeContext, count: int) -> None:
    labelled = ctx.gfd.count
    if labelled is not None and labelled != count and not ctx.gfd.single_profile:
        ctx.note(
            "warning",
            "labels-contradict-allocatable",
            f"labels count {labelled} GPUs, allocatable gives {count}: "
            "modelled the allocatable (the scheduler's count; GPUs may be unhealthy)",
        )


def _check_captures(ctx: NodeContext, gpus: Gpus) -> None:
    smi = ctx.smi
    if smi is None:
        return
    if len(smi.gpus) != gpus.count and gpus.mig_strategy != "single":
        ctx.note(
            "warning",
            "capture-contradicts",
            f"nvidia-smi -q -x ({smi.source}) shows {len(smi.gpus)} GPUs, modelled {gpus.count}",
        )
    product = model_name(smi.gpus[0].product)
    if product != gpus.model:
        ctx.note(
            "warning", "capture-contradicts", f"nvidia-smi -q -x ({smi.source}) shows {product}, modelled {gpus.model}"
        )
    mig = [g.index for g in smi.gpus if g.mig_enabled]
    if mig and not gpus.mig:
        ctx.note(
            "warning",
            "capture-contradicts",
            f"nvidia-smi shows MIG enabled on GPUs {mig}, but no MIG devices are advertised",
        )


# --- NVLink -----------------------------------------------------------------------------------------------------


def _topology(ctx: NodeContext, gpus: Gpus) -> None:
    """Islands and NVLink bandwidth: nvidia-smi topo, else the catalogue, else unknown (islands of one)."""
    gpus.server = ctx.catalogue.server(ctx.kube.labels, gpus.model, gpus.count)
    if gpus.server and gpus.server.model and gpus.server.model.lower() != gpus.model.lower():
        ctx.note(
            "warning",
            "catalogue-contradicts",
            f"{gpus.server.name} has {gpus.server.model}, the node says {gpus.model}",
        )
    server = gpus.server
    expected = server.gpu_count(instance_type(ctx.kube.labels)) if server else None
    if server and expected is not None and expected != gpus.count and not server.products:
        ctx.note(
            "warning",
            "catalogue-contradicts",
            f"{server.name} has {expected} GPUs, the node advertises {gpus.count}",
        )
    topologies = ctx.topologies
    if topologies:
        _from_topo(ctx, gpus, topologies[-1])
    elif gpus.server and gpus.server.nvlink != "unknown":
        _from_server(ctx, gpus, gpus.server)
    elif (spec := ctx.catalogue.gpu(gpus.model)) is not None and spec.nvlink is False:
        ctx.sources["islands"] = f"catalogue: {spec.model} has no NVLink ({spec.sources['nvlink']})"
    elif gpus.count > 1:
        ctx.note("warning", "islands-unknown", "NVLink islands unknown: assumed none")
        ctx.sources["islands"] = "assumed none"


def _from_topo(ctx: NodeContext, gpus: Gpus, topo: SmiTopology) -> None:
    if topo.gpus != gpus.count:
        ctx.note(
            "warning",
            "capture-contradicts",
            f"nvidia-smi topo -m ({topo.source}) shows {topo.gpus} GPUs, modelled {gpus.count}",
        )
    gpus.islands = [kept for island in topo.islands() if len(kept := [i for i in island if i < gpus.count]) > 1]
    ctx.sources["islands"] = f"nvidia-smi topo -m ({topo.source})"
    fewest = topo.fewest_links()
    if fewest is None:
        return
    spec = ctx.catalogue.gpu(gpus.model)
    link = ctx.catalogue.link_gbps(spec.architecture if spec else ctx.gfd.family)
    if link is None:
        ctx.note(
            "warning",
            "nvlink-speed-unknown",
            f"NV{fewest} links of unknown speed (architecture unknown): bandwidth left at {DEFAULT_NVLINK_GBPS:g} GB/s",
        )
        return
    gpus.nvlink_gbps = fewest * link.gbps
    ctx.sources["nvlink_gbps"] = f"NV{fewest} x {link.gbps:g} GB/s per link ({link.source})"


def _from_server(ctx: NodeContext, gpus: Gpus, server: Server) -> None:
    source = f"catalogue: {server.name} ({server.sources['nvlink']})"
    if server.nvlink == "all" and gpus.count > 1:
        gpus.islands = [list(range(gpus.count))]
        gpus.nvlink_gbps = server.nvlink_gbps
        ctx.sources["nvlink_gbps"] = source
    ctx.sources["islands"] = source
