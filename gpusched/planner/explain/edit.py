"""A suggested change as data, and applying it: every change `explain` prints was applied to the model this way
and the target placed again, so a change is only ever suggested when it is shown to work.

The changed cluster is validated from scratch (MIG geometry, GPU ranges, holders), so an edit can never produce a
cluster that gpusched itself would refuse as input.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from ...models.cluster import BusyGpu, Cluster, MigInstance
from ...models.workload import GpuNeeds, Job, Pod
from ..optimize.disrupt import running_state, without
from ..place import Placer
from ..scheduler.framework import Diagnosis
from ..scheduler.plugins.gpudevices import GpuChoice

__all__ = ["Edit", "MigLayout", "MovedPod", "apply_edit", "place_one"]

Item = TypeVar("Item", Pod, Job)


class MovedPod(BaseModel):
    pod: str
    from_node: str
    to_node: str
    to_gpus: list[int]


class MigLayout(BaseModel):
    """A MIG GPU's instances after a repartition (busy ones kept with their holders); None: MIG disabled."""

    node: str
    gpu: int
    instances: list[MigInstance] | None


class Edit(BaseModel):
    pod: dict[str, Any] = Field(default_factory=dict, description="fields of the pending pod (or job) to set")
    evict: list[str] = Field(default_factory=list, description="running pods to delete")
    moves: list[MovedPod] = Field(default_factory=list, description="running pods to re-create elsewhere")
    mig: list[MigLayout] = Field(default_factory=list, description="MIG GPUs to repartition")
    uncordon: list[str] = Field(default_factory=list, description="nodes to uncordon")
    admission: Literal["gang"] | None = Field(None, description="admit jobs all-or-nothing (Kueue, or a PodGroup)")
    claim: dict[str, Any] | None = Field(None, description="the ResourceClaim to apply instead (kubectl apply)")
    timeout: float = Field(
        0.0, description="with admission: seconds a partial gang may hold GPUs (scheduleTimeoutSeconds)"
    )


def apply_edit(cluster: Cluster, item: Item, edit: Edit) -> tuple[Cluster, Item]:
    """The cluster and the pending pod or job with the change made (both re-validated)."""
    changed = without(cluster, edit.evict) if edit.evict else cluster
    data = changed.model_dump()
    nodes = {node["name"]: node for node in data["nodes"]}
    for name in edit.uncordon:
        nodes[name]["unschedulable"] = False
    for move in edit.moves:
        _move(nodes, move)
    for layout in edit.mig:
        gpu = nodes[layout.node]["gpu"]
        kept = [m for m in gpu["mig"] if m["gpu"] != layout.gpu]
        gpu["mig"] = kept + [m.model_dump() for m in layout.instances or []]
    updated = type(item).model_validate(item.model_dump() | edit.pod)
    return Cluster.model_validate(data), updated


def _move(nodes: dict[str, dict], move: MovedPod) -> None:
    source = nodes[move.from_node]["gpu"]
    held = [busy for busy in source["busy"] if busy["pod"] == move.pod]
    if not held:
        raise ValueError(f"{move.pod} holds no GPU on {move.from_node}")
    source["busy"] = [busy for busy in source["busy"] if busy["pod"] != move.pod]
    memory = held[0]["memory_gib"]
    target = nodes[move.to_node]["gpu"]
    target["busy"] += [BusyGpu(gpu=index, pod=move.pod, memory_gib=memory).model_dump() for index in move.to_gpus]


def place_one(cluster: Cluster, pod: GpuNeeds, gpus: int) -> GpuChoice | Diagnosis:
    """Where the pod goes on the cluster as it is (running pods' requests counted), in the hardware view."""
    return Placer(running_state(cluster), "gpu", "binpack").best(pod, gpus)
