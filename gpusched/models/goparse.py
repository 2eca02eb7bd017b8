"""Kubernetes strings parsed as Go parses them, not as Python would.

Python's `int()` accepts `1_000`, surrounding spaces, non-ASCII digits and numbers of any size; Go's
`strconv.ParseInt(s, 10, 64)` (what label selectors use for Gt/Lt) accepts an optional sign and ASCII digits only,
within int64. Label keys and values follow apimachinery's validation (`IsQualifiedName`, `IsValidLabelValue`),
which the API server applies to nodeSelector and node affinity.
"""

from __future__ import annotations

import re
from datetime import datetime

from ..limits import INT64_MAX

__all__ = ["parse_int64", "parse_rfc3339", "label_value_error", "qualified_name_error"]

_DIGITS = re.compile(r"[+-]?[0-9]+")
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE_MAX = 63


def parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): the number, or None where Go returns an error (syntax or range)."""
    if not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if -INT64_MAX - 1 <= value <= INT64_MAX else None


def parse_rfc3339(text: str) -> datetime | None:
    """metav1.Time: time.Parse(time.RFC3339, text): a 'T', seconds and a zone (Z or ±hh:mm) are required, which
    Python's fromisoformat would not insist on. None where Go returns an error."""
    if not _RFC3339.fullmatch(text):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None  # a month 13, an hour 25


def label_value_error(value: str) -> str:
    """'' when `value` is a valid label value, else what the API server says is wrong with it."""
    if len(value.encode()) > LABEL_VALUE_MAX:
        return f"must be no more than {LABEL_VALUE_MAX} bytes"
    if not _LABEL_VALUE.fullmatch(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return ""


def qualified_name_error(name: str) -> str:
    """'' when `name` is a qualified name (`[prefix/]name`, a label key), else what is wrong with it."""
    prefix, slash, part = name.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return "prefix part must be a lowercase DNS subdomain of at most 253 characters"
    if not part:
        return "name part must be non-empty"
    if len(part) > LABEL_VALUE_MAX:
        return f"name part must be no more than {LABEL_VALUE_MAX} characters"
    if not _NAME_PART.fullmatch(part):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )
    return ""
