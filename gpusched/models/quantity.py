"""Kubernetes resource quantities ("63500m", "2Ti", "1e3") as exact Decimals."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator, Field

from ..limits import INT64_MAX

__all__ = ["Quantity", "parse_quantity", "milli", "to_int", "format_quantity"]

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
_PATTERN = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_REGEX = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_LARGEST = Decimal(INT64_MAX) / 1000  # so that millicores too stay an int64, as the API server keeps them
_TOO_LARGE = f"must be no more than {INT64_MAX // 1000} (an int64 of millis, as the API server keeps it); got {{!r}}"


def _malformed(value: object) -> ValueError:
    return ValueError(
        f"expected a quantity such as 4, 500m or 64Gi, got {value!r} (quantities must match the "
        f"regular expression {_REGEX})"
    )


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a quantity; raises ValueError with the expected form, or when it is infinite, not a number, or too
    large for an int64 of millis: nothing downstream ever sees an exponent it could not afford to compute."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _malformed(value)
    if isinstance(value, int) and abs(value) > INT64_MAX:
        raise ValueError(_TOO_LARGE.format(f"an integer of {value.bit_length()} bits"))
    match = _PATTERN.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIXES:
        raise _malformed(value)
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:
        raise _malformed(value) from None
    if not number.is_finite() or (number and number.adjusted() > 30):
        raise ValueError(_TOO_LARGE.format(value))
    found = number * _SUFFIXES[match.group(2)]
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
def milli(value: str | int | float) -> int:
    """Millicores (rounded up, as the API server does for cpu)."""
    return int((parse_quantity(value) * 1000).to_integral_value(rounding="ROUND_CEILING"))


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
