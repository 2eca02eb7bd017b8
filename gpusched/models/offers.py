"""What a node autoscaler may launch (`gpusched scale`): instance types as Karpenter and Cluster Autoscaler see them,
each with its prices per capacity type and zone, per-type limits, and the NodePool's labels, taints and limits.

An instance type's GPUs come from the catalogue of servers (by instance type, or a `server` name) unless `gpu` gives
them; the catalogue knows no cpu, memory or pod capacity, so those are given here, as the cloud's tables state them.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ..limits import MAX_NODES, at_most
from .cluster import GpuBlock, Strict
from .quantity import Quantity, milli, to_int
from .scheduling import Taint

__all__ = [
    "CAPACITY_TYPE", "INSTANCE_TYPE", "NODEPOOL", "ZONE", "DO_NOT_DISRUPT",
    "Price", "InstanceType", "PoolLimits", "Offers",
]  # fmt: skip

# the well-known labels a launched node carries (Karpenter's, and the kubelet's for the instance type and zone)
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
NODEPOOL = "karpenter.sh/nodepool"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"  # on a pod or node: Karpenter never disrupts it voluntarily

CapacityType = Literal["on-demand", "spot"]


class Price(Strict):
    """One offering of an instance type: where and how it is bought, and what it costs."""

    capacity_type: CapacityType = Field("on-demand", description="`on-demand` or `spot` (karpenter.sh/capacity-type)")
    zone: str = Field(min_length=1, description="the zone (topology.kubernetes.io/zone)")
    per_hour: float = Field(ge=0, le=1e6, description="price per node per hour (any currency, the same throughout)")


class InstanceType(Strict):
    """An instance type the NodePool may launch."""

    name: str = Field(
        min_length=1, description="the instance type (node.kubernetes.io/instance-type), e.g. p5.48xlarge"
    )
    server: str | None = Field(
        None, description="the catalogue server whose GPUs it has, when the instance type is not in the catalogue"
    )
    gpu: GpuBlock | None = Field(
        None, description="its GPUs, as a node's `gpu` (no `busy`, no `mig`); absent: from the catalogue"
    )
    mig: bool = Field(True, description="new nodes may be MIG-partitioned (mig-manager) when the GPU model supports it")
    cpu: Quantity = Field(description="allocatable cpu of one node")
    memory: Quantity = Field(description="allocatable memory of one node")
    pods: int = Field(110, ge=1, le=100_000, strict=True, description="pods one node may run (the kubelet's maxPods)")
    labels: dict[str, str] = Field(
        default_factory=dict, description="labels its nodes carry beyond the well-known ones"
    )
    max_nodes: Annotated[int, at_most(MAX_NODES, "GPUSCHED_MAX_NODES")] | None = Field(
        None, ge=0, strict=True, description="at most this many new nodes of the type (quota, availability)"
    )
    prices: list[Price] = Field(min_length=1, description="its offerings: price per capacity type and zone")

    @field_validator("gpu")
    @classmethod
    def _fresh(cls, gpu: GpuBlock | None) -> GpuBlock | None:
        if gpu is not None and (gpu.busy or gpu.mig):
            raise ValueError("a node not launched yet holds nothing: no `busy`, no `mig`")
        return gpu

    @field_validator("cpu", "memory")
    @classmethod
    def _positive(cls, value: Quantity) -> Quantity:
        if milli(value) <= 0:
            raise ValueError("must be more than 0")
        return value

    @field_validator("prices")
    @classmethod
    def _distinct(cls, prices: list[Price]) -> list[Price]:
        twice = [f"{c} in {z}" for (c, z), n in Counter((p.capacity_type, p.zone) for p in prices).items() if n > 1]
        if twice:
            raise ValueError(f"priced twice: {', '.join(twice)}")
        return prices

    @property
    def cpu_milli(self) -> int:
        return milli(self.cpu)

    @property
    def memory_bytes(self) -> int:
        return to_int(self.memory)


class PoolLimits(Strict):
    """The NodePool's limits (spec.limits), over its nodes: those it has now and those the plan adds."""

    cpu: Quantity | None = Field(None, description="cpu of all its nodes together")
    gpus: int | None = Field(None, ge=0, strict=True, description="GPUs of all its nodes together (nvidia.com/gpu)")
    cost_per_hour: float | None = Field(None, ge=0, description="the price of the nodes the plan adds, per hour")

    @property
    def cpu_milli(self) -> int | None:
        return None if self.cpu is None else milli(self.cpu)


class Offers(Strict):
    """An OFFERS file: the NodePool and the instance types it may launch."""

    nodepool: str = Field("gpu", min_length=1, description="the NodePool's name (karpenter.sh/nodepool)")
    labels: dict[str, str] = Field(default_factory=dict, description="labels every node of the pool carries")
    taints: list[Taint] = Field(default_factory=list, description="taints every node of the pool carries")
    limits: PoolLimits = Field(default_factory=PoolLimits, description="the NodePool's limits")
    instance_types: list[InstanceType] = Field(min_length=1, description="what the pool may launch")

    @field_validator("instance_types")
    @classmethod
    def _unique(cls, types: list[InstanceType]) -> list[InstanceType]:
        twice = sorted(name for name, n in Counter(t.name for t in types).items() if n > 1)
        if twice:
            raise ValueError(f"instance type names must be unique: {', '.join(twice)} appear more than once")
        return types

    @model_validator(mode="after")
    def _reserved(self) -> Offers:
        reserved = {INSTANCE_TYPE, CAPACITY_TYPE, ZONE, NODEPOOL}
        for where in [self.labels, *(t.labels for t in self.instance_types)]:
            clash = sorted(reserved & set(where))
            if clash:
                raise ValueError(f"labels {', '.join(clash)} are set by the offering itself: leave them out")
        return self
