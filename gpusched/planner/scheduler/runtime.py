"""The plugin registry in kube-scheduler's shape (pkg/scheduler/framework/runtime): each plugin of the default
profile declares the extension points it implements and what of it gpusched does not model; a name is registered
once. Profiles (profile.py) are checked against it, and the Score plugins are run from it (scoring.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum

from .names import (
    DEFAULT_PREEMPTION,
    DYNAMIC_RESOURCES,
    IMAGE_LOCALITY,
    INTER_POD_AFFINITY,
    NODE_AFFINITY,
    NODE_NAME,
    NODE_PORTS,
    NODE_RESOURCES_BALANCED_ALLOCATION,
    NODE_RESOURCES_FIT,
    NODE_UNSCHEDULABLE,
    POD_TOPOLOGY_SPREAD,
    SCHEDULING_GATES,
    TAINT_TOLERATION,
    VOLUME_BINDING,
)

__all__ = ["Point", "PluginSpec", "Registry", "REGISTRY"]


class Point(Enum):
    """The extension points gpusched simulates."""

    PRE_ENQUEUE = "PreEnqueue"
    PRE_FILTER = "PreFilter"
    FILTER = "Filter"
    POST_FILTER = "PostFilter"
    PRE_SCORE = "PreScore"
    SCORE = "Score"
    NORMALIZE_SCORE = "NormalizeScore"


@dataclass(frozen=True)
class PluginSpec:
    name: str
    points: frozenset[Point]
    not_modelled: str = ""  # what the real plugin does that gpusched does not simulate; empty: all of it is


class Registry:
    """Plugins by name, in registration order; a second registration of a name is refused."""

    def __init__(self, specs: Iterable[PluginSpec] = ()) -> None:
        self._specs: dict[str, PluginSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: PluginSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"a plugin named {spec.name!r} is already registered")
        self._specs[spec.name] = spec

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[PluginSpec]:
        return iter(self._specs.values())

    def implementing(self, point: Point) -> list[str]:
        return [spec.name for spec in self if point in spec.points]


def _spec(name: str, *points: Point, not_modelled: str = "") -> PluginSpec:
    return PluginSpec(name, frozenset(points), not_modelled)


P = Point
_VOLUMES = "volumes (binding, zones, limits, access modes); only a missing claim is modelled (--pvcs)"
REGISTRY = Registry([
    _spec(SCHEDULING_GATES, P.PRE_ENQUEUE),
    _spec("PrioritySort", not_modelled="the queue's order is modelled by `k8s --queue` alone"),
    _spec(NODE_UNSCHEDULABLE, P.FILTER),
    _spec(NODE_NAME, P.PRE_FILTER, P.FILTER),
    _spec(TAINT_TOLERATION, P.FILTER, P.PRE_SCORE, P.SCORE, P.NORMALIZE_SCORE),
    _spec(NODE_AFFINITY, P.PRE_FILTER, P.FILTER, P.PRE_SCORE, P.SCORE, P.NORMALIZE_SCORE,
          not_modelled="args (addedAffinity)"),
    _spec(NODE_PORTS, P.PRE_FILTER, P.FILTER),
    _spec(NODE_RESOURCES_FIT, P.PRE_FILTER, P.FILTER, P.PRE_SCORE, P.SCORE),
    _spec("VolumeRestrictions", P.PRE_FILTER, not_modelled=_VOLUMES),
    _spec("NodeVolumeLimits", not_modelled=_VOLUMES),
    _spec(VOLUME_BINDING, P.PRE_FILTER, P.PRE_SCORE, P.SCORE, not_modelled=_VOLUMES),
    _spec("VolumeZone", not_modelled=_VOLUMES),
    _spec(POD_TOPOLOGY_SPREAD, P.PRE_FILTER, P.FILTER, P.PRE_SCORE, P.SCORE, P.NORMALIZE_SCORE,
          not_modelled="args (defaultConstraints): only defaultingType List without them"),
    _spec(INTER_POD_AFFINITY, P.PRE_FILTER, P.FILTER, P.PRE_SCORE, P.SCORE, P.NORMALIZE_SCORE),
    _spec(DEFAULT_PREEMPTION, P.POST_FILTER),
    _spec(NODE_RESOURCES_BALANCED_ALLOCATION, P.PRE_SCORE, P.SCORE),
    _spec(IMAGE_LOCALITY, P.SCORE),
    _spec(DYNAMIC_RESOURCES, P.PRE_ENQUEUE, P.PRE_FILTER, P.FILTER, P.POST_FILTER, P.PRE_SCORE, P.SCORE,
          P.NORMALIZE_SCORE),
    _spec("DefaultBinder", not_modelled="binding itself"),
])  # fmt: skip
