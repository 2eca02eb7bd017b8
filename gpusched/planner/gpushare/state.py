"""A cluster whose GPUs are shared in thousandths (milli), as the FGD paper models Alibaba's cluster: numpy arrays.

Thousands of pods on a thousand nodes, ten seeds, ten policies: the per-node Python objects of ClusterState would
be far too slow, so this state is a few arrays, updated in place for the one node a decision changes.
Built from gpusched's Cluster (MIG, time-slicing and busy GPUs do not exist in this model and are refused).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.cluster import Cluster
from ...scenarios.openb import MILLI, OpenbPod

__all__ = ["PodTable", "SharePod", "ShareState", "tag_of"]


def tag_of(gpus: int, milli: int) -> str:
    """The GPU-sharing class a pod belongs to (GpuClustering groups pods by it): none, share or k-gpu."""
    if gpus == 0:
        return "none"
    return "share" if milli < MILLI else f"{gpus}-gpu"


@dataclass(frozen=True, slots=True)
class SharePod:
    """What a decision needs to know of a pod; `klass` numbers its task class (cpu, GPUs, milli, allowed models:
    the FGD paper's), `alike` the pods that any policy treats alike (the class and the memory)."""

    cpu: int
    memory: int  # MiB
    gpus: int
    milli: int  # per GPU
    spec: int  # index into PodTable.specs (allowed models)
    klass: int
    tag: int  # index into PodTable.tags
    alike: int = 0  # index into PodTable.alike

    @property
    def shares(self) -> bool:
        return self.gpus == 1 and self.milli < MILLI

    @property
    def total_milli(self) -> int:
        return self.gpus * self.milli


@dataclass(frozen=True)
class PodTable:
    """A trace's pods, numbered classes and allowed-model sets, so that decisions compare small integers."""

    pods: list[SharePod]
    specs: list[tuple[str, ...]]  # allowed models per spec index; () is any
    tags: list[str]
    classes: list[tuple[int, int, int, int]]  # klass -> (cpu, gpus, milli, spec)
    alike: list[tuple[int, int]]  # alike -> (klass, memory)

    @classmethod
    def of(cls, pods: list[OpenbPod]) -> PodTable:
        specs: dict[tuple[str, ...], int] = {}
        tags: dict[str, int] = {"none": 0}
        classes: dict[tuple[int, int, int, int], int] = {}
        alike: dict[tuple[int, int], int] = {}
        table = []
        for pod in pods:
            spec = specs.setdefault(pod.models, len(specs))
            tag = tags.setdefault(tag_of(pod.num_gpu, pod.gpu_milli), len(tags))
            key = (pod.cpu_milli, pod.num_gpu, pod.gpu_milli, spec)
            klass = classes.setdefault(key, len(classes))
            same = alike.setdefault((klass, pod.memory_mib), len(alike))
            table.append(SharePod(pod.cpu_milli, pod.memory_mib, pod.num_gpu, pod.gpu_milli, spec, klass, tag, same))
        return cls(table, list(specs), list(tags), list(classes), list(alike))


class ShareState:
    """Free milli per GPU, free cpu and memory per node, and the aggregates every policy reads."""

    def __init__(self, cluster: Cluster, table: PodTable) -> None:
        nodes = sorted(cluster.nodes, key=lambda node: node.name)  # ties go to the node name, as in gpusched
        for node in nodes:
            block = node.gpu
            if block is not None and (block.mig or block.replicas > 1 or block.busy):
                raise ValueError(f"node {node.name}: MIG, time-slicing and busy GPUs are not part of the milli model")
            if node.cpu is None or node.memory is None:
                raise ValueError(f"node {node.name}: cpu and memory must be given")
        self.names = [node.name for node in nodes]
        self.models = sorted({node.gpu.model for node in nodes if node.gpu and node.gpu.count})
        model_index = {model: i for i, model in enumerate(self.models)}
        self.model = np.array(
            [model_index[n.gpu.model] if n.gpu and n.gpu.count else -1 for n in nodes], dtype=np.int64
        )
        self.gpus = np.array([n.gpu.count if n.gpu else 0 for n in nodes], dtype=np.int64)
        width = max(1, int(self.gpus.max(initial=0)))
        self.cpu_capacity = np.array([n.cpu_milli for n in nodes], dtype=np.int64)
        self.memory_capacity = np.array([(n.memory_bytes or 0) // 2**20 for n in nodes], dtype=np.int64)
        self.cpu_left = self.cpu_capacity.copy()
        self.memory_left = self.memory_capacity.copy()
        slots = np.arange(width)[None, :] < self.gpus[:, None]
        self.gpu_left = np.where(slots, MILLI, 0).astype(np.int64)  # absent GPUs are 0: they never fit anything
        self.gpu_total_left = self.gpu_left.sum(axis=1)
        self.gpu_free_whole = self.gpus.copy()
        self.gpu_most_left = self.gpu_left.max(axis=1)
        self.affinity = np.zeros((len(nodes), len(table.tags)), dtype=np.int64)  # pods per sharing class
        self.capacity_milli = int(self.gpus.sum()) * MILLI
        self.allocated_milli = 0
        self.access = self._access(table.specs)
        self.changed: list[int] = []  # nodes in order of change: caches read what they have not yet seen

    def _access(self, specs: list[tuple[str, ...]]) -> np.ndarray:
        """spec × node: may a pod with these allowed models use this node's GPUs (a CPU-only pod: any node)."""
        access = np.ones((len(specs), len(self.names)), dtype=bool)
        for index, allowed in enumerate(specs):
            if allowed:
                wanted = [i for i, model in enumerate(self.models) if model in allowed]
                access[index] = np.isin(self.model, wanted)
        return access

    @property
    def size(self) -> int:
        return len(self.names)

    def feasible(self, pod: SharePod) -> np.ndarray:
        """Nodes with room for the pod: cpu, memory, allowed model, and GPUs with enough milli each."""
        ok = (self.cpu_left >= pod.cpu) & (self.memory_left >= pod.memory)
        if pod.gpus == 0:
            return ok
        ok &= self.access[pod.spec]
        if pod.milli < MILLI:
            return ok & (self.gpu_most_left >= pod.milli)
        return ok & (self.gpu_free_whole >= pod.gpus)

    def fits(self, pod: SharePod, node: int) -> bool:
        """`feasible` for one node, without building arrays (a departure frees one node)."""
        if self.cpu_left[node] < pod.cpu or self.memory_left[node] < pod.memory:
            return False
        if pod.gpus == 0:
            return True
        if not self.access[pod.spec, node]:
            return False
        if pod.milli < MILLI:
            return bool(self.gpu_most_left[node] >= pod.milli)
        return bool(self.gpu_free_whole[node] >= pod.gpus)

    def whole_gpus(self, node: int, count: int) -> tuple[int, ...]:
        """The lowest-numbered free GPUs (as the device plugin hands them out)."""
        return tuple(int(i) for i in np.flatnonzero(self.gpu_left[node] == MILLI)[:count])

    def bind(self, pod: SharePod, node: int, gpus: tuple[int, ...]) -> None:
        self._apply(pod, node, gpus, -1)

    def release(self, pod: SharePod, node: int, gpus: tuple[int, ...]) -> None:
        self._apply(pod, node, gpus, +1)

    def _apply(self, pod: SharePod, node: int, gpus: tuple[int, ...], sign: int) -> None:
        self.cpu_left[node] += sign * pod.cpu
        self.memory_left[node] += sign * pod.memory
        row = self.gpu_left[node]
        for gpu in gpus:
            row[gpu] += sign * pod.milli
        self.gpu_total_left[node] = row.sum()
        self.gpu_free_whole[node] = int((row == MILLI).sum())
        self.gpu_most_left[node] = row.max()
        self.affinity[node, pod.tag] -= sign
        self.allocated_milli -= sign * pod.total_milli
        self.changed.append(node)
