"""The documented size limits of an input, in one place; each can be raised with an environment variable.

They keep a hostile or mistaken file (10^9 GPUs on a node, 10^9 replicas or nodes) from turning into hours of
work or gigabytes of memory: such input is refused with exit 2 naming the limit. The values are read once, when
gpusched is imported; a variable that is not a number in range is an error naming it (exit 2). Kubernetes' own
bounds (int32 priorities, int64 quantities) are fixed, not settable.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from pydantic import AfterValidator

from .errors import InputError

__all__ = [
    "MAX_NODES",
    "MAX_GPUS_PER_NODE",
    "MAX_REPLICAS",
    "MAX_PODS",
    "MAX_POD_GPUS",
    "INT32_MIN",
    "INT32_MAX",
    "INT64_MAX",
    "MAX_MEMORY_GIB",
    "MAX_SECONDS",
    "setting",
    "command_budget",
    "command_steps",
    "at_import",
    "check_settings",
    "at_most",
]

Number = TypeVar("Number", int, float)


MAX_SECONDS = 86400.0  # a time setting (a timeout) of more than a day is a typo, and `select` overflows on 1e308


def setting(name: str, default: Number, high: Number | None = None) -> Number:
    """The environment variable `name`, unset or empty: `default`. Otherwise a number of `default`'s type (a whole
    number for a count, a finite one for seconds), more than 0 and at most `high` (for seconds: MAX_SECONDS);
    anything else (inf, nan, -1, 1e308, words) is an InputError naming the variable, never quietly the default."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    kind = "a whole number" if isinstance(default, int) else "a number of seconds"
    ceiling = high if high is not None else (None if isinstance(default, int) else MAX_SECONDS)
    try:
        value = type(default)(raw)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value <= 0 or (ceiling is not None and value > ceiling):
        most = f" and at most {ceiling:g}" if ceiling is not None else ""
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise InputError(f"${name}", f"expected {kind} more than 0{most}, got {shown!r}")
    return value


_refused: list[InputError] = []  # the settings read at import that were not numbers in range


def at_import(name: str, default: Number) -> Number:
    """`setting` for a limit read when gpusched is imported: a bad value is kept for `check_settings` (an import
    cannot print one clear line) and the default used meanwhile."""
    try:
        return setting(name, default)
    except InputError as error:
        _refused.append(error)
        return default


def check_settings() -> None:
    """Raise the first limit variable read at import that was refused (the CLI calls this before any command)."""
    if _refused:
        raise _refused[0]


MAX_NODES = at_import("GPUSCHED_MAX_NODES", 100_000)
MAX_GPUS_PER_NODE = at_import("GPUSCHED_MAX_GPUS_PER_NODE", 64)
MAX_REPLICAS = at_import("GPUSCHED_MAX_REPLICAS", 1024)  # time-slicing replicas per GPU
MAX_PODS = at_import("GPUSCHED_MAX_PODS", 1_000_000)  # pods or jobs in one file, or GPUs one pod asks for
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1  # pod priority (spec.priority) is an int32
INT64_MAX = 2**63 - 1  # the largest quantity Kubernetes keeps as an integer
MAX_MEMORY_GIB = float(INT64_MAX >> 30)  # GPU memory in GiB whose bytes are still an int64 quantity
MAX_POD_GPUS = MAX_GPUS_PER_NODE * MAX_REPLICAS  # no node could hold more GPUs (or replicas) for one pod


DEFAULT_COMMAND_STEPS = 10_000_000  # devices the DRA searches of one command may try together: some 30 s
_command_steps: ContextVar[list[int] | None] = ContextVar("gpusched_command_steps", default=None)


@contextmanager
def command_budget() -> Iterator[None]:
    """One budget of DRA search steps for everything inside (the CLI: one command), GPUSCHED_DRA_COMMAND_STEPS
    devices tried over all nodes and claims; each node's own search limit (GPUSCHED_DRA_MAX_STEPS) still applies.
    Without it a command with 1,000 nodes of impossible claims would try 1,000 times a node's limit."""
    token = _command_steps.set([setting("GPUSCHED_DRA_COMMAND_STEPS", DEFAULT_COMMAND_STEPS)])
    try:
        yield
    finally:
        _command_steps.reset(token)


def command_steps() -> list[int] | None:
    """The steps left to the current command, as a one-item list its searches spend from (None: no budget)."""
    return _command_steps.get()


def at_most(limit: int, variable: str) -> AfterValidator:
    """A pydantic check that a number or a list's length is at most `limit`, saying which variable raises it."""

    def check(value: Any) -> Any:
        size = len(value) if isinstance(value, list | dict) else value
        if size > limit:
            what = f"{size} items" if isinstance(value, list | dict) else str(value)
            raise ValueError(f"must be no more than {limit} (got {what}; set {variable} to raise the limit)")
        return value

    return AfterValidator(check)
