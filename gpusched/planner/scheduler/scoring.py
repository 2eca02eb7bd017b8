"""Which node kube-scheduler picks among the feasible ones: its feasible-node search, then PreScore, Score,
NormalizeScore and the weights of the profile, then selectHost (pkg/scheduler/schedule_one.go).

- numFeasibleNodesToFind: with fewer than 100 nodes every node is searched; else percentageOfNodesToScore of them
  (0, the default: 50 - nodes/125 per cent, at least 5), at least 100. The search starts where the last one stopped
  (a rotating index) and stops when it has that many feasible nodes: the nodes scored are then a sample, which
  gpusched cannot know; it scores every feasible node and says so.
- A pod whose nominated node is feasible goes there without scoring; so does a pod with one feasible node.
- Each plugin's scores are normalised over the nodes scored, multiplied by its weight and summed; the highest total
  wins, ties at random (`top`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from ...models.kube import KubePod
from ...models.topology import NamespaceLabels
from .framework import Version
from .names import (
    DYNAMIC_RESOURCES,
    IMAGE_LOCALITY,
    INTER_POD_AFFINITY,
    NODE_AFFINITY,
    POD_TOPOLOGY_SPREAD,
    TAINT_TOLERATION,
    VOLUME_BINDING,
)
from .nodeinfo import KubeNodeInfo
from .plugins import imagelocality, interpodaffinity, nodeaffinity, podtopologyspread, resourceallocation
from .plugins.tainttoleration import intolerable_prefer_no_schedule
from .profile import Profile

__all__ = ["PluginScores", "ScoreReport", "SCORERS", "num_feasible_nodes_to_find", "score_nodes"]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class PluginScores(BaseModel):
    plugin: str
    weight: int
    scores: dict[str, int] = Field(description="node -> the plugin's normalised score (0..100), before its weight")


class ScoreReport(BaseModel):
    scored: list[str] = Field(description="the feasible nodes scored")
    plugins: list[PluginScores] = Field(default_factory=list, description="each Score plugin that ran, in order")
    skipped: list[str] = Field(default_factory=list, description="Score plugins whose PreScore skipped the pod")
    totals: dict[str, int] = Field(default_factory=dict, description="node -> sum of score x weight")
    top: list[str] = Field(description="the nodes the scheduler picks from, at random: the highest total")
    reason: str = Field("", description="why no scoring was needed (one feasible node, the nominated node)")
    sample: str | None = Field(
        None,
        description="when the scheduler scores only a sample of the feasible nodes (numFeasibleNodesToFind): which "
        "nodes, unknown to gpusched, depend on where its last search stopped",
    )
    not_modelled: list[str] = Field(default_factory=list)


def num_feasible_nodes_to_find(percentage: int | None, nodes: int) -> int:
    if nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return nodes
    share = percentage or 0
    if share == 0:
        share = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(nodes * share // 100, MIN_FEASIBLE_NODES_TO_FIND)


def _default_normalized(scores: dict[str, int], reverse: bool = False) -> dict[str, int]:
    """DefaultNormalizeScore: scaled by the highest to 0..100; reverse: 100 minus that (all 100 when all are 0)."""
    top = max(scores.values(), default=0)
    if top == 0:
        return {node: 100 if reverse else score for node, score in scores.items()}
    return {node: (100 - 100 * s // top) if reverse else 100 * s // top for node, s in scores.items()}


def score_nodes(
    pod: KubePod,
    infos: list[KubeNodeInfo],
    feasible: list[str],
    profile: Profile,
    considered: int,
    version: Version,
    namespaces: NamespaceLabels | None = None,
    dra_scores: dict[str, int] | None = None,
) -> ScoreReport:
    """`considered`: the nodes the Filter would search (all, or those a PreFilter left); `dra_scores`: the raw
    DynamicResources scores when the pod has claims."""
    if pod.nominated_node in feasible:
        return ScoreReport(scored=[], top=[pod.nominated_node], reason="the pod's nominated node is feasible")
    if len(feasible) == 1:
        return ScoreReport(scored=[], top=list(feasible), reason="one feasible node: no scoring")
    report = ScoreReport(scored=list(feasible), top=[])
    wanted = num_feasible_nodes_to_find(profile.percentage, considered)
    if wanted < len(feasible):
        report.sample = (
            f"the scheduler scores only the first {wanted} feasible nodes it finds (numFeasibleNodesToFind of "
            f"{considered} nodes), searching from where its last search stopped: the winner is the best of that "
            f"sample; shown: all {len(feasible)} feasible nodes, normalised together"
        )
    by_name = {info.name: info.alone() for info in infos}  # scoring sees no nominated pods
    cycle = _Cycle(pod, [by_name[name] for name in feasible], list(by_name.values()), profile, version, namespaces,
                   dra_scores)  # fmt: skip
    for plugin, weight in profile.weights.items():
        if tuple(version[:2]) < SCORES_FROM.get(plugin, (0, 0)):
            continue  # not a Score plugin in this release
        found = SCORERS[plugin](cycle)
        if found is None:
            report.skipped.append(plugin)
        else:
            report.plugins.append(PluginScores(plugin=plugin, weight=weight, scores=found))
    report.totals = {name: sum(p.scores[name] * p.weight for p in report.plugins) for name in feasible}
    best = max(report.totals.values(), default=0)
    report.top = [name for name in feasible if report.totals[name] == best]
    if not pod.spread and pod.labels and POD_TOPOLOGY_SPREAD in profile.weights and profile.system_spread:
        report.not_modelled.append(
            f"{POD_TOPOLOGY_SPREAD}'s default constraints (zone, hostname) for a pod that a Service, ReplicaSet, "
            "StatefulSet or ReplicationController selects: gpusched is not given those objects"
        )
    report.not_modelled += list(profile.unmodelled)
    return report


@dataclass(frozen=True)
class _Cycle:
    """What a Score plugin reads: the pod, the nodes scored, every node (their pods), the profile's args."""

    pod: KubePod
    scored: list[KubeNodeInfo]
    every: list[KubeNodeInfo]
    profile: Profile
    version: Version
    namespaces: NamespaceLabels | None
    dra_scores: dict[str, int] | None


Scorer = Callable[[_Cycle], "dict[str, int] | None"]  # normalised scores, None when PreScore skips the pod


def _taints(c: _Cycle) -> dict[str, int] | None:
    raw = {i.name: intolerable_prefer_no_schedule(i.taints, c.pod.tolerations) for i in c.scored}
    return _default_normalized(raw, reverse=True)


def _node_affinity(c: _Cycle) -> dict[str, int] | None:
    if not c.pod.preferred_node_affinity:
        return None
    return _default_normalized({i.name: nodeaffinity.preferred_score(c.pod, i.labels, i.name) for i in c.scored})


def _fit(c: _Cycle) -> dict[str, int] | None:
    return {i.name: resourceallocation.fit_score(c.pod, i, c.profile) for i in c.scored}


def _balanced(c: _Cycle) -> dict[str, int] | None:
    if resourceallocation.balanced_skipped(c.pod, c.profile):
        return None
    return {i.name: resourceallocation.balanced_score(c.pod, i, c.profile, c.version) for i in c.scored}


def _spread(c: _Cycle) -> dict[str, int] | None:
    return podtopologyspread.spread_scores(c.pod, c.scored, c.every)


def _inter_pod(c: _Cycle) -> dict[str, int] | None:
    profile = c.profile
    return interpodaffinity.affinity_scores(c.pod, c.scored, c.every, c.namespaces, profile.hard_pod_affinity_weight,
                                            profile.ignore_preferred_terms_of_existing_pods, c.version)  # fmt: skip


def _images(c: _Cycle) -> dict[str, int] | None:
    nodes = [info.node for info in c.every]
    held = imagelocality.holders(nodes)
    return {i.name: imagelocality.image_score(c.pod, i.node, held, len(nodes)) for i in c.scored}


def _dra(c: _Cycle) -> dict[str, int] | None:
    """0 everywhere for a pod without claims (logged, not skipped)."""
    return _default_normalized({i.name: (c.dra_scores or {}).get(i.name, 0) for i in c.scored})


STORAGE_CAPACITY_SCORING = (1, 37)  # the gate's beta, on by default: before it VolumeBinding has no scorer


def _volumes(c: _Cycle) -> dict[str, int] | None:
    """VolumeBinding scores only with StorageCapacityScoring (on by default from 1.37; before, PreScore skips every
    pod): then 0 for a pod without claims (its volumes are `not_modelled`)."""
    if tuple(c.version[:2]) < STORAGE_CAPACITY_SCORING:
        return None
    return dict.fromkeys((i.name for i in c.scored), 0)


# Score plugins that a release before this one does not have (DynamicResources gained Score in 1.35).
SCORES_FROM: dict[str, tuple[int, int]] = {DYNAMIC_RESOURCES: (1, 35)}

# One scorer per plugin of the registry with a Score extension point (a test holds them equal).
SCORERS: dict[str, Scorer] = {
    TAINT_TOLERATION: _taints,
    NODE_AFFINITY: _node_affinity,
    resourceallocation.FIT: _fit,
    POD_TOPOLOGY_SPREAD: _spread,
    INTER_POD_AFFINITY: _inter_pod,
    VOLUME_BINDING: _volumes,
    DYNAMIC_RESOURCES: _dra,
    resourceallocation.BALANCED: _balanced,
    IMAGE_LOCALITY: _images,
}
