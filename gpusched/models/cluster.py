"""The cluster model: nodes with the GPU details the scheduler's integer cannot carry.

Inputs are validated here, once; everything downstream may trust them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..limits import MAX_GPUS_PER_NODE, MAX_MEMORY_GIB, MAX_NODES, MAX_REPLICAS, at_most
from .mig import placement_error, profiles_for
from .quantity import Quantity, milli, to_int
from .scheduling import Taint
from .workload import GpuNeeds

__all__ = ["Cluster", "Node", "GpuBlock", "MigInstance", "BusyGpu", "DisruptionBudget", "RunningPod", "NvlinkDomain"]

Count = Annotated[int, Field(ge=0, strict=True)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class MigInstance(Strict):
    """A MIG instance that exists on a GPU: its profile, first memory slice and the pod holding it (if any)."""

    gpu: Count = Field(description="the GPU's index on its node")
    profile: str = Field(description="a MIG profile of the model, e.g. 3g.40gb (`gpusched mig plan` lists them)")
    start: Count = Field(description="the first memory slice it sits on (nvidia-smi mig -lgi's placement start)")
    holder: str | None = Field(None, description="the pod using it; none: free")


class BusyGpu(Strict):
    """A GPU (or, on a time-sliced node, one replica of it) held by a running pod."""

    gpu: Count = Field(description="the GPU's index on its node")
    pod: str = Field(description="the pod holding it, NAMESPACE/NAME")
    memory_gib: float = Field(0.0, ge=0, le=MAX_MEMORY_GIB, description="GPU memory the pod declared")


def _known(info: ValidationInfo, field: str):
    if field not in info.data:
        raise PydanticCustomError("dependent", f"cannot be checked: {field} is invalid")
    return info.data[field]


def _in_range(index: int, count: int, what: str) -> None:
    if index >= count:
        raise ValueError(f"{what} names GPU {index}, but the node has GPUs 0..{count - 1}")


def _mig_table(info: ValidationInfo) -> dict:
    profiles = profiles_for(_known(info, "model"), _known(info, "memory_gib"))
    if not profiles:
        raise ValueError(f"GPU model {info.data['model']} does not support MIG")
    return profiles


class GpuBlock(Strict):
    model: str = Field(description="the GPU model, e.g. A100-SXM4-80GB, H100-80GB-HBM3, L40S (unknown ones: a warning)")
    count: Annotated[Count, at_most(MAX_GPUS_PER_NODE, "GPUSCHED_MAX_GPUS_PER_NODE")] = Field(
        description="GPUs on the node"
    )
    memory_gib: float = Field(gt=0, le=MAX_MEMORY_GIB, description="memory per GPU")
    islands: list[list[Count]] = Field(
        default_factory=list, description="GPU indices joined by NVLink; a GPU in no list is an island of one"
    )
    nvlink_gbps: float = Field(300.0, gt=0, description="NVLink bandwidth per direction inside an island, GB/s")
    pcie_gbps: float = Field(32.0, gt=0, description="PCIe bandwidth per direction between islands, GB/s")
    replicas: Annotated[int, at_most(MAX_REPLICAS, "GPUSCHED_MAX_REPLICAS")] = Field(
        1, ge=1, strict=True, description="time-slicing replicas per GPU (1: exclusive)"
    )
    rename_shared: bool = Field(
        False, description="the device plugin's renameByDefault: replicas are advertised as nvidia.com/gpu.shared"
    )
    mig_strategy: Literal["mixed", "single"] = Field(
        "mixed", description="the device plugin's MIG strategy: how instances are advertised"
    )
    mig_profiles: list[str] | None = Field(
        None, description="profiles this node's MIG configuration may create (default: all the model supports)"
    )
    mig: list[MigInstance] = Field(default_factory=list, description="MIG instances that exist, busy or free")
    busy: list[BusyGpu] = Field(default_factory=list, description="GPUs (or replicas) held by running pods")

    @field_validator("islands")
    @classmethod
    def _islands(cls, islands: list[list[int]], info: ValidationInfo) -> list[list[int]]:
        count = _known(info, "count")
        seen: set[int] = set()
        for index in (index for island in islands for index in island):
            _in_range(index, count, "an island")
            if index in seen:
                raise ValueError(f"islands name GPU {index} twice")
            seen.add(index)
        return islands

    @field_validator("rename_shared")
    @classmethod
    def _rename_shared(cls, rename: bool, info: ValidationInfo) -> bool:
        if rename and _known(info, "replicas") == 1:
            raise ValueError("renameByDefault renames time-sliced replicas: give replicas > 1")
        return rename

    @field_validator("mig_profiles")
    @classmethod
    def _mig_profiles(cls, names: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if names is None:  # `mig_profiles: null` is the default, on any model
            return names
        profiles = _mig_table(info)
        for name in names:
            if name not in profiles:
                raise ValueError(
                    f"unknown MIG profile {name!r} for {info.data['model']} (known: {', '.join(profiles)})"
                )
        return names

    @field_validator("mig")
    @classmethod
    def _mig(cls, instances: list[MigInstance], info: ValidationInfo) -> list[MigInstance]:
        if not instances:
            return instances
        profiles = _mig_table(info)
        if _known(info, "replicas") > 1:
            raise ValueError("a node cannot be time-sliced and MIG-partitioned at once")
        layouts: dict[int, list[tuple[str, int]]] = {}
        for instance in instances:
            _in_range(instance.gpu, _known(info, "count"), "a MIG instance")
            layouts.setdefault(instance.gpu, []).append((instance.profile, instance.start))
        for gpu, layout in layouts.items():
            error = placement_error(profiles, layout)
            if error:
                raise ValueError(f"MIG layout of GPU {gpu}: {error}")
        return instances

    @field_validator("busy")
    @classmethod
    def _busy(cls, busy: list[BusyGpu], info: ValidationInfo) -> list[BusyGpu]:
        mig_gpus = {instance.gpu for instance in info.data.get("mig", [])}
        for gpu, holders in Counter(b.gpu for b in busy).items():
            _in_range(gpu, _known(info, "count"), "a busy entry")
            if gpu in mig_gpus:
                raise ValueError(f"GPU {gpu} is MIG-partitioned: give its holders on the MIG instances")
            if holders > _known(info, "replicas"):
                raise ValueError(f"GPU {gpu} is busy {holders} times but has {info.data['replicas']} replica(s)")
        return busy

    def island_of(self) -> dict[int, int]:
        """GPU index -> island number: listed islands first, then one island per unlisted GPU."""
        mapping = {index: number for number, island in enumerate(self.islands) for index in island}
        number = len(self.islands)
        for index in range(self.count):
            if index not in mapping:
                mapping[index] = number
                number += 1
        return mapping


class Node(Strict):
    name: str = Field(min_length=1, description="the node's name")
    labels: dict[str, str] = Field(default_factory=dict, description="the node's labels (node selectors match them)")
    taints: list[Taint] = Field(default_factory=list, description="the node's taints")
    unschedulable: bool = Field(False, description="cordoned")
    cpu: Quantity | None = Field(None, description="allocatable cpu; absent: not modelled")
    memory: Quantity | None = Field(None, description="allocatable memory; absent: not modelled")
    gpu: GpuBlock | None = Field(None, description="its GPUs; absent: a node without GPUs")

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, value: Quantity | None) -> Quantity | None:
        if value is not None and milli(value) < 0:
            raise ValueError("must not be negative")
        return value

    @property
    def cpu_milli(self) -> int | None:
        return None if self.cpu is None else milli(self.cpu)

    @property
    def memory_bytes(self) -> int | None:
        return None if self.memory is None else to_int(self.memory)


class DisruptionBudget(Strict):
    """A PodDisruptionBudget: of the running pods it selects, at most max_unavailable may be evicted at once."""

    name: str = Field(description="the budget's name")
    selector: dict[str, str] = Field(description="matchLabels over the running pods' labels")
    max_unavailable: int | None = Field(None, ge=0, strict=True, description="at most this many evicted at once")
    min_available: int | None = Field(
        None, ge=0, strict=True, description="at least this many kept running (give one of the two)"
    )

    @model_validator(mode="after")
    def _one_limit(self) -> DisruptionBudget:
        if (self.max_unavailable is None) == (self.min_available is None):
            raise ValueError("give exactly one of max_unavailable and min_available")
        return self


class NvlinkDomain(Strict):
    """A rack-scale NVLink domain (a GB200 NVL72 rack): the GPUs of these nodes reach each other over NVLink, not
    the network."""

    name: str = Field(min_length=1, description="the domain's name (a rack)")
    nodes: list[str] = Field(min_length=2, description="the nodes whose GPUs share the domain")
    gbps: float = Field(gt=0, description="NVLink bandwidth per GPU per direction between the member nodes, GB/s")


@dataclass(frozen=True)
class RunningPod:
    """A pod already holding GPUs: where it runs (from the busy and MIG entries) and what it needs."""

    name: str
    node: str
    gpus: tuple[int, ...]  # one entry per GPU or replica held
    mig: tuple[tuple[int, int], ...]  # (gpu, start) of MIG instances held
    needs: GpuNeeds


class Cluster(Strict):
    nodes: Annotated[list[Node], at_most(MAX_NODES, "GPUSCHED_MAX_NODES")] = Field(description="every node")
    network_gbps: float = Field(25.0, gt=0, description="bandwidth per direction between nodes, GB/s")
    running: dict[str, GpuNeeds] = Field(
        default_factory=dict,
        description="what the pods holding busy GPUs or MIG instances need (priority, labels, nvlink, model...); "
        "a holder not listed has priority 0 and no constraints",
    )
    disruption_budgets: list[DisruptionBudget] = Field(
        default_factory=list, description="PodDisruptionBudgets: preempt and defrag keep within them"
    )
    nvlink_domains: list[NvlinkDomain] = Field(
        default_factory=list, description="rack-scale NVLink domains spanning nodes (GB200 NVL72)"
    )
    _running_pods: tuple[list[Node], dict[str, GpuNeeds], tuple[RunningPod, ...]] | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _running_are_holders(self) -> Cluster:
        holders = {pod.name for pod in self.running_pods()}
        unknown = sorted(set(self.running) - holders)
        if unknown:
            raise ValueError(f"running names pods that hold no busy GPU or MIG instance: {', '.join(unknown)}")
        return self

    def running_pods(self) -> list[RunningPod]:
        """Every pod holding GPUs, in node order, with its needs (defaults when `running` does not list it).

        Worked out once per model: the loader's check, the planners' state and the validator all read it, and at
        10,000 nodes each pass costs a fraction of a second. A model is never changed once validated; one copied
        with other nodes or running pods (model_copy) has other lists, and works it out again."""
        cached = self._running_pods
        if cached is None or cached[0] is not self.nodes or cached[1] is not self.running:
            cached = self._running_pods = (self.nodes, self.running, tuple(self._find_running()))
        return list(cached[2])

    def _find_running(self) -> list[RunningPod]:
        placed: dict[tuple[str, str], tuple[list[int], list[tuple[int, int]]]] = {}
        for node in self.nodes:
            if node.gpu is None:
                continue
            for busy in node.gpu.busy:
                placed.setdefault((busy.pod, node.name), ([], []))[0].append(busy.gpu)
            for instance in node.gpu.mig:
                if instance.holder is not None:
                    placed.setdefault((instance.holder, node.name), ([], []))[1].append((instance.gpu, instance.start))
        unlisted = GpuNeeds()  # one default for every unlisted pod: building one per pod costs seconds at scale
        return [
            RunningPod(name, node, tuple(gpus), tuple(mig), self.running.get(name, unlisted))
            for (name, node), (gpus, mig) in placed.items()
        ]

    @model_validator(mode="after")
    def _domains(self) -> Cluster:
        """Every member is a GPU node of the cluster, and in one domain only."""
        gpu_nodes = {node.name for node in self.nodes if node.gpu is not None}
        seen: dict[str, str] = {}
        for domain in self.nvlink_domains:
            for name in domain.nodes:
                if name not in gpu_nodes:
                    raise ValueError(f"NVLink domain {domain.name} names {name!r}, which is not a node with GPUs")
                if name in seen:
                    raise ValueError(f"node {name!r} is in NVLink domains {seen[name]} and {domain.name}")
                seen[name] = domain.name
        return self

    def domain_of(self) -> dict[str, str]:
        """GPU node -> the NVLink domain a gang with nvlink_domain may share with it: its rack-scale domain's name,
        or for a node in no domain the node's own name (one node is always one domain)."""
        members = {name: domain.name for domain in self.nvlink_domains for name in domain.nodes}
        return {node.name: members.get(node.name, f"node:{node.name}") for node in self.nodes if node.gpu is not None}

    @field_validator("nodes")
    @classmethod
    def _unique_names(cls, nodes: list[Node]) -> list[Node]:
        duplicates = [name for name, n in Counter(node.name for node in nodes).items() if n > 1]
        if duplicates:
            raise ValueError(f"node names must be unique: {', '.join(duplicates)} appear more than once")
        return nodes
