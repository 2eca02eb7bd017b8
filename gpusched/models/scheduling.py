"""Taints, tolerations and node selection terms: the vocabulary both gpusched's model and kubectl JSON share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Frozen",
    "Taint",
    "Toleration",
    "untolerated",
    "CORDON_TAINT",
    "cordon_blocks",
    "selector_matches",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "terms_match",
]

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Frozen(BaseModel):
    """Input that is immutable once read, and refuses unknown fields (a typo is an error, not a default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Taint(Frozen):
    key: str
    value: str = ""
    effect: Effect = "NoSchedule"


class Toleration(Frozen):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' ToleratesTaint: empty key with Exists matches every key; empty effect every effect."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def untolerated(taints: list[Taint], tolerations: list[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers (what the TaintToleration filter checks)."""
    for taint in taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


CORDON_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")  # what a cordon stands for


def cordon_blocks(unschedulable: bool, tolerations: list[Toleration]) -> bool:
    """A cordoned node refuses a pod unless the pod tolerates the cordon's taint (the NodeUnschedulable filter);
    the one rule the filter and the validator share."""
    return unschedulable and not any(t.tolerates(CORDON_TAINT) for t in tolerations)


def selector_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


class NodeSelectorRequirement(Frozen):
    """One `matchExpressions`/`matchFields` entry: a key, an operator and its values."""

    model_config = ConfigDict(populate_by_name=True)

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """Label-selector semantics: NotIn and DoesNotExist hold for an absent key; Gt/Lt compare integers."""
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator == "In":
            return present and value in self.values
        if self.operator == "NotIn":
            return not present or value not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        return present and _compare(value, self.values, self.operator)


def _compare(value: str, bounds: tuple[str, ...], operator: str) -> bool:
    """Gt/Lt: both sides must be whole numbers, else the requirement does not match."""
    try:
        have, bound = int(value), int(bounds[0])
    except (ValueError, IndexError):
        return False
    return have > bound if operator == "Gt" else have < bound


class NodeSelectorTerm(Frozen):
    """Requirements ANDed; a term with none matches no node (as in Kubernetes)."""

    model_config = ConfigDict(populate_by_name=True)

    match_expressions: tuple[NodeSelectorRequirement, ...] = Field((), alias="matchExpressions")
    match_fields: tuple[NodeSelectorRequirement, ...] = Field((), alias="matchFields")

    def matches(self, labels: dict[str, str], node_name: str) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False
        fields = {"metadata.name": node_name}
        return all(r.matches(labels) for r in self.match_expressions) and all(
            r.matches(fields) for r in self.match_fields
        )


def terms_match(terms: list[NodeSelectorTerm], labels: dict[str, str], node_name: str) -> bool:
    """requiredDuringSchedulingIgnoredDuringExecution: the terms are ORed."""
    return any(term.matches(labels, node_name) for term in terms)
