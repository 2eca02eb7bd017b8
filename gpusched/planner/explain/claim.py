"""A DRA ResourceClaim that asks for what a pod needs: the count, the model, the memory, one NVLink island, a MIG
profile — the attributes the integer `nvidia.com/gpu` cannot carry, in the CEL and constraints the allocator reads;
and, for a claim that does not allocate, which one selector or constraint stands in the way."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import replace

from ...models.cluster import Cluster
from ...models.dra import ResourceClaim
from ...models.workload import GpuNeeds
from ..dra.objects import DraObjects, objects_from
from ..dra.run import ClaimOutcome, run_dra
from ..dra.slices import (
    NVIDIA,
    driver_classes,
    island_attribute,
    mig_class,
    product_name,
)
from .edit import Edit
from .report import Change, ClaimInfo, Cost, Explanation, NotHelp

__all__ = ["check_claim", "claim_for", "explain_claim"]

REQUEST = "gpus"


def _selectors(needs: GpuNeeds, driver: str) -> list[str]:
    attributes = f"device.attributes['{driver}']"
    expressions = []
    if needs.mig_profile:
        expressions.append(f"{attributes}.profile == '{needs.mig_profile}'")
    elif needs.model:
        name = product_name(needs.model) if driver == NVIDIA else needs.model
        field = "productName" if driver == NVIDIA else "model"
        expressions.append(f"{attributes}.{field} == '{name}'")
    if needs.memory_gib:
        expressions.append(f"device.capacity['{driver}'].memory.compareTo(quantity('{needs.memory_gib:g}Gi')) >= 0")
    return expressions


def claim_for(name: str, needs: GpuNeeds, gpus: int, driver: str = NVIDIA, namespace: str | None = None) -> dict:
    """resource.k8s.io/v1 ResourceClaim `<name>-gpus` for `gpus` devices of the driver's GPU (or MIG) class."""
    if needs.shared:
        raise ValueError("a time-sliced replica is device configuration (the driver's sharing settings), not a claim")
    device_class = mig_class(driver) if needs.mig_profile else driver
    exactly: dict = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": gpus}
    selectors = _selectors(needs, driver)
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": expression}} for expression in selectors]
    spec: dict = {"devices": {"requests": [{"name": REQUEST, "exactly": exactly}]}}
    if needs.nvlink and gpus > 1 and not needs.mig_profile:
        spec["devices"]["constraints"] = [{"requests": [REQUEST], "matchAttribute": island_attribute(driver)}]
    metadata = {"name": f"{name.rpartition('/')[2]}-gpus"}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata, "spec": spec}


def check_claim(cluster: Cluster, claim: dict, driver: str = NVIDIA) -> ClaimInfo:
    """Allocate the claim with gpusched's DRA allocator against the cluster's slices, as the scheduler would."""
    documents = [*(c.wire() for c in driver_classes(driver)), claim]
    report = run_dra(cluster, objects_from([("the emitted claim", documents)]), driver)
    return _info(report.claims[0])


def _info(outcome: ClaimOutcome) -> ClaimInfo:
    return ClaimInfo(
        claim=outcome.claim,
        allocated=outcome.allocated,
        node=outcome.node,
        devices=outcome.devices,
        reason=outcome.reason,
        diagnosis=outcome.diagnosis,
    )


def _relaxations(claim: dict) -> Iterator[tuple[str, dict]]:
    """(what was dropped, the claim without it): each constraint, then each selector of each `exactly` request."""
    devices = claim["spec"].get("devices", {})
    for index, constraint in enumerate(devices.get("constraints") or []):
        changed = copy.deepcopy(claim)
        del changed["spec"]["devices"]["constraints"][index]
        what = constraint.get("matchAttribute") or "a constraint"
        yield f"drop the constraint matchAttribute {what}", changed
    for r, request in enumerate(devices.get("requests") or []):
        for s, selector in enumerate((request.get("exactly") or {}).get("selectors") or []):
            changed = copy.deepcopy(claim)
            del changed["spec"]["devices"]["requests"][r]["exactly"]["selectors"][s]
            yield f"drop the selector {selector['cel']['expression']} of request {request['name']}", changed


def _allocate(cluster: Cluster | None, objects: DraObjects, driver: str, claim: ResourceClaim) -> ClaimOutcome:
    """The claim's outcome with the objects' copy of it replaced by this one."""
    claims = [claim if c.key == claim.key else c for c in objects.claims]  # in order: earlier claims allocate first
    report = run_dra(cluster, replace(objects, claims=claims), driver)
    return next(outcome for outcome in report.claims if outcome.claim == claim.key)


def explain_claim(cluster: Cluster | None, objects: DraObjects, driver: str, target: str) -> Explanation | None:
    """A ResourceClaim (namespace/name, or a name) by the DRA allocator: where it allocates, or what rules devices out
    and which one selector or constraint, dropped, lets it allocate. None when no claim has that name."""
    claim = next((c for c in objects.claims if target in (c.key, c.metadata.name)), None)
    if claim is None:
        return None
    outcome = _allocate(cluster, objects, driver, claim)
    explanation = Explanation(
        target=claim.key, kind="claim", fits=outcome.allocated, node=outcome.node, claim=_info(outcome)
    )
    if outcome.allocated:
        return explanation
    for summary, relaxed in _relaxations(claim.wire()):
        found = _allocate(cluster, objects, driver, ResourceClaim.model_validate(relaxed))
        if found.allocated:
            edit = Edit(claim=relaxed)
            detail = f"allocates {', '.join(found.devices)}"
            explanation.changes.append(
                Change(
                    kind="claim", summary=summary, details=[detail], cost=Cost(edits=1), lands_on=found.node, edit=edit
                )
            )
        else:
            explanation.will_not_help.append(NotHelp(change=summary, why=f"{found.reason}: {found.diagnosis}"))
    return explanation
