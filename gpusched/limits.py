"""The documented size limits of an input, in one place; each can be raised with an environment variable.

They keep a hostile or mistaken file (10^9 GPUs on a node, 10^9 replicas or nodes) from turning into hours of
work or gigabytes of memory: such input is refused with exit 2 naming the limit. The values are read once, when
gpusched is imported. Kubernetes' own bounds (int32 priorities, int64 quantities) are fixed, not settable.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

from pydantic import AfterValidator

__all__ = [
    "MAX_NODES",
    "MAX_GPUS_PER_NODE",
    "MAX_REPLICAS",
    "MAX_PODS",
    "MAX_POD_GPUS",
    "INT32_MIN",
    "INT32_MAX",
    "INT64_MAX",
    "setting",
    "at_most",
]

Number = TypeVar("Number", int, float)


def setting(name: str, default: Number) -> Number:
    """The environment variable `name` when it is a positive number of `default`'s type (int or float), else
    `default`."""
    try:
        value = type(default)(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


MAX_NODES = setting("GPUSCHED_MAX_NODES", 100_000)
MAX_GPUS_PER_NODE = setting("GPUSCHED_MAX_GPUS_PER_NODE", 64)
MAX_REPLICAS = setting("GPUSCHED_MAX_REPLICAS", 1024)  # time-slicing replicas per GPU
MAX_PODS = setting("GPUSCHED_MAX_PODS", 1_000_000)  # pods or jobs in one file, or GPUs one pod asks for
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1  # pod priority (spec.priority) is an int32
INT64_MAX = 2**63 - 1  # the largest quantity Kubernetes keeps as an integer
MAX_POD_GPUS = MAX_GPUS_PER_NODE * MAX_REPLICAS  # no node could hold more GPUs (or replicas) for one pod


def at_most(limit: int, variable: str) -> AfterValidator:
    """A pydantic check that a number or a list's length is at most `limit`, saying which variable raises it."""

    def check(value: Any) -> Any:
        size = len(value) if isinstance(value, list | dict) else value
        if size > limit:
            what = f"{size} items" if isinstance(value, list | dict) else str(value)
            raise ValueError(f"must be no more than {limit} (got {what}; set {variable} to raise the limit)")
        return value

    return AfterValidator(check)
