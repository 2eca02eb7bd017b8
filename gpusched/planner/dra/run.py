"""`gpusched dra`: allocate every claim (pod by pod, in file order) against a cluster model's slices and the objects.

A claim's allocation is committed before the next pod is tried, so later claims see its devices as in use, as on a
real cluster where pods are scheduled one after another. A CEL selector that fails at runtime is an error naming the
object and the expression, as the scheduler reports it (the attempt stops); it is not a silent non-match.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, computed_field

from ...errors import InputError
from ...models.cluster import Cluster
from ...models.dra import ResourceClaim
from ..scheduler.framework import fit_error, unresolvable
from ..scheduler.names import DYNAMIC_RESOURCES
from ..scheduler.plugins.defaultpreemption import ERR_REASON_NOT_HELPFUL
from .inventory import DeviceID, Inventory, NodeRef
from .objects import DraObjects, selector_paths, tainted
from .plugin import (
    Cycle,
    Unit,
    explain,
    postfilter_reason,
    run_cycle,
    summarize,
    units_for,
    with_allocation,
)
from .search import SEARCH_TIME, DraError, max_steps
from .slices import EXAMPLE, cluster_slices, held_devices

__all__ = ["ClaimOutcome", "DraReport", "run_dra", "inventory_for", "error_to_input"]


class ClaimOutcome(BaseModel):
    claim: str = Field(description="namespace/name")
    pod: str | None = Field(None, description="the pod whose claim it is (namespace/name); none for a claim alone")
    template: str | None = Field(None, description="the ResourceClaimTemplate it was stamped from")
    allocated: bool
    node: str | None = Field(None, description="where the pod would run (DynamicResources score, then name)")
    devices: list[str] = Field(default_factory=list, description="pool/device per allocated device")
    allocation: dict | None = Field(None, description="status.allocation exactly as the scheduler writes it")
    feasible: list[str] = Field(default_factory=list, description="every node where the pod's claims allocate")
    reason: str | None = Field(None, description="the scheduler's words when not allocated")
    diagnosis: str | None = Field(None, description="gpusched's: what ruled the devices out")
    nodes: dict[str, str] = Field(default_factory=dict, description="per node: the diagnosis")
    message: str | None = Field(None, description="the pod's PodScheduled message (FitError) when not allocated")


class DraReport(BaseModel):
    driver: str
    version: str
    claims: list[ClaimOutcome]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def all_allocated(self) -> bool:
        return all(claim.allocated for claim in self.claims)


def inventory_for(
    cluster: Cluster | None, objects: DraObjects, driver: str = EXAMPLE, version: tuple[int, ...] = (1, 37)
) -> tuple[Inventory, list[NodeRef]]:
    """Slices of the model (with its busy devices held) plus the objects' slices; allocated claims hold theirs."""
    modelled = [tainted(item, objects.taint_rules) for item in cluster_slices(cluster, driver)] if cluster else []
    slices = [*modelled, *objects.slices]
    held: set[DeviceID] = held_devices(cluster, driver) if cluster else set()
    if cluster is not None:
        nodes = [NodeRef(node.name, dict(node.labels)) for node in cluster.nodes]
    else:
        names = {s.spec.node_name for s in slices if s.spec.node_name} | {
            d.node_name for s in slices for d in s.spec.devices if d.node_name
        }
        nodes = [NodeRef(name) for name in sorted(names)]
    if not nodes:
        raise InputError("--cluster", "no nodes: give a cluster (the objects name no node)")
    return Inventory(slices, objects.classes, held, version, objects.claims), nodes


def error_to_input(error: DraError, objects: DraObjects) -> InputError:
    """A selector that fails at runtime, as the scheduler says it, naming the file and field of the object."""
    text = f'running "{DYNAMIC_RESOURCES}" filter plugin: {error}'
    if error.timed_out:
        text += f" (not modelled: {SEARCH_TIME.format(steps=max_steps())})"
    if error.selector is None:
        return InputError("objects", text)
    kind, name, _, expression = error.selector
    label = f"DeviceClass {name}" if kind == "class" else f"ResourceClaim {name}"
    found = {
        obj.key if isinstance(obj, ResourceClaim) else obj.metadata.name: obj
        for obj in (objects.classes.values() if kind == "class" else objects.claims)
    }
    paths = [path for path, text in selector_paths(found[name]) if text == expression] if name in found else []
    source, prefix = objects.origin.get(label, ("objects", ""))
    field = ".".join(filter(None, [prefix, paths[0] if paths else ""]))
    return InputError(source, f"{text} (expression: {expression})", field)


def _failure(
    cycle: Cycle, unit: Unit, inventory: Inventory, nodes: list[NodeRef], version: tuple[int, ...]
) -> tuple[str, str, dict[str, str], str]:
    """(reason, diagnosis, per-node diagnosis, FitError message) for a pod none of whose nodes fit."""
    total = len(nodes)
    post = postfilter_reason(cycle, version, unit.pod)
    if cycle.prefilter:
        inner = fit_error(total, [unresolvable("", ERR_REASON_NOT_HELPFUL)] * total)
        message = fit_error(
            total, [], prefilter=cycle.prefilter, postfilter=", ".join(filter(None, [post, f"preemption: {inner}"]))
        )
        return cycle.prefilter, cycle.prefilter, {}, message
    statuses = [unresolvable(DYNAMIC_RESOURCES, reason) for reason in cycle.reasons.values()]
    inner = fit_error(total, [unresolvable("", ERR_REASON_NOT_HELPFUL)] * total)
    message = fit_error(total, statuses, postfilter=", ".join(filter(None, [post, f"preemption: {inner}"])))
    per_node = {node.name: explain(inventory, node, unit.claims) for node in sorted(nodes, key=lambda n: n.name)}
    reasons = sorted(set(cycle.reasons.values()))
    return ", ".join(reasons), summarize(per_node), per_node, message


def run_dra(
    cluster: Cluster | None,
    objects: DraObjects,
    driver: str = EXAMPLE,
    version: tuple[int, ...] = (1, 37),
    prune: bool = True,
) -> DraReport:
    inventory, nodes = inventory_for(cluster, objects, driver, version)
    outcomes: list[ClaimOutcome] = []
    for unit in units_for(objects):
        cycle = run_cycle(inventory, nodes, unit, prune)
        if cycle.error is not None:
            raise error_to_input(cycle.error, objects)
        outcomes.extend(_outcomes(cycle, unit, inventory, nodes, version))
    return DraReport(driver=driver, version=".".join(map(str, version)), claims=outcomes)


def _outcomes(
    cycle: Cycle, unit: Unit, inventory: Inventory, nodes: list[NodeRef], version: tuple[int, ...]
) -> list[ClaimOutcome]:
    best = cycle.best()
    if best is None:
        reason, diagnosis, per_node, message = _failure(cycle, unit, inventory, nodes, version)
        keys = [*(c.key for c in unit.claims), *unit.missing_claims]
        return [
            ClaimOutcome(
                claim=key,
                template=unit.templates.get(key),
                allocated=False,
                reason=reason,
                diagnosis=diagnosis,
                nodes=per_node,
                message=message,
                pod=unit.pod,
                feasible=cycle.feasible,
            )
            for key in keys
        ]
    fresh = iter(cycle.allocations[best])
    outcomes = []
    for claim in unit.claims:
        allocation = claim.status.allocation if claim.status and claim.status.allocation else next(fresh)
        if claim.status is None or claim.status.allocation is None:
            _commit(inventory, with_allocation(claim, allocation))
        outcomes.append(
            ClaimOutcome(
                claim=claim.key,
                template=unit.templates.get(claim.key),
                allocated=True,
                node=best,
                devices=[f"{r.pool}/{r.device}" for r in allocation.devices.results],
                allocation=allocation.wire(),
                pod=unit.pod,
                feasible=cycle.feasible,
            )
        )
    return outcomes


def _commit(inventory: Inventory, claim: ResourceClaim) -> None:
    """The devices are now in use for every later pod."""
    assert claim.status is not None and claim.status.allocation is not None
    inventory.hold(claim.status.allocation.devices.results)
