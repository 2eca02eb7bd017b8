"""The Score of NodeResourcesFit and NodeResourcesBalancedAllocation (noderesources' resource_allocation.go,
least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go, balanced_allocation.go), in the scheduler's
integer arithmetic, MaxNodeScore 100.

Per resource of the strategy: the node's allocatable, and what is requested there with the pod. NodeResourcesFit
counts cpu and memory as non-zero requests (100m and 200Mi for a container that sets none), BalancedAllocation the
requests as written. A scalar resource (extended, hugepages) the pod does not request, and a resource the node does
not have (allocatable 0), are left out, with their weight.
- LeastAllocated: (allocatable - requested) * 100 / allocatable, 0 when over; MostAllocated: min(requested,
  allocatable) * 100 / allocatable; both combined as sum(score * weight) / sum(weight), integer division.
- RequestedToCapacityRatio: the shape (utilization %, score 0..10, scaled by 10) as a broken line at requested * 100 /
  allocatable (integer), the top of the line when over; resources scoring 0 leave the average, which is rounded.
- BalancedAllocation: balance = 100 * (1 - the standard deviation of the requested fractions, each at most 1),
  with two resources |f1 - f2| / 2. Up to 1.35 the score is the balance with the pod; from 1.36 the change it
  makes, 50 + (50 + balance with - balance without) / 2 (kubernetes#135573; 75: no change). A pod that requests none
  of its resources is skipped (PreScore, best effort).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ....models.kube import KubePod, is_scalar
from ..names import NODE_RESOURCES_BALANCED_ALLOCATION, NODE_RESOURCES_FIT
from ..nodeinfo import KubeNodeInfo
from ..profile import Profile

__all__ = ["MAX_NODE_SCORE", "fit_score", "balanced_score", "balanced_skipped", "FIT", "BALANCED"]

MAX_NODE_SCORE = 100
FIT, BALANCED = NODE_RESOURCES_FIT, NODE_RESOURCES_BALANCED_ALLOCATION
BALANCE_CHANGE = (1, 36)  # BalancedAllocation scores the change of balance the pod makes


def _allocatable_requested(info: KubeNodeInfo, resource: str, pod_request: int, nonzero: bool) -> tuple[int, int]:
    """calculateResourceAllocatableRequest: (0, 0) leaves the resource out."""
    if pod_request == 0 and is_scalar(resource):
        return 0, 0
    allocatable = info.node.allocatable.get(resource, 0)
    if resource not in ("cpu", "memory", "ephemeral-storage") and resource not in info.node.allocatable:
        return 0, 0
    requested = info.nonzero_requested if nonzero and resource in ("cpu", "memory") else info.requested
    return allocatable, requested.get(resource, 0) + pod_request


def _vectors(
    pod: KubePod, info: KubeNodeInfo, resources: tuple[tuple[str, int], ...], nonzero: bool, with_pod: bool = True
) -> list[tuple[int, int, int]]:
    """(requested, allocatable, weight) of each resource the node has; `with_pod=False`: what the node's pods
    request alone (the resources the pod's requests select)."""
    found = []
    for name, weight in resources:
        pod_request = (pod.nonzero if nonzero and name in ("cpu", "memory") else pod.requests).get(name, 0)
        allocatable, requested = _allocatable_requested(info, name, pod_request, nonzero)
        if allocatable:
            found.append((requested if with_pod else requested - pod_request, allocatable, weight))
    return found


def _least(requested: int, capacity: int) -> int:
    return 0 if requested > capacity else (capacity - requested) * MAX_NODE_SCORE // capacity


def _most(requested: int, capacity: int) -> int:
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _broken_line(shape: tuple[tuple[int, int], ...]) -> Callable[[int], int]:
    points = [(utilization, score * (MAX_NODE_SCORE // 10)) for utilization, score in shape]

    def at(p: int) -> int:
        for i, (utilization, _) in enumerate(points):
            if p <= utilization:
                if i == 0:
                    return points[0][1]
                (u0, s0), (u1, s1) = points[i - 1], points[i]
                return s0 + _go_div((s1 - s0) * (p - u0), u1 - u0)
        return points[-1][1]

    return at


def _go_div(a: int, b: int) -> int:
    """Go's integer division truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def fit_score(pod: KubePod, info: KubeNodeInfo, profile: Profile) -> int:
    vectors = _vectors(pod, info, profile.fit_resources, nonzero=True)
    if profile.strategy == "RequestedToCapacityRatio":
        line = _broken_line(profile.shape)
        total = weights = 0
        for requested, allocatable, weight in vectors:
            score = line(100) if requested > allocatable else line(requested * 100 // allocatable)
            if score > 0:
                total += score * weight
                weights += weight
        return round_half_away(total / weights) if weights else 0
    each = _most if profile.strategy == "MostAllocated" else _least
    total = sum(each(requested, allocatable) * weight for requested, allocatable, weight in vectors)
    weights = sum(weight for _, _, weight in vectors)
    return total // weights if weights else 0


def round_half_away(value: float) -> int:
    """Go's math.Round: halves away from zero."""
    return int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))


def balanced_skipped(pod: KubePod, profile: Profile) -> bool:
    """PreScore: a pod that requests none of the resources (best effort) is not scored by BalancedAllocation."""
    return all(pod.requests.get(name, 0) == 0 for name, _ in profile.balanced_resources)


def _balance(vectors: list[tuple[int, int, int]]) -> int:
    fractions = [min(requested / allocatable, 1.0) for requested, allocatable, _ in vectors]
    deviation = 0.0
    if len(fractions) == 2:
        deviation = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        deviation = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - deviation) * MAX_NODE_SCORE)


def balanced_score(pod: KubePod, info: KubeNodeInfo, profile: Profile, version: tuple[int, ...] = (1, 37)) -> int:
    vectors = _vectors(pod, info, profile.balanced_resources, nonzero=False)
    with_pod = _balance(vectors)
    if tuple(version[:2]) < BALANCE_CHANGE:
        return with_pod
    without = _balance(_vectors(pod, info, profile.balanced_resources, nonzero=False, with_pod=False))
    half = MAX_NODE_SCORE // 2
    return half + _go_div(half + with_pod - without, 2)
