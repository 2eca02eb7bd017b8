"""`place`'s rankings (its `--policy`): each a key per candidate node, the smallest wins, ties go to the node name.

binpack ~ NodeResourcesFit MostAllocated, spread ~ LeastAllocated, topology = keep NVLink islands whole.
With a GPU weight, binpack and spread are the real NodeResourcesFit score (integer arithmetic, MaxNodeScore 100)
over cpu:1, memory:1 and the pod's GPU resource at that weight; kube-scheduler breaks ties at random, gpusched
by node name so that runs repeat. The openb experiment's online rules are share policies (`planner/gpushare`).
"""

from __future__ import annotations

from typing import Literal

from ..models.workload import GpuNeeds
from .scheduler.plugins.gpudevices import GpuChoice
from .state import DEFAULT_MEMORY, DEFAULT_MILLI_CPU, advertised

__all__ = ["RANKINGS", "Ranking", "rank", "fit_score", "least_allocated", "most_allocated"]

Ranking = Literal["binpack", "spread", "topology"]
RANKINGS: tuple[Ranking, ...] = ("binpack", "spread", "topology")
MAX_NODE_SCORE = 100


def least_allocated(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_allocated(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def fit_score(option: GpuChoice, pod: GpuNeeds, gpus: int, policy: Ranking, gpu_weight: int) -> int:
    """NodeResourcesFit's score of the node for this pod, the pod's own request included (extended view)."""
    scorer = most_allocated if policy == "binpack" else least_allocated
    node = option.node
    capacity = advertised(node).get(option.resource, 0)
    rows = [
        (node.spec.cpu_milli, node.cpu_nonzero + (pod.cpu_milli or DEFAULT_MILLI_CPU), 1),
        (node.spec.memory_bytes, node.memory_nonzero + (pod.memory_bytes or DEFAULT_MEMORY), 1),
    ]
    if gpus and gpu_weight:  # a scalar resource the pod does not request is left out of the score
        rows.append((capacity, capacity - option.free_after, gpu_weight))
    total = weights = 0
    for allocatable, requested, weight in rows:
        if not allocatable:  # allocatable 0 (or not modelled) is skipped together with its weight
            continue
        total += scorer(requested, allocatable) * weight
        weights += weight
    return total // weights if weights else 0


def rank(option: GpuChoice, pod: GpuNeeds, gpus: int, policy: Ranking, gpu_weight: int | None) -> tuple:
    name = option.node.name
    if gpu_weight is not None:
        return (-fit_score(option, pod, gpus, policy, gpu_weight), name)
    if policy == "spread":
        return (-option.free_after, name)
    if policy == "topology":
        return (option.spans, option.island_left, option.free_after, name)
    return (option.free_after, name)
