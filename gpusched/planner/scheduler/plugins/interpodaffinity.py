"""InterPodAffinity: required pod affinity and anti-affinity, the pod's and the existing pods'
(pkg/scheduler/framework/plugins/interpodaffinity).

PreFilter counts per topology pair (key, value of the node): existing pods whose required anti-affinity terms select
the incoming pod; existing pods that match all the incoming pod's affinity terms; existing pods that match each of
its anti-affinity terms. Nothing to check (no existing anti-affinity selects the pod, and it has no required terms)
skips the plugin. Terms are read resolved (`PodAffinityTerm.resolved`): matchLabelKeys/mismatchLabelKeys merged into
the selector, the owner's namespace by default; a namespaceSelector sees the namespaces' labels as read (`kubectl get namespaces`),
else only the `kubernetes.io/metadata.name` label every namespace has (and the prediction says so).

Filter, in this order: the node lacks an affinity term's topology key, or no matching pod is in its domain, is
UnschedulableAndUnresolvable — except for the first pod of a group that matches its own terms while no pod anywhere
matches them; a pod matching an anti-affinity term in the node's domain is Unschedulable; so is a domain holding an
existing pod whose anti-affinity selects this pod. Pods added to or removed from the filtered node (nominated pods,
preemption victims) update the counts as AddPod and RemovePod do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ....models.kube import KubeNode, KubePod
from ....models.topology import NamespaceLabels, PodAffinityTerm
from ..framework import SUCCESS, Status, Version, unresolvable, unschedulable
from ..names import INTER_POD_AFFINITY as NAME
from ..nodeinfo import KubeNodeInfo

__all__ = [
    "NAME",
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "InterPodAffinity",
    "requeued_by_deletion",
    "affinity_scores",
]

ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

Pairs = Counter[tuple[str, str]]  # (topology key, value) -> matching pods; zero entries dropped, as the Go maps do


# PreFilter merges the namespaces an incoming pod's namespaceSelector lists into the term and then sets the selector to
# Nothing, but up to 1.35 on a copy of the term (mergeAffinityTermNamespacesIfNotEmpty took it by value): the
# selector stays, and the later AffinityTerm.Matches(pod, nil) also accepts any namespace when it matches no labels
# (a DoesNotExist, say). 1.35.4 by value, 1.37.2 by pointer; 1.36 is not checked and taken as 1.37.
SELECTOR_REPLACED = (1, 37)


def _selects_all(
    terms: tuple[PodAffinityTerm, ...], pod: KubePod, known: NamespaceLabels | None, unlabelled: bool
) -> bool:
    """podMatchesAllAffinityTerms (of the incoming pod's terms): false for no terms."""
    return bool(terms) and all(term.selects(pod.namespace, pod.labels, known, unlabelled) for term in terms)


def requeued_by_deletion(pod: KubePod, deleted: KubePod, version: Version) -> bool:
    """The plugin's queueing hint when an assigned pod is deleted (a preemption victim, say): whether the pending pod is
    retried at once, or waits in the unschedulable queue (up to podMaxInUnschedulablePodsDuration, 5 min). Up to 1.35
    only a deleted pod that every anti-affinity term of the pending pod selects requeues it; from 1.36 one that any
    term selects, or whose own anti-affinity selects the pending pod (kubernetes#135325)."""
    anti = pod.pod_anti_affinity
    if version[:2] < (1, 36):
        return bool(anti) and all(term.selects_as_parsed(deleted.namespace, deleted.labels) for term in anti)
    return any(term.selects_as_parsed(deleted.namespace, deleted.labels) for term in anti) or any(
        term.selects_as_parsed(pod.namespace, pod.labels) for term in deleted.pod_anti_affinity
    )


def _bump(counts: Pairs, node: KubeNode, key: str, delta: int) -> None:
    if key in node.labels:
        pair = (key, node.labels[key])
        counts[pair] += delta
        if counts[pair] == 0:
            del counts[pair]


class InterPodAffinity:
    """One scheduling cycle's state for one pod; `for_pod` is the PreFilter (None: skipped)."""

    name = NAME

    def __init__(
        self,
        pod: KubePod,
        infos: list[KubeNodeInfo],
        namespaces: NamespaceLabels | None = None,
        version: Version = SELECTOR_REPLACED,
    ) -> None:
        self.pod = pod
        self.namespaces = namespaces
        self.unlabelled = version[:2] < SELECTOR_REPLACED  # the incoming pod's selectors also tried on no labels
        self.base = {info.name: info for info in infos}
        self.existing: Pairs = Counter()
        self.affinity: Pairs = Counter()
        self.anti: Pairs = Counter()
        for info in infos:
            self._update(info.node, info.pods, 1, (self.existing, self.affinity, self.anti))

    @classmethod
    def for_pod(
        cls,
        pod: KubePod,
        infos: list[KubeNodeInfo],
        namespaces: NamespaceLabels | None = None,
        version: Version = SELECTOR_REPLACED,
    ) -> InterPodAffinity | None:
        state = cls(pod, infos, namespaces, version)
        return state if state.existing or pod.pod_affinity or pod.pod_anti_affinity else None

    def _update(self, node: KubeNode, pods: Iterable[KubePod], delta: int, maps: tuple[Pairs, Pairs, Pairs]) -> None:
        """updateWithPod for each pod on `node`."""
        existing, affinity, anti = maps
        for other in pods:
            for term in other.pod_anti_affinity:
                if term.selects(self.pod.namespace, self.pod.labels, self.namespaces):
                    _bump(existing, node, term.topology_key, delta)
            if _selects_all(self.pod.pod_affinity, other, self.namespaces, self.unlabelled):
                for term in self.pod.pod_affinity:
                    _bump(affinity, node, term.topology_key, delta)
            for term in self.pod.pod_anti_affinity:
                if term.selects(other.namespace, other.labels, self.namespaces, self.unlabelled):
                    _bump(anti, node, term.topology_key, delta)

    def _maps(self, info: KubeNodeInfo) -> tuple[Pairs, Pairs, Pairs]:
        base = self.base.get(info.name)
        kept = {id(p) for p in info.pods}
        removed = [p for p in base.pods if id(p) not in kept] if base else []
        if not removed and not info.nominated:
            return self.existing, self.affinity, self.anti
        maps = (Counter(self.existing), Counter(self.affinity), Counter(self.anti))
        self._update(info.node, removed, -1, maps)
        self._update(info.node, info.nominated, 1, maps)
        return maps

    def filter(self, pod: KubePod, info: KubeNodeInfo) -> Status:
        existing, affinity, anti = self._maps(info)
        labels = info.labels
        if not self._affinity_holds(affinity, labels):
            return unresolvable(NAME, ERR_REASON_AFFINITY)
        for term in pod.pod_anti_affinity:
            if term.topology_key in labels and anti[(term.topology_key, labels[term.topology_key])] > 0:
                return unschedulable(NAME, ERR_REASON_ANTI_AFFINITY)
        if any(existing[pair] > 0 for pair in labels.items()):
            return unschedulable(NAME, ERR_REASON_EXISTING_ANTI_AFFINITY)
        return SUCCESS

    def _affinity_holds(self, affinity: Pairs, labels: dict[str, str]) -> bool:
        """satisfyPodAffinity: every topology key on the node, a matching pod in each domain; or the first pod of a
        group that matches its own terms, when no pod anywhere matches them."""
        terms = self.pod.pod_affinity
        if any(term.topology_key not in labels for term in terms):
            return False
        if all(affinity[(term.topology_key, labels[term.topology_key])] > 0 for term in terms):
            return True
        return not affinity and _selects_all(terms, self.pod, self.namespaces, self.unlabelled)


def affinity_scores(
    pod: KubePod,
    scored: list[KubeNodeInfo],
    infos: list[KubeNodeInfo],
    namespaces: NamespaceLabels | None,
    hard_weight: int = 1,
    ignore_existing: bool = False,
    version: Version = SELECTOR_REPLACED,
) -> dict[str, int] | None:
    """PreScore, Score and NormalizeScore of preferred inter-pod affinity (None: skipped).

    For every existing pod, on a node with labels, per topology pair of its node: + the weight of each preferred
    affinity term of the pod it matches, - each preferred anti-affinity term's; + hardPodAffinityWeight for each
    required affinity term of the existing pod that the pod matches; + / - the weights of the existing pod's
    preferred affinity / anti-affinity terms the pod matches. A node scores the sum over its labels' pairs;
    normalised to 100 * (score - min) / (max - min), truncated. Skipped when nothing adds up to any pair (or,
    with ignorePreferredTermsOfExistingPods, when the pod has no preferred terms)."""
    own = [(t.weight, t.term.resolved(pod.namespace, pod.labels)) for t in pod.preferred_affinity]
    own_anti = [(t.weight, t.term.resolved(pod.namespace, pod.labels)) for t in pod.preferred_anti_affinity]
    if ignore_existing and not own and not own_anti:
        return None
    unlabelled = version[:2] < SELECTOR_REPLACED
    pairs: dict[tuple[str, str], int] = {}

    def add(term: PodAffinityTerm, weight: int, labels: dict[str, str]) -> None:
        if term.topology_key in labels:
            pair = (term.topology_key, labels[term.topology_key])
            pairs[pair] = pairs.get(pair, 0) + weight

    for info in infos:
        labels = info.labels
        if not labels:
            continue
        for other in info.pods:
            for weight, term in own:
                if term.selects(other.namespace, other.labels, namespaces, unlabelled):
                    add(term, weight, labels)
            for weight, term in own_anti:
                if term.selects(other.namespace, other.labels, namespaces, unlabelled):
                    add(term, -weight, labels)
            if hard_weight > 0:
                for term in other.pod_affinity:
                    if term.selects(pod.namespace, pod.labels, namespaces):
                        add(term, hard_weight, labels)
            for sign, weighted in ((1, other.preferred_affinity), (-1, other.preferred_anti_affinity)):
                for entry in weighted:
                    term = entry.term.resolved(other.namespace, other.labels)
                    if term.selects(pod.namespace, pod.labels, namespaces):
                        add(term, sign * entry.weight, labels)
    if not pairs:
        return None
    raw = {info.name: sum(pairs.get((key, value), 0) for key, value in info.labels.items()) for info in scored}
    low, high = min(raw.values(), default=0), max(raw.values(), default=0)
    return {node: int(100 * ((score - low) / (high - low))) if high > low else 0 for node, score in raw.items()}
