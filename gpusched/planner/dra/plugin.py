"""kube-scheduler's DynamicResources plugin around the allocator, for one pod's claims (1.37 source, dynamicresources.go).

- PreFilter: a claim the pod names must exist (`could not find ResourceClaim "ns/name"`; a template's claim not yet
  generated: `pod "ns/name": ResourceClaim not created yet`), and every DeviceClass a request or subrequest names
  (`request gpus: device class example-gpu does not exist`). A PreFilter failure rejects every node at once.
- Filter, per node: allocate the unallocated claims together (`cannot allocate all claims`, or `invalid resource pools
  were encountered`); an allocated claim whose node selector excludes the node gives `resourceclaim not available on
  the node`. Every DRA rejection is UnschedulableAndUnresolvable: preemption never helps. An allocator error
  (a CEL runtime error, `All` over an incomplete pool) aborts the whole attempt.
- Score: 8 minus the index of each firstAvailable subrequest used, summed, normalized to 0..100 (weight 2); gpusched
  ranks feasible nodes by it, then by name (the real scheduler adds other plugins' scores and breaks ties at random).
- PostFilter (1.34-1.36): `no new claims to deallocate` without claims, `deallocation of ResourceClaim completed` when
  an allocated claim is unavailable, else `still not schedulable`; 1.37 adds no reason in the last case.

What the scheduler never says, gpusched adds: per node, which selector, count, taint or constraint ruled the devices out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ...models.dra import (
    MAX_SUBREQUESTS,
    AllocationResult,
    DeviceClaim,
    DeviceConstraint,
    ResourceClaim,
    ResourceClaimStatus,
)
from ...models.kube import KubePod
from . import features
from .allocator import allocate, iter_devices
from .capacity import fits
from .inventory import Inventory, NodeRef, gather_pools
from .objects import DraObjects
from .search import DraError, Entry

__all__ = [
    "NO_CLAIMS_TO_DEALLOCATE",
    "CANNOT_ALLOCATE",
    "NOT_AVAILABLE",
    "NO_MATCH",
    "Unit",
    "Cycle",
    "units_for",
    "pod_unit",
    "run_cycle",
    "explain",
    "postfilter_reason",
    "summarize",
    "with_allocation",
    "prefilter",
    "filter_node",
    "score",
    "normalized",
]

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
NO_MATCH = "no device matches the DeviceClass and the selectors"
NOT_CREATED = "ResourceClaim not created yet"
NO_SLICES = "no ResourceSlice offers devices to this node"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"  # the PostFilter before 1.37, with nothing to deallocate
TIMED_OUT = "timed out trying to allocate devices"  # the node's status before 1.36; then an error (features.py)


@dataclass
class Unit:
    """What one scheduling cycle allocates: a pod's claims in spec order (or one claim on its own)."""

    pod: str | None
    claims: list[ResourceClaim]
    templates: dict[str, str] = field(default_factory=dict)  # claim key -> the template it was stamped from
    missing: str = ""  # a PreFilter message known while assembling (claim not found / not created)
    missing_claims: list[str] = field(default_factory=list)  # namespace/name of the claims that do not exist


def _stamp(pod: KubePod, name: str, template_key: str, objects: DraObjects) -> ResourceClaim:
    """The claim the resourceclaim controller creates for a pod from a template (named without its random suffix)."""
    template = objects.templates[template_key]
    meta = template.spec.metadata.model_dump(by_alias=True, exclude_none=True) if template.spec.metadata else {}
    meta.update({"name": f"{pod.name}-{name}", "namespace": pod.namespace})
    return ResourceClaim.model_validate({"metadata": meta, "spec": template.spec.spec.model_dump(by_alias=True)})


def pod_unit(pod: KubePod, objects: DraObjects) -> Unit:
    """The pod's claims: named claims looked up, template claims generated (or stamped, as the controller would)."""
    by_key = {claim.key: claim for claim in objects.claims}
    unit = Unit(pod.key, [])
    for entry in pod.claims:
        name = entry.claim_name or entry.generated
        if name:
            claim = by_key.get(f"{pod.namespace}/{name}")
            if claim is None:
                unit.missing = unit.missing or f'could not find ResourceClaim "{pod.namespace}/{name}"'
                unit.missing_claims.append(f"{pod.namespace}/{name}")
                continue
            unit.claims.append(claim)
            continue
        template_key = f"{pod.namespace}/{entry.template_name}"
        if template_key not in objects.templates:
            unit.missing = unit.missing or f'pod "{pod.key}": {NOT_CREATED}'
            unit.missing_claims.append(f"{pod.namespace}/{pod.name}-{entry.name}")
            continue
        claim = _stamp(pod, entry.name, template_key, objects)
        unit.claims.append(claim)
        unit.templates[claim.key] = template_key
    return unit


def units_for(objects: DraObjects) -> list[Unit]:
    """Pods in file order, then every claim no pod uses, each as a pod of its own."""
    units = [pod_unit(pod, objects) for pod in objects.pods]
    used = {claim.key for unit in units for claim in unit.claims}
    units.extend(Unit(None, [claim]) for claim in objects.claims if claim.key not in used)
    return units


@dataclass
class Cycle:
    """One scheduling cycle's DRA verdicts: per node '' (feasible) or the reason; the allocations where feasible."""

    prefilter: str = ""
    reasons: dict[str, str] = field(default_factory=dict)
    allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)
    error: DraError | None = None
    unavailable: dict[str, ResourceClaim] = field(default_factory=dict)  # allocated claims some node could not use

    def record(self, node: NodeRef, unit: Unit, reason: str, results: list[AllocationResult]) -> None:
        """One node's Filter verdict; the claims it found unavailable, which PostFilter may deallocate."""
        self.reasons[node.name] = reason
        if reason == NOT_AVAILABLE:
            self.unavailable.update({claim.key: claim for claim in unit.claims if _unavailable(claim, node)})
        elif not reason:
            self.allocations[node.name] = results
            self.scores[node.name] = score(unit.claims, results)

    @property
    def feasible(self) -> list[str]:
        return [node for node, reason in self.reasons.items() if not reason]

    @property
    def timed_out(self) -> list[str]:
        """Nodes whose search passed the step limit, where the release makes that the node's reason."""
        return [node for node, reason in self.reasons.items() if reason == TIMED_OUT]

    def best(self) -> str | None:
        """The highest DynamicResources score, then the node name."""
        feasible = self.feasible
        return min(feasible, key=lambda node: (-self.scores.get(node, 0), node)) if feasible else None


def prefilter(unit: Unit, inventory: Inventory) -> str:
    if unit.missing:
        return unit.missing
    for claim in unit.claims:
        if claim.status is not None and claim.status.allocation is not None:
            continue
        for request in claim.spec.devices.requests:
            for name, alternative in request.alternatives():
                if alternative.device_class_name not in inventory.classes:
                    return f"request {name}: device class {alternative.device_class_name} does not exist"
    return ""


def _allocated(claim: ResourceClaim) -> AllocationResult | None:
    return claim.status.allocation if claim.status is not None else None


def filter_node(
    inventory: Inventory, node: NodeRef, unit: Unit, prune: bool = True
) -> tuple[str, list[AllocationResult]]:
    """Filter: ('' and the new allocations) when the node fits, else the reason; DraError aborts the attempt. A
    search that passes the step limit is the release's filter timeout: the node's reason before 1.36, an error after."""
    pending = [claim for claim in unit.claims if _allocated(claim) is None]
    results: list[AllocationResult] = []
    if pending:
        try:
            found = allocate(inventory, node, pending, prune)
        except DraError as error:
            if error.timed_out and not features.changed("filter-timeout-is-an-error", inventory.version):
                return TIMED_OUT, []
            raise
        if isinstance(found, str):
            return found or CANNOT_ALLOCATE, []
        results = found
    if any(_unavailable(claim, node) for claim in unit.claims):
        return NOT_AVAILABLE, []
    return "", results


def run_cycle(inventory: Inventory, nodes: list[NodeRef], unit: Unit, prune: bool = True) -> Cycle:
    """PreFilter once, Filter every node (in name order), Score the feasible ones."""
    cycle = Cycle(prefilter=prefilter(unit, inventory))
    if cycle.prefilter:
        return cycle
    for node in sorted(nodes, key=lambda n: n.name):
        try:
            reason, results = filter_node(inventory, node, unit, prune)
        except DraError as error:
            cycle.error = error
            return cycle
        cycle.record(node, unit, reason, results)
    cycle.scores = normalized(cycle.scores)
    return cycle


def normalized(scores: dict[str, int]) -> dict[str, int]:
    """DefaultNormalizeScore: scaled to 0..100 by the highest."""
    top = max(scores.values(), default=0)
    return {node: 100 * value // top if top else 0 for node, value in scores.items()}


def _unavailable(claim: ResourceClaim, node: NodeRef) -> bool:
    allocation = _allocated(claim)
    return bool(
        allocation and allocation.node_selector and not allocation.node_selector.matches(node.name, node.labels)
    )


def score(claims: list[ResourceClaim], new: list[AllocationResult]) -> int:
    """computeScore: every firstAvailable subrequest used scores 8 minus its index."""
    fresh = iter(new)
    total = 0
    for claim in claims:
        allocation = _allocated(claim) or next(fresh)
        used = {result.request for result in allocation.devices.results}
        for request in claim.spec.devices.requests:
            for index, sub in enumerate(request.first_available or ()):
                if f"{request.name}/{sub.name}" in used:
                    total += MAX_SUBREQUESTS - index
    return total


def with_allocation(claim: ResourceClaim, allocation: AllocationResult) -> ResourceClaim:
    status = (claim.status or ResourceClaimStatus()).model_copy(update={"allocation": allocation})
    return claim.model_copy(update={"status": status})


def postfilter_reason(cycle: Cycle, version: tuple[int, ...], pod: str | None = None) -> str:
    """DynamicResources' PostFilter text for a pod (`namespace/name`) with claims; a PreFilter failure leaves it
    none to look at. An unavailable claim is deallocated only when no other pod has it reserved."""
    if cycle.prefilter:
        return NO_CLAIMS_TO_DEALLOCATE if version[:2] < (1, 37) else ""
    if any(_deallocatable(claim, pod) for claim in cycle.unavailable.values()):
        return "deallocation of ResourceClaim completed"
    return "still not schedulable" if version[:2] < (1, 37) else ""


def _deallocatable(claim: ResourceClaim, pod: str | None) -> bool:
    """Reserved for nobody, or for this pod alone."""
    reserved = (claim.status.reserved_for if claim.status else None) or ()
    if not reserved:
        return True
    name = pod.rpartition("/")[2] if pod else None
    return len(reserved) == 1 and reserved[0].get("name") == name


# --- diagnosis --------------------------------------------------------------------------------------------------


def _request_reason(inventory: Inventory, node: NodeRef, claim: ResourceClaim, request_index: int) -> tuple[int, str]:
    """(progress, text) for one request on one node: the best of its alternatives; progress 3 means it could work."""
    request = claim.spec.devices.requests[request_index]
    best: tuple[int, str] = (-1, "")
    for name, alternative in request.alternatives():
        cls = inventory.classes[alternative.device_class_name]
        matched = []
        for entry in iter_devices(inventory, node):
            for selector in (*cls.spec.selectors, *alternative.selectors):  # in order, stopping at the first miss
                outcome = inventory.outcome(entry.id, entry.device, selector.cel.expression)
                if isinstance(outcome, str):
                    return 0, f"selector failed on {'/'.join(entry.id)}: {outcome}"
                if not outcome:
                    break
            else:
                matched.append(entry)
        free = [e for e in matched if alternative.admin or e.id not in inventory.allocated]
        usable = [e for e in free if not inventory.blocks(e.device, alternative)]
        roomy = [e for e in usable if _room(inventory, e, alternative)]
        need = alternative.wanted if alternative.allocation_mode == "ExactCount" else max(len(matched), 1)
        label = f"request {name}: " if len(claim.spec.devices.requests) > 1 or request.first_available else ""
        if not matched:
            found = (0, f"{label}{NO_MATCH}")
        elif len(free) < need:
            found = (1, f"{label}{len(matched)} devices match, {len(free)} free, {need} needed")
        elif len(usable) < need:
            taint = next(t for e in free if e not in usable for t in e.device.taints)
            found = (
                2,
                f"{label}{len(free)} free devices match, {len(free) - len(usable)} with the untolerated "
                f"taint {taint.key}={taint.value}:{taint.effect}, {need} needed",
            )
        elif len(roomy) < need:
            found = (
                2,
                f"{label}{len(usable)} free devices match, {len(usable) - len(roomy)} without room for the capacity "
                f"requested (or outside its request policy), {need} needed",
            )
        else:
            found = (3, f"{label}{len(usable)} free devices match")
        best = max(best, found, key=lambda item: item[0])
    return best


def _room(inventory: Inventory, entry: Entry, request: Any) -> bool:
    """The request's capacity fits the device beside what allocated shares consume (never an error here: the
    search raises it)."""
    if not inventory.consumable:
        return True
    requests = request.capacity.requests if request.capacity else None
    return fits(requests, entry.device.capacity, inventory.consumed.get(entry.id, {}), aborts=False)


def _without_constraints(claim: ResourceClaim, keep: DeviceConstraint | None = None) -> ResourceClaim:
    kept = () if keep is None else (keep,)
    devices = DeviceClaim(requests=claim.spec.devices.requests, constraints=kept, config=claim.spec.devices.config)
    return claim.model_copy(update={"spec": claim.spec.model_copy(update={"devices": devices})})


def explain(inventory: Inventory, node: NodeRef, claims: list[ResourceClaim]) -> str:
    """Why the claims do not allocate on this node, in terms of selectors, counts, taints and constraints."""
    pools = gather_pools(inventory, node)
    if not pools:
        return NO_SLICES
    notes = [
        f"pool {pool.id} is incomplete" if pool.incomplete else f"pool {pool.id} is invalid: {pool.invalid}"
        for pool in pools
        if pool.incomplete or pool.invalid
    ]
    for claim in claims:
        text = _claim_reason(inventory, node, claim)
        if text is None:
            continue
        prefix = f"claim {claim.key}: " if len(claims) > 1 else ""
        return "; ".join([prefix + text, *notes])
    return "; ".join(["each claim allocates alone, not all together (they compete for the same devices)", *notes])


def _alone(inventory: Inventory, node: NodeRef, claim: ResourceClaim) -> str | None:
    """None when the claim allocates on its own; else '' or the allocator's error (which the search of all the
    pod's claims together may never have reached)."""
    try:
        found = allocate(inventory, node, [claim], prune=False)
    except DraError as error:
        return str(error)
    return "" if isinstance(found, str) else None


def _claim_reason(inventory: Inventory, node: NodeRef, claim: ResourceClaim) -> str | None:
    reasons = [_request_reason(inventory, node, claim, i) for i in range(len(claim.spec.devices.requests))]
    failing = [text for progress, text in reasons if progress < 3]
    if failing:
        return "; ".join(failing)
    alone = _alone(inventory, node, claim)
    if alone is None:
        return None
    detail = "; ".join(text for _, text in reasons)
    if alone:
        return f"{detail}, but allocated on its own the allocator stops: {alone}"
    if _alone(inventory, node, _without_constraints(claim)) is not None:
        return (
            f"{detail}, but not enough distinct devices for all requests together (or their shared counters or "
            "consumable capacity run out)"
        )
    enforced = inventory.constraints(claim)
    for constraint in enforced:
        if _alone(inventory, node, _without_constraints(claim, constraint)) is not None:
            return f"{detail}, but no combination satisfies {constraint.kind} {constraint.attribute}"
    kinds = ", ".join(f"{c.kind} {c.attribute}" for c in enforced)
    return f"{detail}, but no combination satisfies {kinds} together"


def summarize(per_node: dict[str, str], limit: int = 3) -> str:
    """One line for a claim over all nodes: nodes grouped by reason, the no-match nodes last."""
    if per_node and all(text == NO_MATCH for text in per_node.values()):
        return "no device on any node matches the DeviceClass and the selectors"
    if per_node and all(text == NO_SLICES for text in per_node.values()):
        return "no ResourceSlice offers devices to any node: no driver has published any"
    groups: dict[str, list[str]] = defaultdict(list)
    for node, text in per_node.items():
        groups[text].append(node)
    parts = []
    for text, names in sorted(groups.items(), key=lambda item: (item[0] == NO_MATCH, item[1][0])):
        shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
        if text == NO_MATCH and len(groups) > 1:
            count = len(names)
            parts.append(f"{NO_MATCH} on the other {count} node{'s' if count > 1 else ''}")
        else:
            parts.append(f"{shown}: {text}")
    return "; ".join(parts)
