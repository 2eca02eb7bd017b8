"""What DRA does differently per release: the one place gpusched's model and the conformance generator ask
"does release X do this?".

- Feature gates, from pkg/features/kube_features.go of each release (the versioned gate specs): the release in which
  a gate became on by default (beta, or GA). The resource.k8s.io/v1 API and structured parameters are GA (always on)
  from 1.34, the oldest release modelled. The API server drops the fields of a feature that is off when an object is
  written, so a cluster with default gates never shows them; the scheduler ignores them too.
- Changes of the allocator (k8s.io/dynamic-resource-allocation/structured) that no gate guards, found by the
  differential tests against the real 1.35 and 1.37 and read in the sources of 1.35, 1.36 and 1.37.
"""

from __future__ import annotations

__all__ = ["ON_BY_DEFAULT", "CHANGES", "enabled", "changed", "cel_compatibility"]

ON_BY_DEFAULT: dict[str, tuple[int, int]] = {
    "DRAAdminAccess": (1, 34),
    "DRAPrioritizedList": (1, 34),  # firstAvailable
    "DRAPartitionableDevices": (1, 36),  # sharedCounters, consumesCounters
    "DRADeviceTaints": (1, 36),  # device taints keep devices out; results carry the request's tolerations
    "DRAExtendedResource": (1, 36),  # DeviceClass extendedResourceName
    "DRAConsumableCapacity": (1, 36),  # distinctAttribute, allowMultipleAllocations, capacity requests
    # request policies rounded in milli units: beta in 1.37, but on by default only from compatibility version 1.37,
    # and a 1.37 control plane runs at 1.36's (MinCompatibilityVersion): off in every release modelled
    "DRAFractionalCapacityRange": (1, 38),
    "DRADeviceBindingConditions": (1, 36),
    "DRADeviceTaintRules": (1, 37),  # DeviceTaintRule objects
}


def enabled(feature: str, version: tuple[int, ...]) -> bool:
    """On by default in this release (a patch makes no difference: gates change only with the minor)."""
    return tuple(version[:2]) >= ON_BY_DEFAULT[feature]


CHANGES: dict[str, tuple[int, int]] = {
    # "selector #0 on device <driver/pool/device>: CEL runtime error: ...", and for "no such key" a hint to use
    # optional chaining (cel.EnhanceRuntimeError); before: "selector #0: CEL runtime error: ..." and cel-go's text.
    "cel-error-names-device": (1, 37),
    # A config that applies to every request of the claim has its `requests` cleared ("empty means all"), and a
    # claim's config is added once; before: `requests` kept, and a claim config added once per request it names.
    "config-requests-trimmed": (1, 37),
    # An `allocationMode: All` subrequest other than the first goes on with its own next device; up to 1.35 the
    # recursion drops the subrequest index, so after its first device the search goes on as the first subrequest
    # (its count, selectors and name), a bug 1.36 fixed (allocateOne in allocator_incubating.go).
    "all-keeps-its-subrequest": (1, 36),
    # GatherPools sorts pools by (driver, name) and a pool's slices by name, so the devices tried first are fixed;
    # before, pools come in map order and slices in the informer's, both random: gpusched then takes them in the
    # order given (kubectl lists slices by name), one of the orders the scheduler may take.
    "pools-and-slices-sorted": (1, 36),
    # A Filter that passes filterTimeout (DRASchedulerFilterTimeout, beta and on from 1.34, 10 s) is an error, "node
    # <name>: timed out trying to allocate devices", which stops the attempt; before, the node's own
    # UnschedulableAndUnresolvable "timed out trying to allocate devices" (dynamicresources.go Filter; the change is
    # kubernetes#137607, merged for 1.36).
    "filter-timeout-is-an-error": (1, 36),
    # A capacity request the allocator cannot compute (a consumption below zero, an amount its range arithmetic
    # cannot represent) aborts the attempt; a request naming a capacity the device lacks skips the device. In 1.36
    # every failure of the capacity check only skips the device (consumable_capacity.go).
    "capacity-errors-abort": (1, 37),
    # An allocated share with no consumedCapacity (a shareID alone) makes a later share skip the device's counters,
    # as one with consumedCapacity does; in 1.36 only an allocated consumption does (deviceCapacityInUse).
    "bare-share-holds-counters": (1, 37),
}


def changed(change: str, version: tuple[int, ...]) -> bool:
    """The release has the allocator change named in CHANGES."""
    return tuple(version[:2]) >= CHANGES[change]


def cel_compatibility(version: tuple[int, ...]) -> tuple[int, int]:
    """The CEL compatibility version with which the release's API server compiles a new expression: the release
    before it (k8s.io/apiserver/pkg/cel/environment/base.go DefaultCompatibilityVersion, from component-base's
    MinCompatibilityVersion, emulation version minus one minor), so that a rollback can still read what was written.
    The scheduler compiles stored expressions with every library of its release, which only a downgrade tells apart."""
    return (version[0], version[1] - 1)
