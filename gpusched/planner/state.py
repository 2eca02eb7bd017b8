"""The cluster as it is while pods come and go: who holds which GPU, replica and MIG instance.

Built from the validated Cluster model; placing and releasing pods mutate it, the model itself never changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..models.cluster import Cluster, Node
from ..models.scheduling import Taint
from ..models.workload import GpuNeeds

__all__ = [
    "GPU_RESOURCE",
    "SHARED_RESOURCE",
    "DEFAULT_MILLI_CPU",
    "DEFAULT_MEMORY",
    "mig_resource",
    "MigSlot",
    "GpuState",
    "NodeState",
    "ClusterState",
    "node_state",
    "advertised",
]

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"  # time-sliced replicas, where the device plugin renames them
DEFAULT_MILLI_CPU = 100  # the scheduler's scoring counts an empty cpu request as 100m
DEFAULT_MEMORY = 200 * 1024 * 1024  # and an empty memory request as 200Mi


def mig_resource(profile: str) -> str:
    return f"nvidia.com/mig-{profile}"


@dataclass
class MigSlot:
    profile: str
    start: int
    holder: str | None = None


@dataclass
class GpuState:
    index: int
    island: int
    replicas: int
    memory_gib: float
    holders: list[tuple[str, float]] = field(default_factory=list)
    mig: list[MigSlot] = field(default_factory=list)

    @property
    def free_replicas(self) -> int:
        return 0 if self.mig else self.replicas - len(self.holders)

    @property
    def declared_gib(self) -> float:
        return sum(memory for _, memory in self.holders)


@dataclass
class NodeState:
    spec: Node
    gpus: list[GpuState]
    cpu_requested: int = 0  # millicores of pods placed by gpusched
    memory_requested: int = 0  # bytes
    cpu_nonzero: int = 0  # the same with the scheduler's scoring defaults (100m, 200Mi) for empty requests
    memory_nonzero: int = 0

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def labels(self) -> dict[str, str]:
        return self.spec.labels

    @property
    def taints(self) -> list[Taint]:
        return self.spec.taints

    @property
    def unschedulable(self) -> bool:
        """Cordoned: the scheduler's node filters read the same three facts from a kubectl node."""
        return self.spec.unschedulable

    @property
    def model(self) -> str:
        return self.spec.gpu.model if self.spec.gpu else ""

    @property
    def memory_gib(self) -> float:
        return self.spec.gpu.memory_gib if self.spec.gpu else 0.0

    @property
    def time_sliced(self) -> bool:
        return bool(self.spec.gpu and self.spec.gpu.replicas > 1)

    @property
    def gpu_resource(self) -> str:
        """The name its whole GPUs (or replicas) are advertised under."""
        renamed = self.spec.gpu is not None and self.spec.gpu.rename_shared
        return SHARED_RESOURCE if renamed else GPU_RESOURCE

    @property
    def mig_strategy(self) -> str:
        return self.spec.gpu.mig_strategy if self.spec.gpu else "mixed"

    def whole_gpus(self) -> list[GpuState]:
        """GPUs that are not MIG-partitioned."""
        return [gpu for gpu in self.gpus if not gpu.mig]

    def occupy(self, name: str, needs: GpuNeeds, gpus: Sequence[int], mig: Sequence[tuple[int, int]]) -> None:
        """Bind a pod: MIG instances get it as holder, otherwise each GPU (or replica) listed holds it once."""
        taken = set(mig)
        for gpu in self.gpus:
            for slot in gpu.mig:
                if (gpu.index, slot.start) in taken:
                    slot.holder = name
        if not mig:
            for index in gpus:
                self.gpus[index].holders.append((name, needs.memory_gib or 0.0))
        self._account(needs, +1)

    def vacate(self, name: str, needs: GpuNeeds) -> None:
        for gpu in self.gpus:
            gpu.holders = [holder for holder in gpu.holders if holder[0] != name]
            for slot in gpu.mig:
                if slot.holder == name:
                    slot.holder = None
        self._account(needs, -1)

    def _account(self, needs: GpuNeeds, sign: int) -> None:
        self.cpu_requested += sign * needs.cpu_milli
        self.memory_requested += sign * needs.memory_bytes
        self.cpu_nonzero += sign * (needs.cpu_milli or DEFAULT_MILLI_CPU)
        self.memory_nonzero += sign * (needs.memory_bytes or DEFAULT_MEMORY)

    def free_mig(self, profile: str | None = None) -> list[tuple[GpuState, MigSlot]]:
        return [
            (gpu, slot)
            for gpu in self.gpus
            for slot in gpu.mig
            if slot.holder is None and (profile is None or slot.profile == profile)
        ]


@dataclass
class ClusterState:
    nodes: list[NodeState]
    network_gbps: float

    @classmethod
    def from_cluster(cls, cluster: Cluster) -> ClusterState:
        """The state every planner starts from: running pods hold their GPUs and, as kube-scheduler counts them,
        their cpu and memory requests on their nodes (gpusched.planner.validate counts the same)."""
        state = cls([node_state(node) for node in cluster.nodes], cluster.network_gbps)
        for pod in cluster.running_pods():
            node = state.node(pod.node)
            node.cpu_requested += pod.needs.cpu_milli
            node.memory_requested += pod.needs.memory_bytes
        return state

    def __post_init__(self) -> None:
        self._by_name = {node.name: node for node in self.nodes}

    def node(self, name: str) -> NodeState:
        return self._by_name[name]


def node_state(node: Node) -> NodeState:
    """One node's state as its model has it (its busy GPUs and MIG instances held)."""
    block = node.gpu
    if block is None:
        return NodeState(node, [])
    islands = block.island_of()
    gpus = [GpuState(i, islands[i], block.replicas, block.memory_gib) for i in range(block.count)]
    for instance in sorted(block.mig, key=lambda m: (m.gpu, m.start)):
        gpus[instance.gpu].mig.append(MigSlot(instance.profile, instance.start, instance.holder))
    for busy in block.busy:
        gpus[busy.gpu].holders.append((busy.pod, busy.memory_gib))
    return NodeState(node, gpus)


def advertised(node: NodeState) -> dict[str, int]:
    """What the device plugin reports to the kubelet: count × replicas, and MIG instances by strategy."""
    counts: dict[str, int] = {}
    for gpu in node.gpus:
        if gpu.mig:
            for slot in gpu.mig:
                key = GPU_RESOURCE if node.mig_strategy == "single" else mig_resource(slot.profile)
                counts[key] = counts.get(key, 0) + 1
        else:
            counts[node.gpu_resource] = counts.get(node.gpu_resource, 0) + gpu.replicas
    return counts
