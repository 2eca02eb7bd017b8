"""The public entry: Allocate(node, claims) runs the search and turns what it took into AllocationResults."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from ...models.dra import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    NodeSelector,
    ResourceClaim,
)
from ...models.scheduling import NodeSelectorRequirement, NodeSelectorTerm
from . import features
from .inventory import Inventory, NodeRef
from .search import Entry, Taken, _Search

__all__ = ["FAILED_INVALID_POOLS", "allocate", "iter_devices", "share_id", "allocated_devices"]

FAILED_INVALID_POOLS = "invalid resource pools were encountered"


# --- results --------------------------------------------------------------------------------------------------


def _node_selector(results: list[Taken], node: NodeRef) -> NodeSelector | None:
    """createNodeSelector: pinned to the node if any device is node-local; merged slice selectors; else none."""
    fields: list[NodeSelectorRequirement] = []
    expressions: list[NodeSelectorRequirement] = []
    for taken in results:
        spec, device = taken.entry.slice.spec, taken.entry.device
        name, selector = (
            (device.node_name, device.node_selector)
            if spec.per_device_node_selection
            else (spec.node_name, spec.node_selector)
        )
        if name or device.binds_to_node:
            pin = NodeSelectorRequirement(key="metadata.name", operator="In", values=(node.name,))
            return NodeSelector(node_selector_terms=(NodeSelectorTerm(match_fields=(pin,)),))
        if selector is not None:
            term = selector.node_selector_terms[0]
            fields.extend(r for r in term.match_fields if r not in fields)
            expressions.extend(r for r in term.match_expressions if r not in expressions)
    if not fields and not expressions:
        return None
    return NodeSelector(
        node_selector_terms=(NodeSelectorTerm(match_fields=tuple(fields), match_expressions=tuple(expressions)),)
    )


def _configs(search: _Search, ci: int) -> tuple[DeviceAllocationConfiguration, ...]:
    """Class configs once per class (FromClass), then the claim's own (FromClaim). From 1.37 a claim config is added
    once and `requests` is cleared when it covers all; before, a claim config is added once per request it names."""
    claim = search.claims[ci]
    requests = claim.spec.devices.requests
    chosen = [search.data[(ci, ri, search.selected.get((ci, ri), 0))] for ri in range(len(requests))]
    trimmed = features.changed("config-requests-trimmed", search.inventory.version)
    configs: list[DeviceAllocationConfiguration] = []
    by_class: dict[str, list[int]] = {}
    for data in chosen:
        slots = by_class.get(data.cls.metadata.name)
        if slots is not None:
            for slot in slots:
                configs[slot] = configs[slot].model_copy(
                    update={"requests": (*(configs[slot].requests or ()), data.name)}
                )
            continue
        by_class[data.cls.metadata.name] = []
        for class_config in data.cls.spec.config:
            by_class[data.cls.metadata.name].append(len(configs))
            configs.append(
                DeviceAllocationConfiguration(source="FromClass", requests=(data.name,), opaque=class_config.opaque)
            )
    for config in claim.spec.devices.config:
        named = sum(d.base in config.requests or d.name in config.requests for d in chosen)
        times = 1 if not config.requests else min(named, 1) if trimmed else named
        configs.extend(
            DeviceAllocationConfiguration(source="FromClaim", requests=config.requests or None, opaque=config.opaque)
            for _ in range(times)
        )
    if not trimmed:
        return tuple(configs)
    return tuple(
        config.model_copy(update={"requests": None})
        if config.requests and all(d.base in config.requests or d.name in config.requests for d in chosen)
        else config
        for config in configs
    )


def share_id(claim: str, index: int, taken: Taken) -> str:
    """The scheduler gives each share a random UID (uuid.NewUUID); gpusched a UUID of its own, fixed by the claim,
    the result's place and the device, so that its output is reproducible."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"gpusched/share/{claim}/{index}/{'/'.join(taken.entry.id)}"))


def _allocation(search: _Search, ci: int) -> AllocationResult:
    key = search.claims[ci].key
    results = tuple(
        DeviceRequestAllocationResult(
            request=taken.data.name,
            driver=taken.entry.id[0],
            pool=taken.entry.id[1],
            device=taken.entry.id[2],
            admin_access=True if taken.data.request.admin else None,
            tolerations=(taken.data.request.tolerations or None) if search.inventory.taints else None,
            share_id=share_id(key, index, taken) if taken.share else None,
            consumed_capacity={name: amount.text for name, amount in taken.consumed.items()}
            if taken.consumed
            else None,
        )
        for index, taken in enumerate(search.results[ci])
    )
    devices = DeviceAllocationResult(results=results, config=_configs(search, ci) or None)
    return AllocationResult(devices=devices, node_selector=_node_selector(search.results[ci], search.node))


def allocate(
    inventory: Inventory, node: NodeRef, claims: list[ResourceClaim], prune: bool = True
) -> list[AllocationResult] | str:
    """Allocate(node, claims): one result per claim, or the node's Unschedulable reason; DraError for an error. A node
    whose real search may pass the scheduler's filter timeout goes into `inventory.slow`.

    Every device class a claim names must exist (the plugin's PreFilter checks that before any node is tried).
    """
    search = _Search(inventory, node, claims, prune)
    search.setup()
    if search.infeasible() and search.long():  # the real search is long: run it so, where it may time out
        inventory.slow.add(node.name)
        search = _Search(inventory, node, claims, False)
        search.setup()
    try:
        found = not search.infeasible() and search.one(0, 0, 0, 0, False, 0)
    finally:
        search.spent()
        if search.slow:
            inventory.slow.add(node.name)
    if not found:
        return FAILED_INVALID_POOLS if any(pool.invalid for pool in search.pools) else ""
    return [_allocation(search, ci) for ci in range(len(claims))]


def iter_devices(inventory: Inventory, node: NodeRef) -> Iterator[Entry]:
    """Every device in a complete, valid pool reachable from the node, in search order (for diagnosis)."""
    return iter(_Search(inventory, node, [], False).entries)


def allocated_devices(allocation: dict) -> list[str]:
    """Each result of an allocation (as written) for people: pool/device, the firstAvailable subrequest used, and
    for a share of a multi-allocatable device what it consumes."""
    found = []
    for result in allocation.get("devices", {}).get("results", []):
        text = f"{result['pool']}/{result['device']}"
        notes = [result["request"]] if "/" in result["request"] else []
        if "shareID" in result:
            consumed = result.get("consumedCapacity") or {}
            notes.append(" ".join(["a share", *(f"{name}={value}" for name, value in consumed.items())]))
        found.append(f"{text} ({', '.join(notes)})" if notes else text)
    return found
