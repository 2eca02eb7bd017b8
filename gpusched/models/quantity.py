"""Kubernetes resource quantities ("63500m", "2Ti", "1e3") as exact Decimals."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator, Field

from ..limits import INT64_MAX

__all__ = ["Quantity", "parse_quantity", "stored", "rounded", "milli", "to_int", "format_quantity"]

_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_PATTERN = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)")  # Go's parseQuantityString, in one
_EXPONENT = re.compile(r"[eE][-+]?[0-9]+")
_REGEX = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
# The API server keeps any quantity (an arbitrary-precision decimal past int64); the scheduler reads whole units
# (Value) as an int64, cpu as int64 millis (MilliValue): gpusched refuses what those cannot hold.
_LARGEST = Decimal(INT64_MAX)
_TOO_LARGE = (
    f"must be no more than {INT64_MAX} (the scheduler reads a quantity as an int64, and gpusched models no more); "
    "got {!r}"
)
_CPU_TOO_LARGE = (
    f"must be no more than {INT64_MAX // 1000} for cpu (the scheduler reads cpu as an int64 of millicores); got {{!r}}"
)


def _malformed(value: object) -> ValueError:
    return ValueError(
        f"expected a quantity such as 4, 500m or 64Gi, got {value!r} (quantities must match the "
        f"regular expression {_REGEX})"
    )


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a quantity; raises ValueError with the expected form, or when it is infinite, not a number, or too
    large for an int64: nothing downstream ever sees an exponent it could not afford to compute."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _malformed(value)
    if isinstance(value, int) and abs(value) > INT64_MAX:
        raise ValueError(_TOO_LARGE.format(f"an integer of {value.bit_length()} bits"))
    match = _PATTERN.fullmatch(str(value).strip())  # Quantity.UnmarshalJSON trims spaces
    suffix = match.group(2) if match else ""
    if not match or (suffix not in _SUFFIXES and not _EXPONENT.fullmatch(suffix)):
        raise _malformed(value)  # a suffix after an exponent (1e3Ki) too, as Go refuses it
    try:
        number = Decimal(match.group(1))
        scale = _SUFFIXES[suffix] if suffix in _SUFFIXES else Decimal(10) ** min(int(suffix[1:]), 99)
    except InvalidOperation:
        raise _malformed(value) from None
    if not number.is_finite() or (number and number.adjusted() > 30):
        raise ValueError(_TOO_LARGE.format(value))
    found = number * scale
    if abs(found) > _LARGEST:
        raise ValueError(_TOO_LARGE.format(value))
    return found


def _check(value: str | int | float) -> str | int | float:
    parse_quantity(value)
    return value


Quantity = Annotated[
    str | int | float,
    Field(description="a Kubernetes quantity: 64, 500m, 512Gi"),
    AfterValidator(_check),
]


@lru_cache(maxsize=4096)
def stored(value: str | int | float) -> Decimal:
    """The quantity as the API server stores a pod's requests, limits and overhead: rounded up to a milli unit
    (`1.0001m` is kept as `2m`, `0.1Gi` as `107374182400m`). Sums of these are exact, as Quantity.Add is."""
    return parse_quantity(value).quantize(Decimal("0.001"), rounding="ROUND_CEILING")


def rounded(resource: str, amount: Decimal) -> int:
    """An exact amount as the scheduler counts it: cpu in millicores (MilliValue), the rest in whole units
    (Value), both rounded up, once."""
    scaled = amount * 1000 if resource == "cpu" else amount
    return int(scaled.to_integral_value(rounding="ROUND_CEILING"))


@lru_cache(maxsize=4096)
def milli(value: str | int | float) -> int:
    """Millicores (rounded up, as the API server does for cpu), within an int64."""
    found = int((parse_quantity(value) * 1000).to_integral_value(rounding="ROUND_CEILING"))
    if abs(found) > INT64_MAX:
        raise ValueError(_CPU_TOO_LARGE.format(value))
    return found


@lru_cache(maxsize=4096)
def to_int(value: str | int | float) -> int:
    """Whole units, rounded up (bytes, counts)."""
    return int(parse_quantity(value).to_integral_value(rounding="ROUND_CEILING"))


_BINARY = ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki")


def format_quantity(resource: str, value: int) -> str:
    """How kubectl would write an amount: cpu from millicores, byte sizes with the largest exact binary suffix."""
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix in _BINARY:
            size = int(_SUFFIXES[suffix])
            if value and value % size == 0:
                return f"{value // size}{suffix}"
    return str(value)
