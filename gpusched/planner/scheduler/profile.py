"""A scheduling profile as kube-scheduler builds it from a KubeSchedulerConfiguration: the release's defaults, or
the user's file (`--scheduler-config`), for what gpusched models of scoring.

Read: the top-level and per-profile percentageOfNodesToScore; each profile's schedulerName; the Score plugins
enabled and disabled (plugins.multiPoint and plugins.score, `*` disabling every default) with their weights;
pluginConfig args of NodeResourcesFit (scoringStrategy: LeastAllocated, MostAllocated, RequestedToCapacityRatio
with its shape; resources and weights), NodeResourcesBalancedAllocation (resources) and InterPodAffinity
(hardPodAffinityWeight, ignorePreferredTermsOfExistingPods), PodTopologySpread's defaultingType List without
defaultConstraints (no default spreading). Defaults: pkg/scheduler/apis/config/v1 (default_plugins.go,
defaults.go), the same in 1.34-1.37. A Score plugin gpusched does not model is named in `unmodelled`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NoReturn

from ...errors import InputError
from ...models.kube import DEFAULT_SCHEDULER
from ...scenarios import read_document
from .names import (
    DYNAMIC_RESOURCES,
    IMAGE_LOCALITY,
    INTER_POD_AFFINITY,
    NODE_AFFINITY,
    NODE_RESOURCES_BALANCED_ALLOCATION,
    NODE_RESOURCES_FIT,
    POD_TOPOLOGY_SPREAD,
    TAINT_TOLERATION,
    VOLUME_BINDING,
)
from .runtime import REGISTRY

__all__ = ["Profile", "default_profile", "load_profiles", "SCORE_PLUGINS", "STRATEGIES"]

# The default profile's Score plugins with their weights (MultiPoint in default_plugins.go), in its order.
DEFAULT_WEIGHTS: dict[str, int] = {
    TAINT_TOLERATION: 3,
    NODE_AFFINITY: 2,
    NODE_RESOURCES_FIT: 1,
    VOLUME_BINDING: 1,
    POD_TOPOLOGY_SPREAD: 2,
    INTER_POD_AFFINITY: 2,
    DYNAMIC_RESOURCES: 1,
    NODE_RESOURCES_BALANCED_ALLOCATION: 1,
    IMAGE_LOCALITY: 1,
}
SCORE_PLUGINS = tuple(DEFAULT_WEIGHTS)
STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))
DEFAULT_SHAPE = ((0, 10), (100, 0))  # RequestedToCapacityRatio's default: least allocated, on 0..10
MAX_CUSTOM_SCORE = 10
CONFIG_KIND = "KubeSchedulerConfiguration"
CONFIG_API = "kubescheduler.config.k8s.io/v1"


@dataclass(frozen=True)
class Profile:
    scheduler_name: str = DEFAULT_SCHEDULER
    weights: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))  # enabled Score plugins
    strategy: str = "LeastAllocated"
    fit_resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = DEFAULT_SHAPE  # (utilization, score 0..10)
    balanced_resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False
    percentage: int | None = None  # percentageOfNodesToScore; None: the top level's; 0: adaptive
    system_spread: bool = True  # PodTopologySpread's system default constraints (defaultingType System)
    unmodelled: tuple[str, ...] = ()


def default_profile() -> Profile:
    return Profile()


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> NoReturn:
        raise InputError(self.source, message, path)

    def mapping(self, value: Any, path: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {type(value).__name__}")
        return value

    def items(self, value: Any, path: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, f"expected a list, got {type(value).__name__}")
        return value

    def integer(self, value: Any, path: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"expected a whole number, got {value!r}")
        if not low <= value <= high:
            self.fail(path, f"must be in the range {low}-{high}, got {value}")
        return value

    def resources(self, value: Any, path: str) -> tuple[tuple[str, int], ...]:
        found = []
        for index, entry in enumerate(self.items(value, path)):
            entry = self.mapping(entry, f"{path}[{index}]")
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                self.fail(f"{path}[{index}].name", "Required value")
            weight = entry.get("weight", 1) or 1  # a weight of 0 is defaulted to 1
            found.append((name, self.integer(weight, f"{path}[{index}].weight", 1, 100)))
        return tuple(found)


def load_profiles(path: str) -> tuple[list[Profile], str]:
    """The profiles of a KubeSchedulerConfiguration file (YAML or JSON), and the file's name for messages."""
    doc = read_document(path)
    reader = _Reader(path)
    root = reader.mapping(doc, "")
    if root.get("kind") != CONFIG_KIND:
        reader.fail("kind", f"expected {CONFIG_KIND}, got {root.get('kind')!r}")
    if root.get("apiVersion") != CONFIG_API:
        reader.fail("apiVersion", f"expected {CONFIG_API}, got {root.get('apiVersion')!r}")
    top = root.get("percentageOfNodesToScore")
    top_percentage = None if top is None else reader.integer(top, "percentageOfNodesToScore", 0, 100)
    entries = reader.items(root.get("profiles"), "profiles") or [{}]
    profiles, names = [], set()
    for index, entry in enumerate(entries):
        profile = _profile(reader, reader.mapping(entry, f"profiles[{index}]"), f"profiles[{index}]", top_percentage)
        if profile.scheduler_name in names:
            reader.fail(f"profiles[{index}].schedulerName", f"Duplicate value: {profile.scheduler_name!r}")
        names.add(profile.scheduler_name)
        profiles.append(profile)
    return profiles, path


def _profile(reader: _Reader, entry: dict, path: str, top_percentage: int | None) -> Profile:
    name = entry.get("schedulerName") or DEFAULT_SCHEDULER
    percentage = entry.get("percentageOfNodesToScore")
    if percentage is not None:
        percentage = reader.integer(percentage, f"{path}.percentageOfNodesToScore", 0, 100)
    weights = dict(DEFAULT_WEIGHTS)
    unmodelled: list[str] = []
    plugins = reader.mapping(entry.get("plugins"), f"{path}.plugins")
    for point in ("multiPoint", "score"):
        where = f"{path}.plugins.{point}"
        section = reader.mapping(plugins.get(point), where)
        for index, disabled in enumerate(reader.items(section.get("disabled"), f"{where}.disabled")):
            plugin = str(reader.mapping(disabled, f"{where}.disabled[{index}]").get("name"))
            if plugin == "*":
                weights.clear()
            else:
                weights.pop(plugin, None)
        for index, enabled in enumerate(reader.items(section.get("enabled"), f"{where}.enabled")):
            plugin_entry = reader.mapping(enabled, f"{where}.enabled[{index}]")
            plugin = str(plugin_entry.get("name"))
            weight = plugin_entry.get("weight") or DEFAULT_WEIGHTS.get(plugin, 1)  # 0 or absent: the default
            weight = reader.integer(weight, f"{where}.enabled[{index}].weight", 1, 100)
            if plugin in DEFAULT_WEIGHTS:
                weights[plugin] = weight
            elif plugin in REGISTRY:
                unmodelled.append(
                    f"{plugin}'s Score (profile {name}): {REGISTRY[plugin].not_modelled or 'not simulated'}"
                )
            else:
                unmodelled.append(f"plugin {plugin} (profile {name}): not in kube-scheduler's in-tree registry")
    profile = Profile(scheduler_name=name, weights=weights, percentage=percentage if percentage is not None
                      else top_percentage, unmodelled=tuple(unmodelled))  # fmt: skip
    for index, config in enumerate(reader.items(entry.get("pluginConfig"), f"{path}.pluginConfig")):
        where = f"{path}.pluginConfig[{index}]"
        config = reader.mapping(config, where)
        args = reader.mapping(config.get("args"), f"{where}.args")
        profile = _args(reader, profile, config.get("name"), args, f"{where}.args")
    return profile


def _args(reader: _Reader, profile: Profile, plugin: Any, args: dict, path: str) -> Profile:
    if plugin == NODE_RESOURCES_FIT:
        strategy = reader.mapping(args.get("scoringStrategy"), f"{path}.scoringStrategy")
        kind = strategy.get("type", "LeastAllocated")
        if kind not in STRATEGIES:
            reader.fail(f"{path}.scoringStrategy.type", f"expected one of {', '.join(STRATEGIES)}, got {kind!r}")
        resources = reader.resources(strategy.get("resources"), f"{path}.scoringStrategy.resources")
        shape = profile.shape
        if kind == "RequestedToCapacityRatio":
            ratio = reader.mapping(
                strategy.get("requestedToCapacityRatio"), f"{path}.scoringStrategy.requestedToCapacityRatio"
            )
            where = f"{path}.scoringStrategy.requestedToCapacityRatio.shape"
            points: list[tuple[int, int]] = []
            for index, point in enumerate(reader.items(ratio.get("shape"), where)):
                point = reader.mapping(point, f"{where}[{index}]")
                utilization = reader.integer(point.get("utilization", 0), f"{where}[{index}].utilization", 0, 100)
                score = reader.integer(point.get("score", 0), f"{where}[{index}].score", 0, MAX_CUSTOM_SCORE)
                if points and utilization <= points[-1][0]:
                    reader.fail(
                        f"{where}[{index}].utilization", "Invalid value: values must be sorted in increasing order"
                    )
                points.append((utilization, score))
            if not points:
                reader.fail(where, "Required value: at least one point must be specified")
            shape = tuple(points)
        return _replace(profile, strategy=kind, fit_resources=resources or DEFAULT_RESOURCES, shape=shape)
    if plugin == NODE_RESOURCES_BALANCED_ALLOCATION:
        resources = reader.resources(args.get("resources"), f"{path}.resources")
        return _replace(profile, balanced_resources=resources or DEFAULT_RESOURCES)
    if plugin == INTER_POD_AFFINITY:
        hard = reader.integer(args.get("hardPodAffinityWeight", 1), f"{path}.hardPodAffinityWeight", 0, 100)
        ignore = bool(args.get("ignorePreferredTermsOfExistingPods", False))
        return _replace(profile, hard_pod_affinity_weight=hard, ignore_preferred_terms_of_existing_pods=ignore)
    if plugin == POD_TOPOLOGY_SPREAD and args.get("defaultingType") == "List" and not args.get("defaultConstraints"):
        return _replace(profile, system_spread=False)  # no default constraints at all
    if plugin in (POD_TOPOLOGY_SPREAD, NODE_AFFINITY) and args:
        keys = ", ".join(sorted(args))
        return _replace(profile, unmodelled=(*profile.unmodelled, f"{plugin} args ({keys})"))
    return profile


def _replace(profile: Profile, **changes: Any) -> Profile:
    from dataclasses import replace

    return replace(profile, **changes)
