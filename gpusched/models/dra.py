"""Dynamic Resource Allocation objects in the exact resource.k8s.io/v1 shape: what gpusched reads and writes.

The fields are the published v1 API's (camelCase on the wire, snake_case here). Fields of features the allocator
does not model (binding conditions, list-valued attributes, derived attributes, compatibility groups,
node-allocatable resources) are refused by name instead of being silently ignored, so a prediction is never made on
a claim gpusched only half read. Everything that the API server itself would reject is refused here too, as the
newest release's API server does (DRAConsumableCapacity on, DRAFractionalCapacityRange off: the request policies of
multi-allocatable devices are checked as pkg/apis/resource/validation checks them).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..limits import INT64_MAX
from .quantity import parse_quantity
from .scheduling import NodeSelectorTerm

__all__ = [
    "API_VERSION",
    "DRA_KINDS",
    "ObjectMeta",
    "DeviceAttribute",
    "CapacityRequestPolicyRange",
    "CapacityRequestPolicy",
    "DeviceCapacity",
    "CapacityRequirements",
    "Counter",
    "CounterSet",
    "DeviceCounterConsumption",
    "DeviceTaint",
    "DeviceTaintSelector",
    "DeviceTaintRuleSpec",
    "DeviceTaintRule",
    "NodeSelector",
    "Device",
    "ResourcePool",
    "ResourceSliceSpec",
    "ResourceSlice",
    "DeviceSelector",
    "DeviceClassSpec",
    "DeviceClass",
    "DeviceToleration",
    "ExactDeviceRequest",
    "DeviceSubRequest",
    "DeviceRequest",
    "DeviceConstraint",
    "DeviceClaim",
    "ResourceClaimSpec",
    "DeviceRequestAllocationResult",
    "DeviceAllocationResult",
    "AllocationResult",
    "ResourceClaimStatus",
    "ResourceClaim",
    "ResourceClaimTemplateSpec",
    "ResourceClaimTemplate",
    "ClaimList",
]

API_VERSION: Final = "resource.k8s.io/v1"  # Final: typed as the Literal the models declare
DRA_KINDS = ("DeviceClass", "DeviceTaintRule", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
MAX_RESULTS = 32  # resourceapi.AllocationResultsMaxSize
MAX_SUBREQUESTS = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize
MAX_VALID_VALUES = 10  # resourceapi.CapacityRequestPolicyDiscreteMaxOptions
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_QUALIFIED = re.compile(
    r"^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z_][A-Za-z0-9_]*$"
)
_FULLY_QUALIFIED = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z_][A-Za-z0-9_]*$"
)


class K8s(BaseModel):
    """camelCase on the wire, unknown fields refused (a typo must not pass as an absent field)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True)

    def wire(self) -> dict[str, Any]:
        """The object as the API server shows it: camelCase, unset and empty fields left out (omitempty)."""
        return _omit_empty(self.model_dump(by_alias=True, mode="json"))


def _omit_empty(value: Any) -> Any:
    if isinstance(value, dict):
        pruned = {key: _omit_empty(item) for key, item in value.items()}
        return {key: item for key, item in pruned.items() if item not in (None, [], {})}
    if isinstance(value, list):
        return [_omit_empty(item) for item in value]
    return value


def _not_modelled(what: str) -> Any:
    """A field gpusched refuses: its feature is not modelled, so a prediction would silently be wrong."""

    def check(value: Any) -> Any:
        if value not in (None, False, [], {}):
            raise ValueError(f"{what} is not modelled by gpusched")
        return value

    return check


Unmodelled = Annotated[Any, Field(None, description="refused when set: the feature is not modelled")]


class ObjectMeta(BaseModel):
    """What gpusched reads of metadata; kubectl's other fields (uid, managedFields, ...) pass through."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel, frozen=True)

    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    creation_timestamp: str | None = None
    labels: dict[str, str] | None = None


Quantity = Annotated[str | int, Field(description="a Kubernetes quantity: 80Gi, 4, 500m")]


def _quantity(value: str | int) -> str | int:
    parse_quantity(value)  # raises ValueError with the expected form
    return value


def _optional_quantity(value: str | int | None) -> str | int | None:
    if value is not None:
        parse_quantity(value)
    return value


_TYPES = ("int", "bool", "string", "version")


class DeviceAttribute(K8s):
    """Exactly one typed value: int, bool, string or a strict semantic version."""

    int_value: int | None = Field(None, alias="int", ge=-INT64_MAX - 1, le=INT64_MAX)  # an int64, as in the API
    bool_value: bool | None = Field(None, alias="bool")
    string_value: str | None = Field(None, alias="string")
    version_value: str | None = Field(None, alias="version")
    ints: Unmodelled = None
    bools: Unmodelled = None
    strings: Unmodelled = None
    versions: Unmodelled = None

    @model_validator(mode="after")
    def _one_value(self) -> DeviceAttribute:
        if (self.ints, self.bools, self.strings, self.versions) != (None, None, None, None):
            raise ValueError(
                "a list-valued attribute (ints, bools, strings, versions: DRAListTypeAttributes) "
                "is not modelled by gpusched"
            )
        values = (self.int_value, self.bool_value, self.string_value, self.version_value)
        present = [name for name, value in zip(_TYPES, values, strict=True) if value is not None]
        if len(present) != 1:
            raise ValueError(f"exactly one of int, bool, string, version must be set, got {present or 'none'}")
        if self.version_value is not None and not _SEMVER.match(self.version_value):
            raise ValueError(f"version {self.version_value!r} is not a semantic version such as 1.2.3")
        return self

    @property
    def value(self) -> tuple[str, Any]:
        """(type, value): matchAttribute compares both, so 1 and "1" differ."""
        values = (self.int_value, self.bool_value, self.string_value, self.version_value)
        return next((name, found) for name, found in zip(_TYPES, values, strict=True) if found is not None)


class CapacityRequestPolicyRange(K8s):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None

    _values = field_validator("min", "max", "step")(_optional_quantity)


class CapacityRequestPolicy(K8s):
    """How much of a multi-allocatable device's capacity one allocation may consume (DRAConsumableCapacity)."""

    default: Quantity | None = None
    valid_values: tuple[Quantity, ...] | None = None
    valid_range: CapacityRequestPolicyRange | None = None

    _default = field_validator("default")(_optional_quantity)

    @field_validator("valid_values")
    @classmethod
    def _options(cls, values: tuple[Quantity, ...] | None) -> tuple[Quantity, ...] | None:
        for value in values or ():
            parse_quantity(value)
        return values


class DeviceCapacity(K8s):
    value: Quantity
    request_policy: CapacityRequestPolicy | None = None

    _value = field_validator("value")(_quantity)

    @property
    def amount(self) -> Decimal:
        return parse_quantity(self.value)

    def check_policy(self) -> None:
        """validateRequestPolicy: the policy's values fit the capacity, and the default is one of them."""
        policy = self.request_policy
        if policy is None:
            return
        if policy.valid_values and policy.valid_range is not None:
            raise ValueError("requestPolicy: exactly one policy can be specified, not validValues and validRange")
        if policy.valid_values:
            _check_valid_values(policy, self.amount)
        elif policy.valid_range is not None:
            _check_valid_range(policy, policy.valid_range, self.amount)


def _amount(value: str | int) -> Decimal:
    return parse_quantity(value)


def _check_valid_values(policy: CapacityRequestPolicy, capacity: Decimal) -> None:
    values = [_amount(v) for v in policy.valid_values or ()]
    if policy.default is None:
        raise ValueError("requestPolicy.default: required when validValues is defined")
    if len(values) > MAX_VALID_VALUES:
        raise ValueError(f"requestPolicy.validValues: must have at most {MAX_VALID_VALUES} items, got {len(values)}")
    for index in range(1, len(values)):
        if values[index - 1] > values[index]:
            raise ValueError(f"requestPolicy.validValues[{index}]: values must be sorted in ascending order")
    keys = [_ceil(value) for value in values]  # quantityKeyInt: DRAFractionalCapacityRange is off by default
    if len(set(keys)) != len(keys):
        raise ValueError("requestPolicy.validValues: duplicate values (in whole units)")
    for index, value in enumerate(values):
        if value > capacity:
            raise ValueError(f"requestPolicy.validValues[{index}]: option is larger than the capacity value")
    if _amount(policy.default) not in values:
        raise ValueError("requestPolicy.validValues: the default value is not valid according to the requestPolicy")


def _check_valid_range(policy: CapacityRequestPolicy, bounds: CapacityRequestPolicyRange, capacity: Decimal) -> None:
    """validateRequestPolicyRange as the newest release runs it by default: DRAFractionalCapacityRange is off (its
    default turns on only from compatibility version 1.37, one past 1.37's), so the default and max must lie on a
    step from min in whole units (Value(), rounded up)."""
    if policy.default is None:
        raise ValueError("requestPolicy.default: required when validRange is defined")
    if bounds.min is None:
        raise ValueError("requestPolicy.validRange.min: required when validRange is defined")
    default, low = _amount(policy.default), _amount(bounds.min)
    high = None if bounds.max is None else _amount(bounds.max)
    step = None if bounds.step is None else _amount(bounds.step)
    problems = []
    if low > capacity:
        problems.append("validRange.min: min is larger than the capacity value")
    if default < low:
        problems.append("default: default is less than min")
    if high is not None:
        if low > high:
            problems.append("validRange.max: min is larger than max")
        if high > capacity:
            problems.append("validRange.max: max is larger than the capacity value")
        if default > high:
            problems.append("default: default is more than max")
    if step is not None:
        named = [("default", default), ("min", low), ("max", high), ("step", step)]
        out = [name for name, value in named if value is not None and not 0 <= value <= INT64_MAX]
        if step <= 0:
            problems.append("validRange.step: must be greater than zero")
        else:
            if low + step > capacity:
                problems.append("validRange.step: one step is larger than the capacity value")
            if out:
                problems.append(f"validRange.{out[0]}: must be in 0..{INT64_MAX}")
            else:
                units = {name: _ceil(value) for name, value in named if value is not None}
                for name in ("default", "max"):
                    if name in units and (units[name] - units["min"]) % units["step"]:
                        problems.append(f"validRange.step: {name} is not a multiple of the step from min")
    if problems:
        raise ValueError("requestPolicy." + problems[0])


def _ceil(value: Decimal) -> int:
    """Quantity.Value() and MilliValue(): rounded up."""
    return int(value.to_integral_value(rounding="ROUND_CEILING"))


class Counter(K8s):
    value: Quantity

    _value = field_validator("value")(_quantity)

    @property
    def amount(self) -> Decimal:
        return parse_quantity(self.value)


class CounterSet(K8s):
    name: str = Field(min_length=1)
    counters: dict[str, Counter] = Field(min_length=1)


class DeviceCounterConsumption(K8s):
    counter_set: str = Field(min_length=1)
    counters: dict[str, Counter] = Field(min_length=1)
    compatibility_groups: Unmodelled = None

    _groups = field_validator("compatibility_groups")(
        _not_modelled("compatibilityGroups (DRADeviceCompatibilityGroups)")
    )


class DeviceTaint(K8s):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "NoExecute", "None"]
    time_added: str | None = None


class DeviceTaintSelector(K8s):
    """Which devices a DeviceTaintRule taints: every criterion that is set must match (the empty selector matches
    every device). deviceClassName and selectors were removed in 1.35."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None

    def matches(self, driver: str, pool: str, device: str) -> bool:
        return all(want is None or want == have for want, have in ((self.driver, driver), (self.pool, pool),
                                                                   (self.device, device)))  # fmt: skip


class DeviceTaintRuleSpec(K8s):
    device_selector: DeviceTaintSelector | None = None  # without a selector the rule taints no device
    taint: DeviceTaint


class DeviceTaintRule(K8s):
    """resource.k8s.io/v1 DeviceTaintRule (DRADeviceTaintRules, GA and on in 1.37): its taint is added to the taints
    of every device its selector matches, as the scheduler's ResourceSlice tracker does before allocating."""

    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["DeviceTaintRule"] = "DeviceTaintRule"
    metadata: ObjectMeta
    spec: DeviceTaintRuleSpec
    status: dict[str, Any] | None = None


class NodeSelector(K8s):
    """core/v1 NodeSelector: the terms are ORed."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = Field(min_length=1)

    def matches(self, name: str, labels: dict[str, str]) -> bool:
        return any(term.matches(labels, name) for term in self.node_selector_terms)


def _node_selection(obj: Any, fields: tuple[str, ...]) -> list[str]:
    return [name for name in fields if getattr(obj, name) not in (None, False)]


class Device(K8s):
    name: str = Field(min_length=1)
    attributes: dict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = Field(default_factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool | None = None
    allow_multiple_allocations: bool | None = None
    binding_conditions: Unmodelled = None
    binding_failure_conditions: Unmodelled = None
    node_allocatable_resources: Unmodelled = None

    _binding = field_validator("binding_conditions", "binding_failure_conditions")(
        _not_modelled("bindingConditions (DRADeviceBindingConditions)")
    )
    _node_alloc = field_validator("node_allocatable_resources")(
        _not_modelled("nodeAllocatableResources (DRANodeAllocatableResources)")
    )

    @field_validator("attributes", "capacity")
    @classmethod
    def _names(cls, found: dict[str, Any]) -> dict[str, Any]:
        for name in found:
            if not _QUALIFIED.match(name):
                raise ValueError(f"{name!r} is not a C identifier, optionally prefixed with a DNS domain and '/'")
        return found

    @model_validator(mode="after")
    def _policies(self) -> Device:
        """A request policy only on a multi-allocatable device, and a valid one."""
        for name, capacity in self.capacity.items():
            if capacity.request_policy is None:
                continue
            if not self.allow_multiple_allocations:
                raise ValueError(f"capacity[{name}].requestPolicy: allowMultipleAllocations must be true")
            try:
                capacity.check_policy()
            except ValueError as error:
                raise ValueError(f"capacity[{name}].{error}") from None
        return self


class ResourcePool(K8s):
    name: str = Field(min_length=1)
    generation: int = Field(0, ge=0)
    resource_slice_count: int = Field(ge=1)


class ResourceSliceSpec(K8s):
    driver: str = Field(min_length=1)
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()
    partition_type_attribute: Unmodelled = None
    skip_node_operations: Unmodelled = None

    _partition = field_validator("partition_type_attribute")(_not_modelled("partitionTypeAttribute"))
    _skip = field_validator("skip_node_operations")(_not_modelled("skipNodeOperations (DRAOptionalNodeOperations)"))

    @field_validator("devices", mode="before")
    @classmethod
    def _nil_devices(cls, value: object) -> object:
        """`devices: null` is Go's nil slice, no devices: 1.34's API server writes it for a slice of counters only."""
        return () if value is None else value

    @model_validator(mode="after")
    def _valid(self) -> ResourceSliceSpec:
        """The API server's rules: one way of node selection, unique device names, per-device selection only
        where the slice asks for it, and counters only in counter slices."""
        chosen = _node_selection(self, ("node_name", "node_selector", "all_nodes", "per_device_node_selection"))
        if len(chosen) != 1:
            raise ValueError(
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, "
                f"got {[to_camel(name) for name in chosen] or 'none'}"
            )
        if self.node_selector is not None and len(self.node_selector.node_selector_terms) != 1:
            raise ValueError("nodeSelector must have exactly one node selector term")
        seen: set[str] = set()
        for device in self.devices:
            if device.name in seen:
                raise ValueError(f"duplicate device name {device.name!r}")
            seen.add(device.name)
            per_device = _node_selection(device, ("node_name", "node_selector", "all_nodes"))
            if self.per_device_node_selection and len(per_device) != 1:
                raise ValueError(
                    f"device {device.name!r}: perDeviceNodeSelection needs exactly one of nodeName, "
                    "nodeSelector, allNodes on every device"
                )
            if not self.per_device_node_selection and per_device:
                raise ValueError(f"device {device.name!r}: node selection per device needs perDeviceNodeSelection")
        if self.shared_counters and self.devices:
            raise ValueError("a slice holds either sharedCounters or devices, not both")
        return self


class ResourceSlice(K8s):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceSlice"] = "ResourceSlice"
    metadata: ObjectMeta
    spec: ResourceSliceSpec


class CELDeviceSelector(K8s):
    expression: str = Field(min_length=1, max_length=10 * 1024)


class DeviceSelector(K8s):
    cel: CELDeviceSelector


class DeviceClassConfiguration(K8s):
    opaque: dict[str, Any] | None = None


class DeviceClassSpec(K8s):
    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceClassConfiguration, ...] = ()
    extended_resource_name: str | None = None


class DeviceClass(K8s):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["DeviceClass"] = "DeviceClass"
    metadata: ObjectMeta
    spec: DeviceClassSpec = DeviceClassSpec()


class DeviceToleration(K8s):
    key: str | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = None
    effect: Literal["", "NoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """resourceclaim.ToleratesTaint: an empty key with Exists matches every key; an empty effect every effect."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == "Exists" or (self.value or "") == taint.value


class CapacityRequirements(K8s):
    """A request's capacity: how much of each named capacity every device it gets must provide (and, on a
    multi-allocatable device, consumes). The API server checks neither the names nor the signs."""

    requests: dict[str, Quantity] | None = None

    @field_validator("requests")
    @classmethod
    def _amounts(cls, found: dict[str, Quantity] | None) -> dict[str, Quantity] | None:
        for value in (found or {}).values():
            parse_quantity(value)
        return found


class _Request(K8s):
    """What an exact request and a subrequest share."""

    device_class_name: str = Field(min_length=1)
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: Literal["ExactCount", "All"] = "ExactCount"
    count: int | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None
    derived_attributes: Unmodelled = None

    _derived = field_validator("derived_attributes")(_not_modelled("derivedAttributes (DRADerivedAttributes)"))

    @model_validator(mode="after")
    def _count(self) -> _Request:
        if self.allocation_mode == "ExactCount" and self.count is not None and self.count <= 0:
            raise ValueError(f"count must be greater than zero, got {self.count}")
        if self.allocation_mode == "All" and self.count not in (None, 0):
            raise ValueError("count must not be set with allocationMode All")
        if self.allocation_mode == "ExactCount" and self.count is not None and self.count > MAX_RESULTS:
            raise ValueError(f"count must be at most {MAX_RESULTS}, got {self.count}")
        return self

    @property
    def wanted(self) -> int:
        """ExactCount's number of devices (the API server defaults an unset count to 1)."""
        return self.count or 1

    @property
    def admin(self) -> bool:
        return False


class ExactDeviceRequest(_Request):
    admin_access: bool | None = None

    @property
    def admin(self) -> bool:
        return bool(self.admin_access)


class DeviceSubRequest(_Request):
    name: str = Field(min_length=1)


class DeviceRequest(K8s):
    name: str = Field(min_length=1)
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> DeviceRequest:
        if (self.exactly is None) == (not self.first_available):
            raise ValueError("exactly one of exactly, firstAvailable must be set")
        if self.first_available:
            if len(self.first_available) > MAX_SUBREQUESTS:
                raise ValueError(f"firstAvailable holds at most {MAX_SUBREQUESTS} subrequests")
            names = [sub.name for sub in self.first_available]
            if len(set(names)) != len(names):
                raise ValueError(f"duplicate subrequest names in {names}")
        return self

    def alternatives(self) -> tuple[tuple[str, _Request], ...]:
        """(result name, request) per alternative: the request itself, or `req/sub` per subrequest in order."""
        if self.exactly is not None:
            return ((self.name, self.exactly),)
        return tuple((f"{self.name}/{sub.name}", sub) for sub in self.first_available or ())


class DeviceConstraint(K8s):
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> DeviceConstraint:
        """One of the two is needed; with both, the API server keeps both and the allocator uses matchAttribute."""
        if self.match_attribute is None and self.distinct_attribute is None:
            raise ValueError("exactly one of matchAttribute, distinctAttribute must be set")
        for attribute in (self.match_attribute, self.distinct_attribute):
            if attribute is not None and not _FULLY_QUALIFIED.match(attribute):
                raise ValueError(f"{attribute!r} must be a fully qualified attribute name (domain/name)")
        return self

    @property
    def attribute(self) -> str:
        return self.match_attribute or self.distinct_attribute or ""

    @property
    def kind(self) -> str:
        return "matchAttribute" if self.match_attribute else "distinctAttribute"


class DeviceClaimConfiguration(K8s):
    requests: tuple[str, ...] = ()
    opaque: dict[str, Any] | None = None


class DeviceClaim(K8s):
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceClaimConfiguration, ...] = ()

    @model_validator(mode="after")
    def _references(self) -> DeviceClaim:
        """Request names are unique; a constraint names requests (or `req/sub`) of this claim."""
        names = [request.name for request in self.requests]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"duplicate request names: {', '.join(duplicates)}")
        known = set(names) | {name for request in self.requests for name, _ in request.alternatives()}
        for index, constraint in enumerate(self.constraints):
            unknown = [name for name in constraint.requests if name not in known]
            if unknown:
                raise ValueError(
                    f"constraints[{index}].requests: {', '.join(unknown)}: must be the name of a request in the claim "
                    f"or the name of a request and a subrequest separated by '/' (requests: {', '.join(names) or 'none'})"
                )
        return self


class ResourceClaimSpec(K8s):
    devices: DeviceClaim = DeviceClaim()


class DeviceRequestAllocationResult(K8s):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] | None = None
    share_id: str | None = Field(None, alias="shareID")
    consumed_capacity: dict[str, Quantity] | None = None
    binding_conditions: tuple[str, ...] | None = None
    binding_failure_conditions: tuple[str, ...] | None = None


class DeviceAllocationConfiguration(K8s):
    source: Literal["FromClass", "FromClaim"]
    requests: tuple[str, ...] | None = None
    opaque: dict[str, Any] | None = None


class DeviceAllocationResult(K8s):
    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[DeviceAllocationConfiguration, ...] | None = None


class AllocationResult(K8s):
    devices: DeviceAllocationResult = DeviceAllocationResult()
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimStatus(BaseModel):
    """Allocation and reservations; device health (status.devices) passes through unread."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel, frozen=True)

    allocation: AllocationResult | None = None
    reserved_for: tuple[dict[str, Any], ...] | None = None


class ResourceClaim(K8s):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceClaim"] = "ResourceClaim"
    metadata: ObjectMeta
    spec: ResourceClaimSpec = ResourceClaimSpec()
    status: ResourceClaimStatus | None = None

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace or 'default'}/{self.metadata.name}"


class ResourceClaimTemplateSpec(K8s):
    metadata: ObjectMeta | None = None
    spec: ResourceClaimSpec = ResourceClaimSpec()


class ResourceClaimTemplate(K8s):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceClaimTemplate"] = "ResourceClaimTemplate"
    metadata: ObjectMeta
    spec: ResourceClaimTemplateSpec

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace or 'default'}/{self.metadata.name}"


class ClaimList(K8s):
    """gpusched's own claims file (`gpusched schema claims`): `{claims: [ResourceClaim, ...]}`."""

    claims: tuple[ResourceClaim, ...]
