"""Taints, tolerations and node selection terms: the vocabulary both gpusched's model and kubectl JSON share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .goparse import label_value_error, parse_int64, qualified_name_error

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
    key: str = Field(description="a qualified name, e.g. nvidia.com/gpu")
    value: str = Field("", description="a label value")
    effect: Effect = Field("NoSchedule", description="what it does to pods that do not tolerate it")

    @model_validator(mode="after")
    def _valid(self) -> Taint:
        """A qualified-name key and a label value, as the API server validates a node's taints."""
        if error := qualified_name_error(self.key) or label_value_error(self.value):
            raise ValueError(f"taint {self.key}={self.value}: {error}")
        return self


class Toleration(Frozen):
    key: str = Field("", description="the taint's key; empty with Exists: every taint")
    operator: Literal["Equal", "Exists"] = Field("Equal", description="Exists matches any value")
    value: str = Field("", description="the taint's value (Equal)")
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        "", description="the taint's effect; empty: every effect"
    )

    @model_validator(mode="after")
    def _valid(self) -> Toleration:
        """The API server's rules (ValidateTolerations): a key is a qualified name, an empty key needs Exists,
        Exists takes no value, a value is a label value."""
        if self.key and (error := qualified_name_error(self.key)):
            raise ValueError(f"key {self.key!r}: {error}")
        if not self.key and self.operator != "Exists":
            raise ValueError('operator must be Exists when `key` is empty, which means "match all values and all keys"')
        if self.operator == "Exists" and self.value:
            raise ValueError("value must be empty when `operator` is 'Exists'")
        if error := label_value_error(self.value):
            raise ValueError(f"value {self.value!r}: {error}")
        return self

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

    @model_validator(mode="after")
    def _values_fit_operator(self) -> NodeSelectorRequirement:
        """The API server's rules (ValidateNodeSelectorRequirement): In/NotIn need values, Exists/DoesNotExist
        none, Gt/Lt exactly one."""
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError("values: must be specified when `operator` is 'In' or 'NotIn'")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError("values: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        if self.operator in ("Gt", "Lt") and len(self.values) != 1:
            raise ValueError("values: must be specified single value when `operator` is 'Lt' or 'Gt'")
        return self

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
    """Gt/Lt: both sides parsed by Go's strconv.ParseInt(s, 10, 64); either failing, the requirement does not
    match (labels.Requirement.Matches)."""
    have, bound = parse_int64(value), parse_int64(bounds[0]) if bounds else None
    if have is None or bound is None:
        return False
    return have > bound if operator == "Gt" else have < bound


class NodeSelectorTerm(Frozen):
    """Requirements ANDed; a term with none matches no node (as in Kubernetes)."""

    model_config = ConfigDict(populate_by_name=True)

    match_expressions: tuple[NodeSelectorRequirement, ...] = Field((), alias="matchExpressions")
    match_fields: tuple[NodeSelectorRequirement, ...] = Field((), alias="matchFields")

    @field_validator("match_expressions")
    @classmethod
    def _labels(cls, found: tuple[NodeSelectorRequirement, ...]) -> tuple[NodeSelectorRequirement, ...]:
        """Keys are qualified names, values label values (ValidateNodeSelectorRequirement)."""
        for requirement in found:
            if error := qualified_name_error(requirement.key):
                raise ValueError(f"key {requirement.key!r}: {error}")
            for value in requirement.values:
                if error := label_value_error(value):
                    raise ValueError(f"values: {value!r}: {error}")
        return found

    @field_validator("match_fields")
    @classmethod
    def _node_fields(cls, found: tuple[NodeSelectorRequirement, ...]) -> tuple[NodeSelectorRequirement, ...]:
        """Only `metadata.name`, only In/NotIn, exactly one value (ValidateNodeFieldSelectorRequirement)."""
        for requirement in found:
            if requirement.key != "metadata.name":
                raise ValueError(f"key {requirement.key!r}: not a valid field selector key")
            if requirement.operator not in ("In", "NotIn"):
                raise ValueError(f"operator {requirement.operator!r}: not a valid selector operator")
            if len(requirement.values) != 1:
                raise ValueError("values: must be only one value when `operator` is 'In' or 'NotIn' for node field "
                                 "selector")  # fmt: skip
        return found

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
