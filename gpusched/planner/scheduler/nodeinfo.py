"""The kubectl view's node: a Node with the pods the scheduler counts on it (its NodeInfo)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...models.kube import KubeNode, KubePod, Requests, add
from ...models.scheduling import Taint

__all__ = ["KubeNodeInfo", "snapshot"]


@dataclass(frozen=True)
class KubeNodeInfo:
    """A node with the pods the scheduler counts on it, and their summed requests.

    `nominated`: unbound pods that preemption nominated to this node, of at least the predicted pod's priority;
    the Filter counts them as if they ran here (RunFilterPluginsWithNominatedPods), but they are never victims.
    """

    node: KubeNode
    pods: tuple[KubePod, ...]
    requested: Requests
    dra_mapped: frozenset[str] = frozenset()  # resource names a DeviceClass maps (DRAExtendedResource)
    nominated: tuple[KubePod, ...] = ()
    nonzero_requested: Requests = field(default_factory=dict)  # cpu and memory as the Score plugins count them

    @classmethod
    def of(
        cls,
        node: KubeNode,
        pods: list[KubePod] | tuple[KubePod, ...],
        dra_mapped: frozenset[str] = frozenset(),
        nominated: tuple[KubePod, ...] = (),
    ) -> KubeNodeInfo:
        requested: Requests = {}
        nonzero: Requests = {}
        for pod in (*pods, *nominated):
            requested = add(requested, pod.requests)
            nonzero = add(nonzero, pod.nonzero)
        return cls(node, tuple(pods), requested, dra_mapped, nominated, nonzero)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def labels(self) -> dict[str, str]:
        return self.node.labels

    @property
    def taints(self) -> list[Taint]:
        return self.node.taints

    @property
    def unschedulable(self) -> bool:
        return self.node.unschedulable

    def without(self, gone: list[KubePod]) -> KubeNodeInfo:
        ids = {id(pod) for pod in gone}
        return KubeNodeInfo.of(
            self.node, [pod for pod in self.pods if id(pod) not in ids], self.dra_mapped, self.nominated
        )

    def alone(self) -> KubeNodeInfo:
        """The node without its nominated pods: the Filter's second pass (RunFilterPluginsWithNominatedPods)."""
        return KubeNodeInfo.of(self.node, self.pods, self.dra_mapped) if self.nominated else self

    def delegated(self, name: str) -> bool:
        """shouldDelegateResourceToDRA: a class maps the resource and no device plugin offers it here."""
        return name in self.dra_mapped and self.node.allocatable.get(name, 0) <= 0


def snapshot(
    nodes: list[KubeNode], pods: list[KubePod], target: KubePod, dra_mapped: frozenset[str] = frozenset()
) -> list[KubeNodeInfo]:
    """Bound, non-terminal pods per node, and the pods nominated there that matter to the target; the pod being
    predicted never counts against itself."""
    bound: dict[str, list[KubePod]] = {node.name: [] for node in nodes}
    nominated: dict[str, list[KubePod]] = {node.name: [] for node in nodes}
    for pod in pods:
        if pod.terminal or pod.key == target.key:
            continue
        if pod.node_name in bound:
            bound[pod.node_name].append(pod)
        elif not pod.node_name and pod.nominated_node in nominated and pod.priority >= target.priority:
            nominated[pod.nominated_node].append(pod)
    return [KubeNodeInfo.of(node, bound[node.name], dra_mapped, tuple(nominated[node.name])) for node in nodes]
