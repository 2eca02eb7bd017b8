"""Consumable capacity (DRAConsumableCapacity): how much of a device's capacity one allocation consumes, and whether a
request still fits beside what earlier allocations consumed - as the allocator's consumable_capacity.go decides it.

- A capacity the request names is consumed as requested, rounded up by the capacity's requestPolicy: below
  `validRange.min` to min, else up to the next step from min; with `validValues` up to the first value not below it
  (a request above them all stays as it is, and then violates the policy). A capacity the request does not name
  consumes the policy's default, or without a policy the whole capacity.
- The device is skipped (a soft miss) when the request names a capacity the device lacks, when the rounded amount
  violates the policy (above max, off the steps, not a valid value), or when it would take the device's capacity
  over its value together with what allocated claims and this search consume.
- From 1.37 a consumption below zero aborts the whole attempt ("capacity value is negative"); in 1.36 it is
  counted as it is. (1.37 also aborts on amounts past int64, which gpusched's quantities never reach: they are
  refused when read, models/quantity.py.)
- Ranges are rounded in whole units (Value(), rounded up): DRAFractionalCapacityRange's milli arithmetic is off by
  default in every release modelled (features.py).

Amounts are exact Decimals; each keeps the format of the quantity it came from (the request, the default, the step,
a valid value, the capacity), because the allocation result writes it out as Go's Quantity.String() does.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_UP, Decimal

from ...models.dra import CapacityRequestPolicyRange, DeviceCapacity
from ...models.quantity import parse_quantity

__all__ = ["Amount", "CapacityError", "amount_of", "consumption", "fits", "canonical"]

NEGATIVE = "capacity value is negative"
_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_NANO = Decimal("1e-9")


class CapacityError(Exception):
    """A consumption the allocator refuses to count: the attempt stops (from 1.37)."""


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


def _round_up_range(requested: Amount, bounds: CapacityRequestPolicyRange) -> Amount:
    """roundUpRange in whole units (Value(), rounded up; DRAFractionalCapacityRange, whose milli arithmetic this
    would be, is off in every release modelled): min, or the next step from min, in the step's format."""
    low = amount_of(bounds.min)  # type: ignore[arg-type]  # the caller checked min is set
    if requested.value < low.value:
        return low
    if bounds.step is None:
        return requested
    step = amount_of(bounds.step)
    wanted, unit, start = _ceil(requested.value), _ceil(step.value), _ceil(low.value)
    steps = -(-(wanted - start) // unit)
    return Amount(Decimal(start + unit * steps), step.format)


def _consumed(requested: Amount | None, capacity: DeviceCapacity) -> Amount:
    """calculateConsumedCapacity."""
    policy = capacity.request_policy
    if requested is None:
        return amount_of(policy.default if policy and policy.default is not None else capacity.value)
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, policy.valid_range)
    if policy.valid_values is not None:
        options = [amount_of(value) for value in policy.valid_values]
        return next((option for option in options if requested.value <= option.value), requested)
    return requested


def _violates(consumed: Decimal, capacity: DeviceCapacity) -> bool:
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
        return (_ceil(consumed) - _ceil(low)) % _ceil(step) != 0
    if policy.valid_values:
        return all(consumed != parse_quantity(value) for value in policy.valid_values)
    return False


def consumption(
    requests: dict[str, str | int] | None, capacity: dict[str, DeviceCapacity], aborts: bool = True
) -> dict[str, Amount]:
    """GetConsumedCapacityFromRequest: what the allocation consumes of each of the device's capacities;
    CapacityError (`capacity "<name>": ...`) for one below zero, where the release aborts on it."""
    wanted = requests or {}
    found = {}
    for name, cap in sorted(capacity.items()):
        amount = _consumed(amount_of(wanted[name]) if name in wanted else None, cap)
        if amount.value < 0 and aborts:
            raise CapacityError(f'capacity "{name}": {NEGATIVE}')
        found[name] = amount
    return found


def fits(
    requests: dict[str, str | int] | None,
    capacity: dict[str, DeviceCapacity],
    used: dict[str, Decimal],
    aborts: bool,
) -> bool:
    """CmpRequestOverCapacity: the request fits beside `used` (what allocated claims and this search consume).
    Every capacity is resolved before any soft miss, so an error does not depend on the order they are looked at."""
    if any(name not in capacity for name in requests or {}):
        return False
    consumed = consumption(requests, capacity, aborts)
    for name, amount in consumed.items():
        if _violates(amount.value, capacity[name]):
            return False
        if used.get(name, Decimal(0)) + amount.value > capacity[name].amount:
            return False
    return True
