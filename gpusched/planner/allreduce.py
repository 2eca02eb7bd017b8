"""What an NVLink island is worth: the ring all-reduce time bound for a set of GPUs."""

from __future__ import annotations

import networkx as nx
from pydantic import BaseModel

from ..errors import InputError
from ..models.graph import allreduce_seconds, gpu_id, ring_gbps

__all__ = ["AllReduce", "allreduce_for", "parse_placement", "ring_allreduce"]


class AllReduce(BaseModel):
    ring: str  # the GPUs, compactly: dgx-a:0-7+dgx-b:0-3
    gpus: int
    gradient_gb: float
    slowest_gbps: float | None  # None for a single GPU: no link to cross
    link: str | None  # nvlink | pcie | network
    seconds: float


def allreduce_for(graph: nx.Graph, gpus: list[tuple], gradient_gb: float) -> AllReduce:
    ring = sorted(set(gpus))
    gbps, link = ring_gbps(graph, ring) if len(ring) > 1 else (None, None)
    return AllReduce(
        ring=_compact(ring),
        gpus=len(ring),
        gradient_gb=gradient_gb,
        slowest_gbps=gbps,
        link=link,
        seconds=allreduce_seconds(len(ring), gradient_gb, gbps or 0.0),
    )


def _compact(ring: list[tuple]) -> str:
    """The inverse of parse_placement: consecutive indices as ranges, nodes joined by `+`."""
    by_node: dict[str, list[int]] = {}
    for _, node, index in ring:
        by_node.setdefault(node, []).append(index)
    parts = []
    for node, indices in by_node.items():
        runs: list[list[int]] = []
        for index in sorted(indices):
            if runs and index == runs[-1][-1] + 1:
                runs[-1].append(index)
            else:
                runs.append([index])
        spans = ",".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)
        parts.append(f"{node}:{spans}")
    return "+".join(parts)


def parse_placement(graph: nx.Graph, text: str) -> list[tuple]:
    """`pcie-a:0,2`, `dgx-a:0-7`, or several joined by `+` (`dgx-a:0-3+dgx-b:0-3`) -> GPU graph ids; an
    InputError naming the placement otherwise."""
    gpus = []
    for part in text.split("+"):
        node, _, spec = part.partition(":")
        if not spec:
            raise InputError(repr(text), "expected NODE:GPUS such as pcie-a:0,2 or dgx-a:0-7")
        for item in spec.split(","):
            low, _, high = item.partition("-")
            try:
                indices = range(int(low), int(high or low) + 1)
            except ValueError:
                raise InputError(repr(text), f"GPU list {spec!r} is not whole numbers or ranges") from None
            for index in indices:
                if gpu_id(node, index) not in graph:
                    raise InputError(repr(text), f"node {node!r} has no GPU {index}")
                gpus.append(gpu_id(node, index))
    return gpus


def ring_allreduce(graph: nx.Graph, text: str, gradient_gb: float) -> AllReduce:
    return allreduce_for(graph, parse_placement(graph, text), gradient_gb)
