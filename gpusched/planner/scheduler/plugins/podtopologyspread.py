"""PodTopologySpread: the pod's DoNotSchedule topologySpreadConstraints (pkg/scheduler/framework/plugins/podtopologyspread).

PreFilter counts, per constraint and topology value, the pods matching the selector in the pod's namespace on the
eligible nodes: nodes that carry every constraint's topology key and pass its nodeAffinityPolicy (default Honor:
nodeSelector and required node affinity) and nodeTaintsPolicy (default Ignore). Terminating pods are not counted,
and an empty selector `{}` counts nothing. With no DoNotSchedule constraint the plugin is skipped: the scheduler's
default constraints (zone and hostname, ScheduleAnyway) and ScheduleAnyway constraints only score.

Filter, per constraint in order: a node without the topology key is UnschedulableAndUnresolvable; otherwise
`count(node's value) + (1 if the pod matches its own selector) - global minimum > maxSkew` is Unschedulable. The
global minimum is 0 while fewer domains than minDomains (default 1) are eligible.

Pods added to or removed from the filtered node (nominated pods, preemption victims) update the counts as AddPod and
RemovePod do: without the terminating and empty-selector exceptions of the first count.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from ....models.kube import KubeNode, KubePod
from ....models.scheduling import selector_matches, terms_match, untolerated
from ....models.topology import TopologySpreadConstraint, matches
from ..framework import SUCCESS, Status, unresolvable, unschedulable
from ..names import POD_TOPOLOGY_SPREAD as NAME
from ..nodeinfo import KubeNodeInfo

__all__ = [
    "NAME",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "PodTopologySpread",
    "spread_scores",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


def _node_affinity(pod: KubePod, node: KubeNode) -> bool:
    required = pod.affinity is None or terms_match(pod.affinity, node.labels, node.name)
    return selector_matches(pod.node_selector, node.labels) and required


def _included(constraint: TopologySpreadConstraint, pod: KubePod, node: KubeNode) -> bool:
    """matchNodeInclusionPolicies."""
    if constraint.node_affinity_policy == "Honor" and not _node_affinity(pod, node):
        return False
    return not (constraint.node_taints_policy == "Honor" and untolerated(node.taints, pod.tolerations) is not None)


class PodTopologySpread:
    """One scheduling cycle's state for one pod; `for_pod` is the PreFilter (None: skipped)."""

    name = NAME

    def __init__(self, pod: KubePod, constraints: tuple[TopologySpreadConstraint, ...], infos: list[KubeNodeInfo]):
        self.pod = pod
        self.constraints = constraints
        self.base = {info.name: info for info in infos}
        self.counts: list[Counter[str]] = [Counter() for _ in constraints]
        for info in infos:
            if not self._has_keys(info.node):
                continue
            for index, constraint in enumerate(constraints):
                if _included(constraint, pod, info.node):
                    value = info.labels[constraint.topology_key]
                    self.counts[index][value] += self._first_count(constraint, info.pods)

    @classmethod
    def for_pod(cls, pod: KubePod, infos: list[KubeNodeInfo]) -> PodTopologySpread | None:
        constraints = tuple(c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule")
        return cls(pod, constraints, infos) if constraints else None

    def _has_keys(self, node: KubeNode) -> bool:
        return all(c.topology_key in node.labels for c in self.constraints)

    def _first_count(self, constraint: TopologySpreadConstraint, pods: Iterable[KubePod]) -> int:
        """countPodsMatchSelector: an empty selector counts nothing; terminating pods are bypassed."""
        selector = constraint.label_selector
        if selector is not None and selector.everything:
            return 0
        return sum(
            1 for p in pods if not p.deleting and p.namespace == self.pod.namespace and matches(selector, p.labels)
        )

    def _counts(self, info: KubeNodeInfo) -> list[Counter[str]]:
        """The counts with the filtered node's pods as `info` has them (updateWithPod for each added or removed)."""
        base = self.base.get(info.name)
        kept = {id(p) for p in info.pods}
        removed = [p for p in base.pods if id(p) not in kept] if base else []
        added = list(info.nominated)
        if not removed and not added or not self._has_keys(info.node):
            return self.counts
        counts = [Counter(c) for c in self.counts]
        for pod, delta in [*((p, -1) for p in removed), *((p, 1) for p in added)]:
            if pod.namespace != self.pod.namespace:
                continue
            for index, constraint in enumerate(self.constraints):
                if matches(constraint.label_selector, pod.labels) and _included(constraint, self.pod, info.node):
                    counts[index][info.labels[constraint.topology_key]] += delta
        return counts

    def filter(self, pod: KubePod, info: KubeNodeInfo) -> Status:
        counts = self._counts(info)
        for index, constraint in enumerate(self.constraints):
            value = info.labels.get(constraint.topology_key)
            if value is None:
                return unresolvable(NAME, ERR_REASON_NODE_LABEL_NOT_MATCH)
            domains = counts[index]
            minimum = min(domains.values()) if len(domains) >= (constraint.min_domains or 1) else 0
            own = 1 if matches(constraint.label_selector, pod.labels) else 0
            if domains.get(value, 0) + own - minimum > constraint.max_skew:
                return unschedulable(NAME, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return SUCCESS


HOSTNAME = "kubernetes.io/hostname"


def spread_scores(pod: KubePod, scored: list[KubeNodeInfo], infos: list[KubeNodeInfo]) -> dict[str, int] | None:
    """PreScore, Score and NormalizeScore for the pod's ScheduleAnyway constraints (None: skipped, no such
    constraint). `scored`: the feasible nodes being scored; `infos`: every node, whose pods are counted.

    Nodes lacking a constraint's topology key are ignored (score 0). Per constraint the pods matching its selector
    are counted in each topology value among the scored nodes (on the node itself for kubernetes.io/hostname),
    weighted by log(number of values + 2) plus maxSkew - 1; the sum is rounded. Normalised: 100 * (max + min -
    score) / max, fewer matching pods scoring higher. The scheduler's default constraints (zone and hostname) apply
    only to pods a Service or a workload controller selects: gpusched is not given those (see `not_modelled`)."""
    constraints = [c for c in pod.spread if c.when_unsatisfiable == "ScheduleAnyway"]
    if not constraints:
        return None
    state = PodTopologySpread(pod, (), [])  # for its counting rules only
    ignored = {i.name for i in scored if not all(c.topology_key in i.labels for c in constraints)}
    values: list[set[str]] = [set() for _ in constraints]
    for info in scored:
        if info.name in ignored:
            continue
        for index, constraint in enumerate(constraints):
            if constraint.topology_key != HOSTNAME:
                values[index].add(info.labels[constraint.topology_key])
    weights = [
        math.log((len(scored) - len(ignored) if c.topology_key == HOSTNAME else len(values[i])) + 2)
        for i, c in enumerate(constraints)
    ]
    counts: list[Counter[str]] = [Counter() for _ in constraints]
    for info in infos:
        if not all(c.topology_key in info.labels for c in constraints):
            continue
        for index, constraint in enumerate(constraints):
            value = info.labels[constraint.topology_key]
            if constraint.topology_key == HOSTNAME or value not in values[index]:
                continue
            if _included(constraint, pod, info.node):
                counts[index][value] += state._first_count(constraint, info.pods)
    raw: dict[str, int] = {}
    for info in scored:
        if info.name in ignored:
            continue
        total = 0.0
        for index, constraint in enumerate(constraints):
            value = info.labels[constraint.topology_key]
            found = (
                state._first_count(constraint, info.pods)
                if constraint.topology_key == HOSTNAME
                else counts[index][value]
            )
            total += found * weights[index] + (constraint.max_skew - 1)
        raw[info.name] = _go_round(total)
    top = max(raw.values(), default=0)
    low = min(raw.values(), default=0)
    return {
        info.name: 0 if info.name in ignored else 100 if top == 0 else 100 * (top + low - raw[info.name]) // top
        for info in scored
    }


def _go_round(value: float) -> int:
    return int(math.floor(value + 0.5))
