"""What the allocator searches: the cluster's slices and classes, the pools a node reaches, what a device shows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ...models.dra import (
    CounterSet,
    Device,
    DeviceClass,
    DeviceConstraint,
    DeviceRequestAllocationResult,
    NodeSelector,
    ResourceClaim,
    ResourceSlice,
)
from ...models.quantity import parse_quantity
from ..scheduler.framework import NEWEST, Version
from . import features
from .cel import CelError, DeviceView, compile_selector, device_view

__all__ = [
    "DeviceID",
    "NodeRef",
    "Inventory",
    "Pool",
    "gather_pools",
    "lookup_attribute",
    "node_matches",
    "tainted",
]

DeviceID = tuple[str, str, str]  # driver, pool, device


@dataclass(frozen=True)
class NodeRef:
    """A node as the allocator sees it: its name and labels (for slice node selectors)."""

    name: str
    labels: dict[str, str] = field(default_factory=dict, hash=False, compare=False)


class Inventory:
    """Everything cluster-wide: slices, classes and allocated devices; caches CEL outcomes per device content.

    A selector is a pure function of `device` (driver, attributes, capacity), so devices that look alike - the same
    GPU on a thousand identical nodes - share one evaluation, errors included.
    """

    def __init__(
        self,
        slices: list[ResourceSlice],
        classes: dict[str, DeviceClass],
        allocated: set[DeviceID],
        version: Version = NEWEST,
        claims: Iterable[ResourceClaim] = (),
    ):
        self.version = version  # the release whose allocator is simulated (features.changed)
        self.consumable = features.enabled("DRAConsumableCapacity", version)
        slices = slices if self.consumable else [_without_consumable(item) for item in slices]
        self.slices = slices
        self.classes = classes
        self.allocated = allocated  # devices allocated whole (dedicated), by the model or an allocated claim
        self.shares: set[DeviceID] = set()  # multi-allocatable devices with a share allocated (a shareID)
        self.consumed: dict[DeviceID, dict[str, Decimal]] = {}  # what those shares consume, per capacity
        for claim in claims:
            if claim.status is not None and claim.status.allocation is not None:
                self.hold(claim.status.allocation.devices.results)
        self.on_node: dict[str, list[ResourceSlice]] = defaultdict(list)
        self.shared: list[ResourceSlice] = []
        for item in slices:
            (self.on_node[item.spec.node_name] if item.spec.node_name else self.shared).append(item)
        self._looks: dict[DeviceID, tuple[Any, ...]] = {}
        self._views: dict[tuple[Any, ...], DeviceView] = {}
        self._outcomes: dict[tuple[tuple[Any, ...], str], bool | str] = {}
        self.slow: set[str] = set()  # nodes whose real search may pass the filter timeout (the allocator adds them)

    def hold(self, results: Iterable[DeviceRequestAllocationResult]) -> None:
        """An allocated claim's devices, as the scheduler's claim tracker counts them (foreachAllocatedDevice):
        adminAccess results hold nothing; with DRAConsumableCapacity a result with a shareID holds a share of the
        device and its consumedCapacity, any other the whole device."""
        for result in results:
            if result.admin_access:
                continue
            device_id = (result.driver, result.pool, result.device)
            if not (self.consumable and result.share_id is not None):
                self.allocated.add(device_id)
                continue
            self.shares.add(device_id)
            if result.consumed_capacity is not None:
                total = self.consumed.setdefault(device_id, {})
                for name, value in result.consumed_capacity.items():
                    total[name] = total.get(name, Decimal(0)) + parse_quantity(value)

    def is_allocated(self, device_id: DeviceID) -> bool:
        """IsDeviceAllocated: whole, or shared (its counters are then consumed once)."""
        return device_id in self.allocated or device_id in self.shares or device_id in self.consumed

    @property
    def taints(self) -> bool:
        """DRADeviceTaints on in this release: device taints keep devices out, results carry the tolerations."""
        return features.enabled("DRADeviceTaints", self.version)

    def blocks(self, device: Device, request: Any) -> bool:
        """The device has a taint the request does not tolerate, and the release honours device taints."""
        return self.taints and tainted(device, request)

    def multiple(self, device: Device) -> bool:
        """allowMultipleAllocations, honoured where DRAConsumableCapacity is on."""
        return self.consumable and bool(device.allow_multiple_allocations)

    def constraints(self, claim: ResourceClaim) -> list[DeviceConstraint]:
        """The claim's constraints the release enforces: without DRAConsumableCapacity (1.34, 1.35) the API server
        drops a claim's distinctAttribute and the allocator allocates as if the constraint were not there."""
        found = claim.spec.devices.constraints
        return list(found) if self.consumable else [c for c in found if c.kind != "distinctAttribute"]

    def _look(self, device_id: DeviceID, device: Device) -> tuple[Any, ...]:
        """What a selector can see of the device: driver, attribute values and capacity amounts."""
        look = self._looks.get(device_id)
        if look is None:
            attributes = tuple(sorted((name, attr.value) for name, attr in device.attributes.items()))
            capacity = tuple(sorted((name, cap.amount) for name, cap in device.capacity.items()))
            look = self._looks[device_id] = (device_id[0], attributes, capacity, self.multiple(device))
        return look

    def outcome(self, device_id: DeviceID, device: Device, expression: str) -> bool | str:
        """True/False, or the runtime error's text; computed once per device content and expression."""
        look = self._look(device_id, device)
        key = (look, expression)
        if key not in self._outcomes:
            view = self._views.get(look)
            if view is None:
                view = self._views[look] = device_view(
                    "/".join(device_id), device_id[0], device.attributes, device.capacity, self.multiple(device)
                )
            try:
                self._outcomes[key] = compile_selector(expression).matches(view)
            except CelError as error:
                self._outcomes[key] = str(error)
        return self._outcomes[key]


def _without_consumable(item: ResourceSlice) -> ResourceSlice:
    """The slice as an API server without DRAConsumableCapacity keeps it: allowMultipleAllocations and every
    capacity's requestPolicy dropped."""
    spec = item.spec
    if not any(d.allow_multiple_allocations is not None or any(c.request_policy for c in d.capacity.values())
               for d in spec.devices):  # fmt: skip
        return item
    devices = tuple(
        device.model_copy(
            update={
                "allow_multiple_allocations": None,
                "capacity": {
                    name: cap.model_copy(update={"request_policy": None}) for name, cap in device.capacity.items()
                },
            }
        )  # fmt: skip
        for device in spec.devices
    )
    return item.model_copy(update={"spec": spec.model_copy(update={"devices": devices})})


# --- pools ----------------------------------------------------------------------------------------------------


@dataclass
class Pool:
    driver: str
    name: str
    slices: list[ResourceSlice] = field(default_factory=list)  # device slices visible from the node, by name
    others: list[ResourceSlice] = field(default_factory=list)  # the pool's other device slices (their counters count)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)
    incomplete: bool = False
    invalid: str = ""

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


def node_matches(node: NodeRef, name: str | None, all_nodes: bool | None, selector: NodeSelector | None) -> bool:
    if name:
        return node.name == name
    if all_nodes:
        return True
    return selector is not None and selector.matches(node.name, node.labels)


def _relevant(item: ResourceSlice, node: NodeRef) -> bool:
    spec = item.spec
    if spec.per_device_node_selection:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in spec.devices)
    return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)


def gather_pools(inventory: Inventory, node: NodeRef) -> list[Pool]:
    """GatherPools: the pools with devices reachable from the node, newest generation only, sorted by ID (from
    1.36; before, in the order of the slices given)."""
    ordered = features.changed("pools-and-slices-sorted", inventory.version)
    found: dict[tuple[str, str], list[ResourceSlice]] = {}
    for item in [*inventory.on_node.get(node.name, []), *inventory.shared]:
        if not _relevant(item, node):
            continue
        key = (item.spec.driver, item.spec.pool.name)
        current = found.get(key)
        if current is None or item.spec.pool.generation > current[0].spec.pool.generation:
            found[key] = [item]
        elif item.spec.pool.generation == current[0].spec.pool.generation:
            current.append(item)
    pools = []
    for (driver, name), items in found.items():
        generation, wanted = items[0].spec.pool.generation, items[0].spec.pool.resource_slice_count
        if len(items) == wanted:
            pools.append(_build(driver, name, items, [], ordered))
            continue
        everything = [s for s in inventory.slices if (s.spec.driver, s.spec.pool.name) == (driver, name)]
        if any(s.spec.pool.generation > generation for s in everything):
            continue  # the driver is replacing this generation: ignore the pool
        same = [s for s in everything if s.spec.pool.generation == generation]
        if len(same) != wanted:
            pools.append(Pool(driver, name, incomplete=True))
            continue
        pools.append(_build(driver, name, items, [s for s in same if s not in items], ordered))
    return sorted(pools, key=lambda pool: (pool.driver, pool.name)) if ordered else pools


def _build(
    driver: str, name: str, items: list[ResourceSlice], others: list[ResourceSlice], ordered: bool = True
) -> Pool:
    """buildPool: counter slices apart, device names unique, every consumed counter declared; slices by name."""
    items = sorted(items, key=lambda s: s.metadata.name) if ordered else items
    counters = [s for s in [*items, *others] if s.spec.shared_counters]
    devices = [s for s in items if not s.spec.shared_counters]
    pool = Pool(driver, name, devices, [s for s in others if not s.spec.shared_counters])
    seen: set[str] = set()
    for item in devices:
        for device in item.spec.devices:
            if device.name in seen:
                pool.invalid = f"duplicate device name {device.name}"
                return pool
            seen.add(device.name)
    for item in counters:
        for counter_set in item.spec.shared_counters:
            if counter_set.name in pool.counter_sets:
                pool.invalid = f"duplicate counter set name {counter_set.name}"
                return pool
            pool.counter_sets[counter_set.name] = counter_set
    for item in [*pool.slices, *pool.others]:
        for device in item.spec.devices:
            for use in device.consumes_counters:
                have = pool.counter_sets.get(use.counter_set)
                if have is None:
                    pool.invalid = f"counter set {use.counter_set} not found"
                    return pool
                missing = next((c for c in use.counters if c not in have.counters), None)
                if missing is not None:
                    pool.invalid = f"counter {missing} not found in counter set {use.counter_set}"
                    return pool
    return pool


# --- what a device shows ----------------------------------------------------------------------------------------


def lookup_attribute(device: Device, driver: str, name: str) -> tuple[str, Any] | None:
    """A fully qualified attribute, or the driver's own one by its unprefixed ID."""
    found = device.attributes.get(name)
    if found is None:
        domain, _, ident = name.partition("/")
        if domain == driver:
            found = device.attributes.get(ident)
    return None if found is None else found.value


def tainted(device: Device, request: Any) -> bool:
    """A NoSchedule or NoExecute taint no toleration of the request covers (effect None is ignored)."""
    return any(
        taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in request.tolerations)
        for taint in device.taints
    )
