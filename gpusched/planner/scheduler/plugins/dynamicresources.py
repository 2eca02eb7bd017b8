"""DynamicResources: the adapter from the kubectl view to the DRA allocator in `planner/dra/`.

The last Filter plugin, its verdict per node cached (pods do not change it). With DRAExtendedResource, a node whose
device plugin does not offer a resource a DeviceClass maps gets the pod's special claim (see dra/extended.py)
allocated after the pod's own claims.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel, Field

from ....models.dra import DeviceClass, ResourceClaim
from ....models.kube import KubeNode, KubePod
from ...dra.cel import compile_selector
from ...dra.extended import SPECIAL_NAME, dra_served, extended_claim
from ...dra.inventory import Inventory, NodeRef
from ...dra.objects import DraObjects
from ...dra.plugin import (
    NO_CLAIMS_TO_DEALLOCATE,
    NOT_AVAILABLE,
    Cycle,
    Unit,
    explain,
    filter_node,
    normalized,
    pod_unit,
    postfilter_reason,
    prefilter,
    summarize,
)
from ...dra.run import error_to_input
from ...dra.search import SEARCH_TIME, DraError, max_steps
from ..framework import NEWEST, SUCCESS, Status, Version, unresolvable
from ..names import DYNAMIC_RESOURCES as NAME
from ..nodeinfo import KubeNodeInfo

__all__ = [
    "NAME",
    "ERR_REASON_NO_CLAIMS",
    "ERR_REASON_NO_STATE",
    "ERR_REASON_DELETING",
    "ClaimPrediction",
    "DynamicResources",
    "postfilter_reasons",
    "pre_enqueue",
]

ERR_REASON_NO_CLAIMS = NO_CLAIMS_TO_DEALLOCATE  # the PostFilter's, before 1.37, for a pod without claims too
ERR_REASON_NO_STATE = "not found"  # the PostFilter's error when an earlier PreFilter failed: its own never ran
ERR_REASON_DELETING = 'resourceclaim "{name}" is being deleted'


class ClaimPrediction(BaseModel):
    """A claim of the pod: where its devices would come from, or why none can."""

    claim: str = Field(description="namespace/name")
    node: str | None = Field(None, description="the node picked among the feasible ones (DRA score, then name)")
    devices: list[str] = Field(default_factory=list, description="pool/device")
    allocation: dict | None = Field(None, description="status.allocation as the scheduler would write it")
    diagnosis: str | None = Field(None, description="gpusched's: what ruled the devices out on each node")


class DynamicResources:
    name = NAME

    def __init__(
        self,
        inventory: Inventory,
        nodes: list[KubeNode],
        unit: Unit,
        objects: DraObjects,
        pod: KubePod | None = None,
        mapping: dict[str, DeviceClass] | None = None,
    ) -> None:
        self.inventory, self.unit, self.objects = inventory, unit, objects
        self.pod, self.mapping = pod, mapping or {}
        self.nodes = {node.name: NodeRef(node.name, node.labels) for node in nodes}
        self.cycle = Cycle(prefilter=prefilter(unit, inventory))
        self.units: dict[str, Unit | None] = {}
        self.request_mappings: dict[str, list[dict]] = {}

    @classmethod
    def for_pod(
        cls,
        pod: KubePod,
        nodes: list[KubeNode],
        objects: DraObjects,
        mapping: dict[str, DeviceClass],
        version: Version = NEWEST,
    ) -> DynamicResources:
        """Devices already allocated to any claim in the objects are held (whole, or a share of a multi-allocatable
        device's capacity); `version` is the allocator's release."""
        return cls(
            Inventory(objects.slices, objects.classes, set(), version, objects.claims),
            nodes,
            pod_unit(pod, objects),
            objects,
            pod,
            mapping,
        )

    def _unit(self, node: KubeNode) -> Unit | None:
        """The node's claims: the pod's own, plus the special claim when DRA serves an extended resource here."""
        if node.name not in self.units:
            served = dra_served(self.pod, node, self.mapping) if self.pod is not None and self.mapping else {}
            if not served or self.pod is None:
                self.units[node.name] = self.unit if self.unit.claims or self.unit.missing else None
            else:
                claim, mappings = extended_claim(self.pod, served, self.mapping)
                self.units[node.name] = replace(self.unit, claims=[*self.unit.claims, claim])
                self.request_mappings[node.name] = mappings
        return self.units[node.name]

    def filter(self, pod: KubePod, node: KubeNodeInfo) -> Status:
        name = node.name
        if name not in self.cycle.reasons:
            unit = self._unit(node.node)
            if unit is None:  # every extended resource comes from a device plugin here, and no claims
                return SUCCESS
            try:
                reason, results = filter_node(self.inventory, self.nodes[name], unit)
            except DraError as error:
                raise error_to_input(error, self.objects) from None
            self.cycle.record(self.nodes[name], unit, reason, results)
        reason = self.cycle.reasons[name]
        return unresolvable(NAME, reason) if reason else SUCCESS

    @property
    def slow(self) -> list[str]:
        """Nodes whose real search may pass the filter timeout (so may time out, or not, whatever gpusched found)."""
        return sorted(self.inventory.slow | set(self.cycle.timed_out))

    @property
    def not_modelled(self) -> list[str]:
        """The search time, where a node's search is long enough that the real one may time out; the selectors
        gpusched's CEL library cannot run (transformMap): every device fails them here, not in the scheduler."""
        found = []
        for claim in self.unit.claims:
            for name, request in (pair for r in claim.spec.devices.requests for pair in r.alternatives()):
                cls = self.inventory.classes.get(request.device_class_name)
                for selector in (*(cls.spec.selectors if cls else ()), *request.selectors):
                    missing = compile_selector(selector.cel.expression).missing
                    if missing:
                        found.append(f"claim {claim.key}, request {name}: a CEL selector uses {missing}, which "
                                     "gpusched's CEL library lacks (it fails on every device here)")  # fmt: skip
        if self.slow:
            found.append(f"{SEARCH_TIME.format(steps=max_steps())} (node {', '.join(self.slow)})")
        return sorted(set(found), key=found.index)

    def _label(self, claim: ResourceClaim) -> str:
        """The special claim is created as `<pod>-extended-resources-<random>`; shown by that generateName."""
        if claim.metadata.name == SPECIAL_NAME:
            return f"{claim.metadata.namespace}/{claim.metadata.generate_name}"
        return claim.key

    def predictions(self, feasible: list[str]) -> list[ClaimPrediction]:
        """The claims on the best feasible node (DRA score, then name), or what ruled each node out."""
        if feasible:
            scores = normalized({node: self.cycle.scores.get(node, 0) for node in feasible})
            best = min(feasible, key=lambda node: (-scores[node], node))
            fresh = iter(self.cycle.allocations.get(best, []))
            found = []
            unit = self.units.get(best) or self.unit
            for claim in unit.claims:
                allocation = claim.status.allocation if claim.status and claim.status.allocation else next(fresh)
                found.append(
                    ClaimPrediction(
                        claim=self._label(claim),
                        node=best,
                        allocation=allocation.wire(),
                        devices=[f"{r.pool}/{r.device}" for r in allocation.devices.results],
                    )
                )
            return found
        refused = sorted(name for name, reason in self.cycle.reasons.items() if reason and reason != NOT_AVAILABLE)
        per_node = {
            name: explain(self.inventory, self.nodes[name], self.units[name].claims)  # type: ignore[union-attr]
            for name in refused
        }
        text = summarize(per_node) if per_node else self.cycle.prefilter or None
        claims = next((self.units[name].claims for name in refused), self.unit.claims)  # type: ignore[union-attr]
        return [ClaimPrediction(claim=self._label(claim), diagnosis=text) for claim in claims]

    def extended_status(self, node: str) -> dict | None:
        """pod.status.extendedResourceClaimStatus as PreBind writes it, when the node uses the special claim."""
        mappings = self.request_mappings.get(node)
        if not mappings or self.pod is None:
            return None
        return {
            "requestMappings": mappings,
            "resourceClaimName": f"{self.pod.name}-extended-resources-",
        }  # the API server appends 5 characters


def postfilter_reasons(dra: DynamicResources | None, version: Version, pod: KubePod) -> list[str]:
    """The PostFilter's reasons, which precede DefaultPreemption's message; 1.37 adds none for a pod without claims."""
    if dra is None:
        return [ERR_REASON_NO_CLAIMS] if version[:2] < (1, 37) else []
    return [reason for reason in [postfilter_reason(dra.cycle, version, pod.key)] if reason]


def pre_enqueue(pod: KubePod, objects: DraObjects) -> str:
    """'' when the pod may be queued; else why PreEnqueue holds it (foreachPodResourceClaim): a claim it names is
    missing or being deleted, or a template that would generate one does not exist. A template's claim the
    controller has yet to create only delays the pod, so gpusched predicts past it (see dra/plugin.pod_unit)."""
    unit = pod_unit(pod, objects)
    if unit.missing:
        return unit.missing
    for claim in unit.claims:
        if claim.key not in unit.templates and (claim.metadata.model_extra or {}).get("deletionTimestamp"):
            return ERR_REASON_DELETING.format(name=claim.metadata.name)
    return ""
