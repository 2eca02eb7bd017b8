"""Consumable capacity (DRAConsumableCapacity): how much of a device's capacity one allocation consumes, and whether a
request still fits beside what earlier allocations consumed - as the allocator's consumable_capacity.go decides it.

- A capacity the request names is consumed as requested, rounded up by the capacity's requestPolicy: below
  `validRange.min` to min, else up to the next step from min; with `validValues` up to the first value not below it
  (a request above them all stays as it is, and then violates the policy). A capacity the request does not name
  consumes the policy's default, or without a policy the whole capacity.
- The device is skipped (a soft miss) when the request names a capacity the device lacks, when the rounded amount
  violates the policy (above max, off the steps, not a valid value), or when it would take the device's capacity
  over its value together with what allocated claims and this search consume.
- From 1.37 two errors abort the whole attempt: a consumption below zero ("capacity value is negative") and an amount
  the range arithmetic cannot represent (past int64 on the whole-unit path, an amount finer than a milli unit or past
  the milli range on the milli path, which DRAFractionalCapacityRange selects when every bound fits in millis). In
  1.36 every failure only skips the device.

Amounts are exact Decimals; each keeps the format of the quantity it came from (the request, the default, the step,
a valid value, the capacity), because the allocation result writes it out as Go's Quantity.String() does.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_UP, Decimal

from ...limits import INT64_MAX
from ...models.dra import CapacityRequestPolicyRange, DeviceCapacity
from ...models.quantity import parse_quantity

__all__ = ["Amount", "CapacityError", "amount_of", "consumption", "fits", "canonical"]

NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"
NEGATIVE = "capacity value is negative"
_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_NANO = Decimal("1e-9")


class CapacityError(Exception):
    """A capacity the allocator cannot compute: the attempt stops (from 1.37)."""


@dataclass(frozen=True)
class Amount:
    """A quantity's value and the format Go parsed it with (DecimalSI, BinarySI, DecimalExponent)."""

    value: Decimal
    format: str = "DecimalSI"

    @property
    def text(self) -> str:
        return canonical(self.value, self.format)


def amount_of(quantity: str | int) -> Amount:
    """ParseQuantity: the suffix sets the format; precision past nano is rounded up; a binary amount below one
    is shown as decimal."""
    value = parse_quantity(quantity)
    if value and value % _NANO:
        value = value.quantize(_NANO, rounding=ROUND_UP)
    text = str(quantity).strip()
    suffix = text.lstrip("+-0123456789.")
    if suffix in _BINARY[1:]:
        found = "DecimalSI" if 0 < abs(value) < 1 else "BinarySI"
    elif suffix[:1] in ("e", "E"):
        found = "DecimalExponent"
    else:
        found = "DecimalSI"
    return Amount(value, found)


def canonical(value: Decimal, form: str) -> str:
    """Quantity.String(): binary with the largest exact power of 1024 (decimal below 1024 or when not whole),
    decimal with the largest power of 1000 that keeps the number whole, or an `e` exponent."""
    if not value:
        return "0"
    if form == "BinarySI" and (abs(value) < 1024 or value != value.to_integral_value()):
        form = "DecimalSI"
    if form == "BinarySI":
        number, power = int(value), 0
        while number % 1024 == 0 and power < len(_BINARY) - 1:
            number, power = number // 1024, power + 1
        return f"{number}{_BINARY[power]}"
    sign, digits, exponent = value.normalize().as_tuple()
    number = int("".join(map(str, digits)))
    shift = int(exponent) % 3
    number, exponent = number * 10**shift, int(exponent) - shift
    text = f"{'-' if sign else ''}{number}"
    if form == "DecimalExponent":
        return text if exponent == 0 else f"{text}e{exponent}"
    return text + _DECIMAL.get(exponent, f"e{exponent}")


def _ceil(value: Decimal) -> int:
    """Value() and MilliValue() round up."""
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _milli(value: Decimal) -> int | None:
    """safeMilliValue: the value in millis when that is exact."""
    scaled = value * 1000
    return int(scaled) if scaled == scaled.to_integral_value() else None


def _use_milli(bounds: CapacityRequestPolicyRange, fractional: bool) -> bool:
    """useMilli: the gate is on, every bound is an exact milli amount, and the step is at least 1m."""
    if not fractional:
        return False
    for value in (bounds.min, bounds.max, bounds.step):
        if value is not None and _milli(parse_quantity(value)) is None:
            return False
    return not (bounds.step is not None and (_milli(parse_quantity(bounds.step)) or 0) < 1)


def _round_up_range(requested: Amount, bounds: CapacityRequestPolicyRange, fractional: bool) -> Amount:
    low = amount_of(bounds.min)  # type: ignore[arg-type]  # the caller checked min is set
    if requested.value < low.value:
        return low
    if bounds.step is None:
        return requested
    step = amount_of(bounds.step)
    if _use_milli(bounds, fractional):
        wanted = _milli(requested.value)
        if wanted is None:
            raise CapacityError(f"{NOT_REPRESENTABLE}: request {requested.text} is not a representable milli value")
        unit, start = _milli(step.value) or 1, _milli(low.value) or 0
        steps = -(-(wanted - start) // unit)
        if steps > (INT64_MAX - start) // unit:
            raise CapacityError(
                f"{NOT_REPRESENTABLE}: rounding request {requested.text} up to the next step passes the milli-value range"
            )
        return Amount(Decimal(start + unit * steps) / 1000, step.format)
    if requested.value > INT64_MAX:
        raise CapacityError(f"{NOT_REPRESENTABLE}: request {requested.text} exceeds MaxInt64")
    wanted, unit, start = _ceil(requested.value), _ceil(step.value), _ceil(low.value)
    steps = -(-(wanted - start) // unit)
    if start >= 0 and steps > (INT64_MAX - start) // unit:
        raise CapacityError(
            f"{NOT_REPRESENTABLE}: rounding request {requested.text} up to the next step passes MaxInt64"
        )
    return Amount(Decimal(start + unit * steps), step.format)


def _consumed(requested: Amount | None, capacity: DeviceCapacity, fractional: bool) -> Amount:
    """calculateConsumedCapacity."""
    policy = capacity.request_policy
    if requested is None:
        return amount_of(policy.default if policy and policy.default is not None else capacity.value)
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, policy.valid_range, fractional)
    if policy.valid_values is not None:
        options = [amount_of(value) for value in policy.valid_values]
        return next((option for option in options if requested.value <= option.value), requested)
    return requested


def _violates(consumed: Decimal, capacity: DeviceCapacity, fractional: bool) -> bool:
    """violatesPolicy: above max or off the steps of the range, or not one of the valid values; the default never."""
    policy = capacity.request_policy
    if policy is None or (policy.default is not None and consumed == parse_quantity(policy.default)):
        return False
    bounds = policy.valid_range
    if bounds is not None:
        if bounds.max is not None and consumed > parse_quantity(bounds.max):
            return True
        if bounds.step is None:
            return False
        low, step = parse_quantity(bounds.min or 0), parse_quantity(bounds.step)
        if _use_milli(bounds, fractional):
            wanted = _milli(consumed)
            return wanted is None or (wanted - (_milli(low) or 0)) % (_milli(step) or 1) != 0
        return (_ceil(consumed) - _ceil(low)) % _ceil(step) != 0
    if policy.valid_values:
        return all(consumed != parse_quantity(value) for value in policy.valid_values)
    return False


def consumption(
    requests: dict[str, str | int] | None, capacity: dict[str, DeviceCapacity], fractional: bool, aborts: bool = True
) -> dict[str, Amount]:
    """GetConsumedCapacityFromRequest: what the allocation consumes of each of the device's capacities;
    CapacityError (`capacity "<name>": ...`) for an amount that cannot be computed, or (where the release aborts
    on it) one below zero."""
    wanted = requests or {}
    found = {}
    for name, cap in sorted(capacity.items()):
        try:
            amount = _consumed(amount_of(wanted[name]) if name in wanted else None, cap, fractional)
        except CapacityError as error:
            raise CapacityError(f'capacity "{name}": {error}') from None
        if amount.value < 0 and aborts:
            raise CapacityError(f'capacity "{name}": {NEGATIVE}')
        found[name] = amount
    return found


def fits(
    requests: dict[str, str | int] | None,
    capacity: dict[str, DeviceCapacity],
    used: dict[str, Decimal],
    fractional: bool,
    aborts: bool,
) -> bool:
    """CmpRequestOverCapacity: the request fits beside `used` (what allocated claims and this search consume).
    Every capacity is resolved before any soft miss, so an error does not depend on the order they are looked at."""
    if any(name not in capacity for name in requests or {}):
        return False
    try:
        consumed = consumption(requests, capacity, fractional, aborts)
    except CapacityError:
        if not aborts:
            return False
        raise
    for name, amount in consumed.items():
        if _violates(amount.value, capacity[name], fractional):
            return False
        if used.get(name, Decimal(0)) + amount.value > capacity[name].amount:
            return False
    return True
