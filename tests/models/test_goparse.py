"""Go's parsing of Kubernetes strings: strconv.ParseInt(s, 10, 64) and apimachinery's label validation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusched.models.goparse import label_value_error, parse_int64, parse_rfc3339, qualified_name_error

INT64 = st.integers(-(2**63), 2**63 - 1)


@given(INT64)
def test_every_int64_written_in_decimal_parses_back(value):
    assert parse_int64(str(value)) == value


@given(st.integers(2**63, 2**80) | st.integers(-(2**80), -(2**63) - 1))
def test_beyond_int64_is_a_range_error(value):
    assert parse_int64(str(value)) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("+5", 5), ("-0", 0), ("007", 7), ("-9223372036854775808", -(2**63)), ("9223372036854775807", 2**63 - 1)],
)
def test_signs_and_leading_zeros_are_go_syntax(text, expected):
    assert parse_int64(text) == expected


@pytest.mark.parametrize("text", ["1_000", " 5", "5 ", "", "+", "-", "0x10", "1e3", "١٢", "5.0", "++5", "\u00b2"])
def test_what_python_int_might_take_and_go_refuses(text):
    assert parse_int64(text) is None


@pytest.mark.parametrize("value", ["", "a", "1_000", "gpu.count-8", "A" * 63, "007"])
def test_label_values_the_api_server_accepts(value):
    assert label_value_error(value) == ""


@pytest.mark.parametrize("value", ["+4", "-1", " 4", "a" * 64, "a/b", "٣", "x-", "_x"])
def test_label_values_the_api_server_refuses(value):
    assert label_value_error(value)


@pytest.mark.parametrize("key", ["zone", "gpu.count", "example.com/gpu-model", "kubernetes.io/hostname", "A_b"])
def test_qualified_names(key):
    assert qualified_name_error(key) == ""


@pytest.mark.parametrize("key", ["", "-c", "a/", "/a", "Example.com/a", "a/b/c", "x" * 64, "ex ample"])
def test_not_qualified_names(key):
    assert qualified_name_error(key)


@pytest.mark.parametrize(
    "text",
    [
        "2025-01-31T12:00:00Z",
        "2025-01-31T12:00:00.123456789Z",
        "2025-01-31T12:00:00+02:00",
        "2025-01-31T12:00:00-00:30",
    ],
)
def test_rfc3339_times_go_accepts(text):
    found = parse_rfc3339(text)
    assert found is not None and found.tzinfo is not None


@pytest.mark.parametrize(
    "text", ["2025-01-31", "2025-01-31T12:00:00", "2025-01-31 12:00:00Z", "2025-01-31T12:00Z", "2025-13-31T12:00:00Z",
             "2025-01-31t12:00:00z", "２０２５-01-31T12:00:00Z", "2025-01-31T12:00:00+0200"]
)  # fmt: skip
def test_rfc3339_times_go_refuses(text):
    assert parse_rfc3339(text) is None
