"""The cluster as a networkx graph: cluster -> node -> NVLink island -> GPU -> MIG slot.

Edges carry `gbps`, the bandwidth per direction of the link they stand for, so topology questions (which
islands exist, the slowest link a ring of GPUs crosses) are graph questions. A rack-scale NVLink domain is one more
vertex joined to the islands of its member nodes over NVLink, so GPUs on different nodes of one domain reach each
other without the network; paths prefer the faster links.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import networkx as nx

from .cluster import Cluster

__all__ = ["IslandGpu", "choose_gpus", "build_graph", "gpu_id", "path_gbps", "ring_gbps", "allreduce_seconds"]

CLUSTER = ("cluster",)


def gpu_id(node: str, index: int) -> tuple:
    return ("gpu", node, index)


def build_graph(cluster: Cluster) -> nx.Graph:
    graph = nx.Graph()
    graph.add_node(CLUSTER, kind="cluster")
    domain_of = {name: domain for domain in cluster.nvlink_domains for name in domain.nodes}
    for domain in cluster.nvlink_domains:
        graph.add_node(("domain", domain.name), kind="domain", name=domain.name)
    for node in cluster.nodes:
        node_id = ("node", node.name)
        graph.add_node(node_id, kind="node", name=node.name)
        graph.add_edge(CLUSTER, node_id, gbps=cluster.network_gbps, link="network")
        block = node.gpu
        if block is None:
            continue
        mapping = block.island_of()
        sizes = {number: list(mapping.values()).count(number) for number in set(mapping.values())}
        for number, size in sizes.items():
            island_id = ("island", node.name, number)
            graph.add_node(island_id, kind="island", node=node.name, number=number, size=size)
            graph.add_edge(node_id, island_id, gbps=block.pcie_gbps, link="pcie")
        fabric = domain_of.get(node.name)
        for index in range(block.count):
            number = mapping[index]
            nvlinked = sizes[number] > 1 or fabric is not None
            graph.add_node(gpu_id(node.name, index), kind="gpu", node=node.name, index=index, model=block.model)
            graph.add_edge(
                ("island", node.name, number),
                gpu_id(node.name, index),
                gbps=block.nvlink_gbps if nvlinked else block.pcie_gbps,
                link="nvlink" if nvlinked else "pcie",
            )
        for instance in block.mig:
            slot_id = ("mig", node.name, instance.gpu, instance.start)
            graph.add_node(slot_id, kind="mig", profile=instance.profile, holder=instance.holder)
            graph.add_edge(gpu_id(node.name, instance.gpu), slot_id, link="mig")
        if fabric is not None:
            for number in sizes:
                graph.add_edge(("island", node.name, number), ("domain", fabric.name), gbps=fabric.gbps, link="nvlink")
    return graph


def path_gbps(graph: nx.Graph, a: tuple, b: tuple) -> tuple[float, str]:
    """Bandwidth and kind of the slowest link on the path between two GPUs (the fastest path, where several)."""
    path = nx.shortest_path(graph, a, b, weight=_seconds_per_gb)
    edges = [graph.edges[u, v] for u, v in zip(path, path[1:], strict=False)]
    slowest = min(edges, key=lambda edge: edge["gbps"])
    return slowest["gbps"], slowest["link"]


def _seconds_per_gb(_u: tuple, _v: tuple, edge: dict) -> float:
    return 1.0 / edge["gbps"] if "gbps" in edge else 1.0


def ring_gbps(graph: nx.Graph, gpus: list[tuple]) -> tuple[float, str]:
    """The slowest link a ring over two or more GPUs must cross, visiting them node by node, island by island."""

    def order(gpu: tuple) -> tuple:
        island = next(n for n in graph.neighbors(gpu) if graph.nodes[n]["kind"] == "island")
        return (gpu[1], island[2], gpu[2])

    ring = sorted(set(gpus), key=order)
    return min(path_gbps(graph, a, b) for a, b in zip(ring, ring[1:] + ring[:1], strict=True))


def allreduce_seconds(gpus: int, gradient_gb: float, bandwidth_gbps: float) -> float:
    """Ring all-reduce lower bound: each GPU sends 2(k-1)/k of the gradient over the slowest link."""
    if gpus < 2 or gradient_gb <= 0 or bandwidth_gbps <= 0:
        return 0.0
    return 2 * (gpus - 1) / gpus * gradient_gb / bandwidth_gbps


class IslandGpu(Protocol):
    """A free GPU as best-fit sees it: its index and its NVLink island."""

    @property
    def index(self) -> int: ...

    @property
    def island(self) -> int: ...


def choose_gpus(candidates: Sequence[IslandGpu], count: int) -> tuple[tuple[int, ...], int, int]:
    """Best fit among islands: the smallest island that holds them all; else the fewest islands, largest first.

    Returns (GPU indices, islands spanned beyond the first, free GPUs left in the islands used).
    """
    by_island: dict[int, list[int]] = {}
    for gpu in candidates:
        by_island.setdefault(gpu.island, []).append(gpu.index)
    fitting = [(len(members), island) for island, members in by_island.items() if len(members) >= count]
    if fitting:
        size, island = min(fitting)
        return tuple(by_island[island][:count]), 0, size - count
    chosen: list[int] = []
    largest_first = [members for _, members in sorted(by_island.items(), key=lambda item: (-len(item[1]), item[0]))]
    for used, members in enumerate(largest_first):
        take = members[: count - len(chosen)]
        chosen.extend(take)
        if len(chosen) == count:
            return tuple(sorted(chosen)), used, len(members) - len(take)
    raise AssertionError("choose_gpus called with too few candidates")
