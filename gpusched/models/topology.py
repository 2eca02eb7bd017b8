"""Pod-to-pod placement rules as the API stores them: label selectors, pod (anti-)affinity terms, topology spread
constraints. Checked as the API server validates them, so a pod it would refuse is refused here too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from .scheduling import Frozen

__all__ = [
    "METADATA_NAME",
    "LabelSelectorRequirement",
    "LabelSelector",
    "PodAffinityTerm",
    "WeightedPodAffinityTerm",
    "TopologySpreadConstraint",
    "NamespaceLabels",
    "namespace_labels",
]

METADATA_NAME = "kubernetes.io/metadata.name"  # the label the API server puts on every Namespace


NamespaceLabels = Mapping[str, Mapping[str, str]]  # namespace -> its labels, as the scheduler's namespace lister sees


def namespace_labels(namespace: str, known: NamespaceLabels | None = None) -> Mapping[str, str]:
    """A namespace's labels: as read (`kubectl get namespaces`), else only the one the API server always sets."""
    if known is not None and namespace in known:
        return known[namespace]
    return {METADATA_NAME: namespace}


class LabelSelectorRequirement(Frozen):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _values(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"values: must be specified when operator is {self.operator}")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"values: may not be specified when operator is {self.operator}")
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        return present if self.operator == "Exists" else not present


class LabelSelector(Frozen):
    """metav1.LabelSelector; `{}` selects everything. A missing selector (None where it is used) selects nothing."""

    model_config = ConfigDict(populate_by_name=True)

    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: tuple[LabelSelectorRequirement, ...] = Field((), alias="matchExpressions")

    @property
    def everything(self) -> bool:
        """labels.Selector.Empty(): no requirement at all."""
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.match_labels.items()) and all(
            requirement.matches(labels) for requirement in self.match_expressions
        )

    def merged(self, pod_labels: dict[str, str], keys: tuple[str, ...], operator: str = "In") -> LabelSelector:
        """matchLabelKeys (In) / mismatchLabelKeys (NotIn): each key the pod carries adds `key op (its value)`,
        as the API server merges them at creation; adding one already there changes nothing."""
        added = tuple(
            LabelSelectorRequirement(key=key, operator=operator, values=(pod_labels[key],))  # type: ignore[arg-type]
            for key in keys
            if key in pod_labels
        )
        fresh = tuple(requirement for requirement in added if requirement not in self.match_expressions)
        return self.model_copy(update={"match_expressions": self.match_expressions + fresh}) if fresh else self


def matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """A nil selector matches nothing (metav1.LabelSelectorAsSelector gives labels.Nothing())."""
    return selector is not None and selector.matches(labels)


class PodAffinityTerm(Frozen):
    model_config = ConfigDict(populate_by_name=True)

    label_selector: LabelSelector | None = Field(None, alias="labelSelector")
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = Field(None, alias="namespaceSelector")
    topology_key: str = Field(alias="topologyKey", min_length=1)
    match_label_keys: tuple[str, ...] = Field((), alias="matchLabelKeys")
    mismatch_label_keys: tuple[str, ...] = Field((), alias="mismatchLabelKeys")

    @model_validator(mode="after")
    def _keys(self) -> PodAffinityTerm:
        if (self.match_label_keys or self.mismatch_label_keys) and self.label_selector is None:
            raise ValueError("matchLabelKeys, mismatchLabelKeys: must not be specified when labelSelector is not set")
        if set(self.match_label_keys) & set(self.mismatch_label_keys):
            raise ValueError("matchLabelKeys: a key may not be in both matchLabelKeys and mismatchLabelKeys")
        return self

    def resolved(self, owner_namespace: str, owner_labels: dict[str, str]) -> PodAffinityTerm:
        """The term as the scheduler reads it: matchLabelKeys/mismatchLabelKeys merged into the selector, and the
        owner's namespace when neither namespaces nor a namespaceSelector is given."""
        selector = self.label_selector
        if selector is not None:
            selector = selector.merged(owner_labels, self.match_label_keys).merged(
                owner_labels, self.mismatch_label_keys, "NotIn"
            )
        namespaces = self.namespaces
        if not namespaces and self.namespace_selector is None:
            namespaces = (owner_namespace,)
        return self.model_copy(update={"label_selector": selector, "namespaces": namespaces})

    def selects(
        self, namespace: str, labels: dict[str, str], known: NamespaceLabels | None = None, unlabelled: bool = False
    ) -> bool:
        """PodMatchesTermsNamespaceAndSelector, on a resolved term: the namespace is listed or its labels match the
        namespaceSelector, and the pod's labels match the selector. `unlabelled`: the namespaceSelector is also tried
        on no labels at all, as the scheduler's AffinityTerm.Matches(pod, nil) does where the selector was kept."""
        in_namespace = (
            namespace in self.namespaces
            or matches(self.namespace_selector, namespace_labels(namespace, known))
            or (unlabelled and matches(self.namespace_selector, {}))
        )
        return in_namespace and matches(self.label_selector, labels)

    def selects_as_parsed(self, namespace: str, labels: dict[str, str]) -> bool:
        """AffinityTerm.Matches(pod, nil) on the term as GetAffinityTerms builds it (the queueing hints): a listed
        namespace, or a namespaceSelector that matches no labels at all; no namespace's labels are looked up."""
        in_namespace = namespace in self.namespaces or matches(self.namespace_selector, {})
        return in_namespace and matches(self.label_selector, labels)

    @property
    def reads_namespace_labels(self) -> bool:
        """Whether the namespaceSelector asks for a label other than the name label every namespace has."""
        selector = self.namespace_selector
        if selector is None:
            return False
        keys = set(selector.match_labels) | {requirement.key for requirement in selector.match_expressions}
        return bool(keys - {METADATA_NAME})


class WeightedPodAffinityTerm(Frozen):
    model_config = ConfigDict(populate_by_name=True)

    weight: int = Field(ge=1, le=100)
    term: PodAffinityTerm = Field(alias="podAffinityTerm")


class TopologySpreadConstraint(Frozen):
    model_config = ConfigDict(populate_by_name=True)

    max_skew: int = Field(alias="maxSkew", gt=0, le=2**31 - 1)
    topology_key: str = Field(alias="topologyKey", min_length=1)
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = Field(alias="whenUnsatisfiable")
    label_selector: LabelSelector | None = Field(None, alias="labelSelector")
    min_domains: int | None = Field(None, alias="minDomains", gt=0, le=2**31 - 1)
    node_affinity_policy: Literal["Honor", "Ignore"] = Field("Honor", alias="nodeAffinityPolicy")
    node_taints_policy: Literal["Honor", "Ignore"] = Field("Ignore", alias="nodeTaintsPolicy")
    match_label_keys: tuple[str, ...] = Field((), alias="matchLabelKeys")

    @model_validator(mode="after")
    def _checks(self) -> TopologySpreadConstraint:
        if self.min_domains is not None and self.when_unsatisfiable != "DoNotSchedule":
            raise ValueError("minDomains: can only use minDomains if whenUnsatisfiable=DoNotSchedule")
        if self.match_label_keys and self.label_selector is None:
            raise ValueError("matchLabelKeys: must not be specified when labelSelector is not set")
        return self

    def resolved(self, owner_labels: dict[str, str]) -> TopologySpreadConstraint:
        selector = self.label_selector
        if selector is not None:
            selector = selector.merged(owner_labels, self.match_label_keys)
        return self.model_copy(update={"label_selector": selector})
