"""NodeAffinity: nodeSelector AND the required node affinity terms (ORed), one reason for both.

Its PreFilter narrows the nodes to those that `metadata.name In` matchFields pin, and fails the pod outright when
the terms pin no name at all.
"""

from __future__ import annotations

from typing import Protocol

from ....models.kube import KubePod
from ....models.scheduling import NodeSelectorTerm, selector_matches, terms_match
from ..framework import SUCCESS, Status, unresolvable
from ..names import NODE_AFFINITY as NAME

__all__ = ["NAME", "ERR_REASON", "ERR_REASON_CONFLICT", "NodeAffinity", "preferred_score"]

ERR_REASON = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_CONFLICT = "pod affinity terms conflict"  # the PreFilter's, when the terms pin no node name


class _Pod(Protocol):
    @property
    def node_selector(self) -> dict[str, str]: ...


class _Node(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> dict[str, str]: ...


def _required_terms(pod: _Pod) -> list[NodeSelectorTerm] | None:
    """gpusched's model pods select by labels only; kubectl's may also carry required affinity terms."""
    return pod.affinity if isinstance(pod, KubePod) else None


class NodeAffinity:
    name = NAME

    def filter(self, pod: _Pod, node: _Node) -> Status:
        terms = _required_terms(pod)
        required = terms is None or terms_match(terms, node.labels, node.name)
        return (
            SUCCESS if selector_matches(pod.node_selector, node.labels) and required else unresolvable(NAME, ERR_REASON)
        )

    @staticmethod
    def prefilter(pod: KubePod) -> frozenset[str] | None:
        """Node names the required terms allow by `metadata.name In`; None as soon as one term does not pin names.

        An empty set means the terms conflict: no node can match (ERR_REASON_CONFLICT).
        """
        if not pod.affinity:
            return None
        allowed: set[str] = set()
        for term in pod.affinity:
            pinned: set[str] | None = None
            for requirement in term.match_fields:
                if requirement.key == "metadata.name" and requirement.operator == "In":
                    values = set(requirement.values)
                    pinned = values if pinned is None else pinned & values
            if pinned is None:
                return None
            allowed |= pinned
        return frozenset(allowed)


def preferred_score(pod: KubePod, labels: dict[str, str], node_name: str) -> int:
    """Score: the weights of the preferred terms the node matches (an empty term matches none); NormalizeScore
    scales them to 0..100 by the highest. PreScore skips a pod with no preferred terms."""
    return sum(weight for weight, term in pod.preferred_node_affinity if term.matches(labels, node_name))
