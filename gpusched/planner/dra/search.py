"""The allocator's search, decision for decision as k8s.io/dynamic-resource-allocation/structured (1.36+ order).

What kube-scheduler's DynamicResources plugin calls per node (`Allocate(node, claims)`), read from the v0.37
"incubating" implementation (the one the default 1.36/1.37 feature gates select), and followed here step by step:

- Pools: the node's slices (nodeName) and the shared ones (allNodes, nodeSelector, perDeviceNodeSelection); a
  slice of a lower pool generation is ignored, a pool with fewer slices than resourceSliceCount is incomplete
  (never allocated from; `All` errors), duplicate device names or bad counter references make a pool invalid.
  Pools are sorted by (driver, pool), slices by name: the search order is deterministic.
- Search: depth first, first solution wins. Claims in pod order, requests in order, devices from a start position
  so that only combinations are tried. `firstAvailable` tries its subrequests in order; results are named `req/sub`.
- Per device, in this order: in use (by an earlier allocation, or earlier in this search; adminAccess only skips a
  device already taken by the same claim); class selectors then request selectors (CEL; an error aborts); per-device
  node selection; shared counters (what allocated and in-progress devices consume must not exceed them); taints
  (NoSchedule/NoExecute unless tolerated, effect None ignored); constraints (matchAttribute: same type and value as
  the first device; distinctAttribute: different from all; a device without the attribute fails); capacity.
- Consumable capacity (DRAConsumableCapacity, capacity.py): every device's capacity is checked against the request's
  `capacity.requests` (before the device is taken, and again after the constraints). A device with
  `allowMultipleAllocations` is never in use: each allocation takes a share of it (a new shareID) and consumes its
  capacity, so several requests and claims can have it while their consumption fits; its counters are consumed once,
  by its first share. Allocated claims' shares (shareID, consumedCapacity) count as the claim tracker counts them.
- At most 32 devices per claim; a subrequest that would exceed it gives way to the next one.

gpusched adds one thing the real allocator does not do: before the search, per-node bounds (enough candidate devices
per request and in total, and for matchAttribute enough candidates sharing one value) skip a node that cannot
succeed. They are applied only where they cannot change the answer: no `All` request, and no selector that failed
to evaluate on this node (the search must then run to raise the error exactly when the real one would), and not
where the real search could try SLOW_STEPS devices or more before it fails (`long`): it may time out there, so the
search runs as the real one does. A node whose search is that long, either way, is `slow`: the real scheduler may
give up on it after its 10 s (the prediction lists both outcomes).

And one limit in place of the real one: kube-scheduler stops a node's search after 10 s (DynamicResources'
filterTimeout) with "timed out trying to allocate devices". gpusched cannot know how far Go gets in 10 s, so it
stops after `max_steps()` devices tried with the same error, marked `timed_out`: the prediction then says the real
scheduler may differ (it may finish in time, or time out elsewhere).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...errors import LimitError
from ...limits import command_steps, setting
from ...models.dra import (
    MAX_RESULTS,
    Device,
    DeviceClass,
    DeviceConstraint,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
)
from . import features
from .capacity import Amount, CapacityError, consumption, fits
from .inventory import DeviceID, Inventory, NodeRef, Pool, gather_pools, lookup_attribute, node_matches

__all__ = ["DraError", "Entry", "RequestData", "Taken", "max_steps", "SEARCH_TIME"]

DEFAULT_MAX_STEPS = 2_000_000
# Devices tried past which the real allocator may not finish in its 10 s: kube-scheduler 1.35.4 timed out, on this
# 2-core machine under a load of 6, on a node whose whole search tries at most 1.3 million (the `long` bound).
SLOW_STEPS = 500_000


def max_steps() -> int:
    """Devices one node's search may try: GPUSCHED_DRA_MAX_STEPS, else 2,000,000 (a few seconds)."""
    return setting("GPUSCHED_DRA_MAX_STEPS", DEFAULT_MAX_STEPS)


SEARCH_TIME = (  # the note on a search that passed max_steps(), as `not modelled: ...`
    "the search time; the real scheduler gives up after 10 s, gpusched after {steps} devices tried "
    "(GPUSCHED_DRA_MAX_STEPS), so the real one may finish where gpusched did not, or time out where it did"
)


NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() "
    "for optional fields"
)


def _runtime_error(selector: str, entry: Entry, error: str, version: tuple[int, ...]) -> str:
    """The allocator's words for a selector that failed on a device; 1.37 names the device and, for a missing
    key, adds a hint (cel.EnhanceRuntimeError)."""
    if not features.changed("cel-error-names-device", version):
        return f"{selector}: CEL runtime error: {error}"
    hint = NO_SUCH_KEY_HINT if "no such key:" in error else ""
    return f"{selector} on device {'/'.join(entry.id)}: CEL runtime error: {error}{hint}"


class DraError(Exception):
    """An error the allocator returns (the Filter's Error status): the scheduling attempt stops.

    `selector` is (object kind, object name, selector index, expression) when a CEL selector failed.
    """

    def __init__(
        self, message: str, selector: tuple[str, str, int, str] | None = None, timed_out: bool = False
    ) -> None:
        super().__init__(message)
        self.selector, self.timed_out = selector, timed_out


# --- the search -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A device at its place in the search order."""

    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass
class RequestData:
    base: str  # the request's name
    sub: str  # the subrequest's name, "" for an exact request
    request: Any  # ExactDeviceRequest or DeviceSubRequest
    cls: DeviceClass
    count: int = 0
    all_devices: list[Entry] | None = None  # allocationMode All: exactly these

    @property
    def name(self) -> str:
        """The name in the result: `req` or `req/sub`."""
        return f"{self.base}/{self.sub}" if self.sub else self.base

    @property
    def short(self) -> str:
        """request.name() in the allocator's messages: the subrequest's own name."""
        return self.sub or self.base


@dataclass
class Taken:
    data: RequestData
    entry: Entry
    share: bool = False  # a share of a multi-allocatable device: the result gets a shareID
    consumed: dict[str, Amount] | None = None  # its consumedCapacity (none when the device has no capacity)


class _MaxSize(Exception):
    """errAllocationResultMaxSizeExceeded: backtrack further, maybe a later subrequest needs fewer devices."""


class _Constraint:
    def __init__(self, constraint: DeviceConstraint) -> None:
        self.names = set(constraint.requests)
        self.attribute = constraint.attribute
        self.kind = constraint.kind
        self.values: list[tuple[str, Any]] = []

    def applies(self, data: RequestData) -> bool:
        return not self.names or data.base in self.names or (bool(data.sub) and data.name in self.names)

    def add(self, data: RequestData, entry: Entry) -> bool:
        if not self.applies(data):
            return True
        value = lookup_attribute(entry.device, entry.id[0], self.attribute)
        if value is None:
            return False
        if self.kind == "matchAttribute" and self.values and value != self.values[0]:
            return False
        if self.kind == "distinctAttribute" and value in self.values:
            return False
        self.values.append(value)
        return True

    def remove(self, data: RequestData) -> None:
        if self.applies(data):
            self.values.pop()


class _Search:
    """One Allocate(node, claims) call."""

    def __init__(self, inventory: Inventory, node: NodeRef, claims: list[ResourceClaim], prune: bool) -> None:
        self.inventory, self.node, self.claims, self.prune = inventory, node, claims, prune
        self.pools = gather_pools(inventory, node)
        self.entries = [
            Entry((pool.driver, pool.name, device.name), device, item, pool)
            for pool in self.pools
            if not (pool.incomplete or pool.invalid)
            for item in pool.slices
            for device in item.spec.devices
        ]
        self.data: dict[tuple[int, int, int], RequestData] = {}
        self.selected: dict[tuple[int, int], int] = {}
        self.constraints: list[list[_Constraint]] = []
        self.allocating: dict[DeviceID, set[int]] = defaultdict(set)
        self.results: list[list[Taken]] = [[] for _ in claims]
        self.matches: dict[tuple[tuple[int, int, int], DeviceID], bool] = {}
        self.available: dict[str, dict[str, dict[str, Decimal]]] = {}
        self.consumed: dict[str, dict[str, Counter[str]]] = {}
        self.capacity: dict[DeviceID, dict[str, Decimal]] = {}  # allocatingCapacity: what this search's shares take
        self.budget = command_steps()  # the command's steps left, shared by every node's search
        self.steps = max_steps() if self.budget is None else min(max_steps(), self.budget[0])
        self.initial = self.started = self.steps
        self.candidates: dict[tuple[int, int, int], list[Entry]] = {}  # per (claim, request, subrequest): `infeasible`

    def spent(self) -> None:
        """Charge the steps this search took to the command's budget (once)."""
        if self.budget is not None:
            self.budget[0] -= self.started - max(self.steps, 0)
            self.started = max(self.steps, 0)

    # -- setup: validateDeviceRequest and the constraints -----------------------------------------------------

    def setup(self) -> None:
        for ci, claim in enumerate(self.claims):
            minimum = 0
            for ri, request in enumerate(claim.spec.devices.requests):
                counts = []
                for si, (_, alternative) in enumerate(request.alternatives()):
                    sub = alternative.name if isinstance(alternative, DeviceSubRequest) else ""  # iff first_available
                    cls = self.inventory.classes[alternative.device_class_name]
                    data = RequestData(request.name, sub, alternative, cls)
                    self._size(ci, (ci, ri, si), data)
                    self.data[(ci, ri, si)] = data
                    counts.append(data.count)
                need = min(counts)
                if need > MAX_RESULTS - minimum:
                    raise DraError(
                        f"claim {claim.key}, request {request.name}: adding {need} devices exceeds the claim "
                        f"limit of {MAX_RESULTS}, with {minimum} already accounted for"
                    )
                minimum += need
            self.constraints.append([_Constraint(c) for c in self.inventory.constraints(claim)])

    def _size(self, ci: int, key: tuple[int, int, int], data: RequestData) -> None:
        """ExactCount takes its count; All takes every selectable device and refuses incomplete or invalid pools."""
        if data.request.allocation_mode == "ExactCount":
            data.count = data.request.wanted
            return
        claim = self.claims[ci].key
        data.all_devices = []
        for pool in self.pools:
            state = "being updated" if pool.incomplete else "invalid" if pool.invalid else ""
            if state:
                raise DraError(
                    f"claim {claim}, request {data.short}: asks for all devices, but resource pool "
                    f"{pool.id} is currently {state}"
                )
            for item in pool.slices:
                for device in item.spec.devices:
                    entry = Entry((pool.driver, pool.name, device.name), device, item, pool)
                    if not self.selectable(ci, key, data, entry):
                        continue
                    # static capacity only: what is consumed already is checked when the device is taken
                    if self.inventory.consumable and not self._fits(ci, data, entry, device.name, "checking", {}):
                        continue
                    data.all_devices.append(entry)
        data.count = len(data.all_devices)

    # -- per device -----------------------------------------------------------------------------------------------

    def selectable(self, ci: int, key: tuple[int, int, int], data: RequestData, entry: Entry) -> bool:
        """Class selectors, request selectors, then per-device node selection; a CEL error stops everything."""
        cached = self.matches.get((key, entry.id))
        if cached is not None:
            return cached
        verdict = self._selectors(ci, data, entry) and self._device_on_node(entry)
        self.matches[(key, entry.id)] = verdict
        return verdict

    def _selectors(self, ci: int, data: RequestData, entry: Entry) -> bool:
        owners = (
            ("class", data.cls.metadata.name, data.cls.spec.selectors),
            ("claim", self.claims[ci].key, data.request.selectors),
        )
        for kind, name, selectors in owners:
            for index, selector in enumerate(selectors):
                outcome = self.inventory.outcome(entry.id, entry.device, selector.cel.expression)
                if isinstance(outcome, str):
                    raise DraError(
                        _runtime_error(f"{kind} {name}: selector #{index}", entry, outcome, self.inventory.version),
                        (kind, name, index, selector.cel.expression),
                    )
                if not outcome:
                    return False
        return True

    def _device_on_node(self, entry: Entry) -> bool:
        if not entry.slice.spec.per_device_node_selection:
            return True
        device = entry.device
        return node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)

    def _fits(
        self, ci: int, data: RequestData, entry: Entry, label: str, verb: str, used: dict[str, Decimal] | None = None
    ) -> bool:
        """The request's capacity fits the device beside what is consumed; DraError where that cannot be computed."""
        if used is None:
            used = dict(self.inventory.consumed.get(entry.id, {}))
            for name, value in self.capacity.get(entry.id, {}).items():
                used[name] = used.get(name, Decimal(0)) + value
        requests = data.request.capacity.requests if data.request.capacity else None
        try:
            return fits(
                requests,
                entry.device.capacity,
                used,
                features.changed("capacity-errors-abort", self.inventory.version),
            )
        except CapacityError as error:
            raise DraError(
                f"claim {self.claims[ci].key}, request {data.short}: {verb} capacity for device {label}: {error}"
            ) from None

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        """deviceCapacityInUse: a share of the device is allocated, or taken by this search."""
        inventory = self.inventory
        bare = device_id in inventory.shares and features.changed("bare-share-holds-counters", inventory.version)
        return device_id in inventory.consumed or bare or device_id in self.capacity

    def _add_share(self, device_id: DeviceID, consumed: dict[str, Amount]) -> bool:
        """Insert into allocatingCapacity; True when an entry was there before."""
        existed = device_id in self.capacity
        total = self.capacity.setdefault(device_id, {})
        for name, amount in consumed.items():
            total[name] = total.get(name, Decimal(0)) + amount.value
        return existed

    def _remove_share(self, device_id: DeviceID, consumed: dict[str, Amount], existed: bool) -> None:
        """Remove from allocatingCapacity: an entry left all zero goes, unless an earlier share still marks it."""
        total = self.capacity.get(device_id)
        if total is None:
            return
        for name, amount in consumed.items():
            if name in total:
                total[name] -= amount.value
        if all(value == 0 for value in total.values()):
            del self.capacity[device_id]
            if existed:
                self.capacity[device_id] = {}

    def in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.inventory.allocated or bool(self.allocating.get(device_id))

    def _counters_fit(self, entry: Entry) -> bool:
        """Reserve the device's counters; refuse if any counter of the pool would go below zero."""
        pool = entry.pool
        available = self.available.get(pool.id)
        if available is None:
            available = self.available[pool.id] = self._pool_counters(pool)
        consumed = self.consumed.setdefault(pool.id, defaultdict(Counter))
        for use in entry.device.consumes_counters:
            for name, counter in use.counters.items():
                consumed[use.counter_set][name] += counter.amount  # type: ignore[assignment]
        if any(left[name] < consumed[set_name][name] for set_name, left in available.items() for name in left):
            self._release_counters(entry)
            return False
        return True

    def _pool_counters(self, pool: Pool) -> dict[str, dict[str, Decimal]]:
        """The counter sets minus what devices allocated before this search consume."""
        left = {
            name: {c: counter.amount for c, counter in cs.counters.items()} for name, cs in pool.counter_sets.items()
        }
        for item in [*pool.slices, *pool.others]:
            for device in item.spec.devices:
                if not self.inventory.is_allocated((pool.driver, pool.name, device.name)):
                    continue
                for use in device.consumes_counters:
                    for name, counter in use.counters.items():
                        if name in left.get(use.counter_set, {}):
                            left[use.counter_set][name] -= counter.amount
        return left

    def _release_counters(self, entry: Entry) -> None:
        consumed = self.consumed[entry.pool.id]
        for use in entry.device.consumes_counters:
            for name, counter in use.counters.items():
                consumed[use.counter_set][name] -= counter.amount  # type: ignore[assignment]

    def take(self, ci: int, data: RequestData, entry: Entry, must: bool) -> Callable[[], None] | None:
        """allocateDevice: counters, taints, constraints, capacity; on success the undo for backtracking."""
        admin = data.request.admin
        multiple = self.inventory.multiple(entry.device)
        if not multiple and admin and ci in self.allocating.get(entry.id, ()):
            return None
        if not admin and self.in_use(entry.id):
            return None
        # a multi-allocatable device already shared has had its counters consumed by its first share
        counted = bool(entry.device.consumes_counters) and not (multiple and self._capacity_in_use(entry.id))
        if counted and not self._counters_fit(entry):
            return None
        added: list[_Constraint] = []

        def rollback() -> None:
            for done in reversed(added):
                done.remove(data)
            if counted:
                self._release_counters(entry)

        if self.inventory.blocks(entry.device, data.request):
            rollback()
            return None
        for constraint in self.constraints[ci]:
            if not constraint.add(data, entry):
                rollback()
                if must:
                    raise DraError(
                        f"claim {self.claims[ci].key}, request {data.short}: cannot add device "
                        f"{'/'.join(entry.id)} because a claim constraint would not be satisfied"
                    )
                return None
            added.append(constraint)
        consumed: dict[str, Amount] | None = None
        if self.inventory.consumable:
            try:
                fit = self._fits(ci, data, entry, "/".join(entry.id), "rechecking")
            except DraError:
                rollback()
                raise
            if not fit:
                rollback()
                return None
            if multiple:
                requests = data.request.capacity.requests if data.request.capacity else None
                aborts = features.changed("capacity-errors-abort", self.inventory.version)
                consumed = consumption(requests, entry.device.capacity, aborts)
        existed = self._add_share(entry.id, consumed) if multiple and consumed is not None else False
        if not multiple:
            self.allocating[entry.id].add(ci)
        self.results[ci].append(Taken(data, entry, multiple, consumed or None))

        def undo() -> None:
            self.results[ci].pop()
            if multiple and consumed is not None:
                self._remove_share(entry.id, consumed, existed)
            else:
                self.allocating[entry.id].discard(ci)
            rollback()

        return undo

    # -- allocateOne ------------------------------------------------------------------------------------------------

    def one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        if ci >= len(self.claims):
            return True
        requests = self.claims[ci].spec.devices.requests
        if ri >= len(requests):
            try:
                return self.one(ci + 1, 0, 0, 0, False, 0)
            except _MaxSize:
                return False
        data = self.data[(ci, ri, si)]
        if not in_sub and data.sub:
            return self._first_available(ci, ri, di, len(requests[ri].first_available or ()))
        if data.all_devices is not None and not data.all_devices:
            return False
        if di >= data.count:
            return self.one(ci, ri + 1, 0, 0, False, 0)
        if data.count - di > MAX_RESULTS - len(self.results[ci]):
            raise _MaxSize
        if data.all_devices is not None:  # up to 1.35 the next device is looked for as subrequest 0's
            then = si if features.changed("all-keeps-its-subrequest", self.inventory.version) else 0
            return self._next(ci, ri, then, di, in_sub, data, data.all_devices[di], True, 0)
        key = (ci, ri, si)
        for position in range(start, len(self.entries)):
            self.steps -= 1
            if self.steps < 0:
                self.spent()
                if self.budget is not None and self.budget[0] <= 0:
                    variable = "GPUSCHED_DRA_COMMAND_STEPS"
                    raise LimitError(
                        "DRA", f"the searches tried more devices over all nodes than one command may ({variable})"
                    )
                raise DraError(f"node {self.node.name}: timed out trying to allocate devices", timed_out=True)
            entry = self.entries[position]
            if data.request.admin:
                if ci in self.allocating.get(entry.id, ()):
                    continue
            elif self.in_use(entry.id):
                continue
            if not self.selectable(ci, key, data, entry):
                continue
            if self.inventory.consumable and not self._fits(ci, data, entry, "/".join(entry.id), "checking"):
                continue
            if self._next(ci, ri, si, di, in_sub, data, entry, False, position + 1):
                return True
        return False

    def _next(
        self, ci: int, ri: int, si: int, di: int, in_sub: bool, data: RequestData, entry: Entry, must: bool, start: int
    ) -> bool:
        """Take the device for `data`, go on with device di + 1 of subrequest `si`; undo on failure."""
        undo = self.take(ci, data, entry, must)
        if undo is None:
            return False
        try:
            done = self.one(ci, ri, si, di + 1, in_sub, start)
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _first_available(self, ci: int, ri: int, di: int, subrequests: int) -> bool:
        exceeded = True
        for si in range(subrequests):
            try:
                done = self.one(ci, ri, si, di, True, 0)
            except _MaxSize:
                continue
            exceeded = False
            if done:
                self.selected[(ci, ri)] = si
                return True
        if exceeded:
            raise _MaxSize
        return False

    # -- gpusched's bounds (never in the real allocator) -------------------------------------------------------------

    def infeasible(self) -> bool:
        """True only when no search could succeed and the search would have raised nothing on the way."""
        if not self.prune or any(d.all_devices is not None or d.request.capacity for d in self.data.values()):
            return False
        if self.inventory.consumable and any(_consumable(self.inventory, entry) for entry in self.entries):
            return False  # a device may serve several requests, or stop the search: the bounds do not hold
        candidates: dict[tuple[int, int, int], list[Entry]] = {}
        for key, data in self.data.items():
            found = []
            for entry in self.entries:
                if not data.request.admin and entry.id in self.inventory.allocated:
                    continue
                try:
                    chosen = self.selectable(key[0], key, data, entry)
                except DraError:
                    return False  # the real search may hit this error: run it
                if chosen and not self.inventory.blocks(entry.device, data.request):
                    found.append(entry)
            candidates[key] = found
        self.candidates = candidates
        return not self._bounds_hold(candidates)

    @property
    def slow(self) -> bool:
        """The search tried SLOW_STEPS devices or more (it stops at max_steps())."""
        return self.initial - self.steps >= SLOW_STEPS

    def long(self) -> bool:
        """After `infeasible`: the real search might try SLOW_STEPS devices or more before it fails. Bound: it tries
        every combination of candidates (in position order) for each request before the one that fails, and scans
        every device for the next request of each combination."""
        limit, combinations, steps = SLOW_STEPS, 1, 0
        for ci, claim in enumerate(self.claims):
            for ri, request in enumerate(claim.spec.devices.requests):
                keys = [(ci, ri, si) for si in range(len(request.alternatives()))]
                steps += combinations * len(self.entries) * max(1, min(self.data[key].count for key in keys))
                combinations *= sum(math.comb(len(self.candidates[key]), self.data[key].count) for key in keys)
                if steps >= limit:
                    return True
                if combinations == 0:
                    return False
        return False

    def _bounds_hold(self, candidates: dict[tuple[int, int, int], list[Entry]]) -> bool:
        union: set[DeviceID] = set()
        total = 0
        for ci, claim in enumerate(self.claims):
            matching = [_Constraint(c) for c in claim.spec.devices.constraints if c.kind == "matchAttribute"]
            for ri, request in enumerate(claim.spec.devices.requests):
                options = [
                    (self.data[(ci, ri, si)], candidates[(ci, ri, si)]) for si in range(len(request.alternatives()))
                ]
                if not any(len(found) >= data.count for data, found in options):
                    return False
                if not all(_one_value_fits(constraint, options) for constraint in matching):
                    return False
                total += min(data.count for data, _ in options)
                for data, found in options:
                    if not data.request.admin:
                        union.update(entry.id for entry in found)
        admin = any(d.request.admin for d in self.data.values())
        return admin or len(union) >= total


def _consumable(inventory: Inventory, entry: Entry) -> bool:
    """A device several requests may share, or one whose negative capacity stops any search that reaches it."""
    return inventory.multiple(entry.device) or any(cap.amount < 0 for cap in entry.device.capacity.values())


def _one_value_fits(constraint: _Constraint, options: list[tuple[RequestData, list[Entry]]]) -> bool:
    """Some subrequest has enough candidates that share one value of the constrained attribute."""
    for data, found in options:
        if not constraint.applies(data):
            return True
        values = Counter(lookup_attribute(e.device, e.id[0], constraint.attribute) for e in found)
        values.pop(None, None)
        if values and max(values.values()) >= data.count:
            return True
    return False
