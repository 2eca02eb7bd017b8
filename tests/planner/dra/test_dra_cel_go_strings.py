"""cel-go's strings extension as Kubernetes evaluates it (format with the en_US locale, substring, charAt) and
cel-go's words for runtime errors the CEL library words otherwise."""

from __future__ import annotations

import pytest

from gpusched.models.dra import DeviceAttribute
from gpusched.planner.dra.cel import CelError, compile_selector, device_view
from gpusched.planner.dra.celstrings import format_string

D = "gpu.example.com"
A = f"device.attributes['{D}']"


def device():
    attributes = {"flag": DeviceAttribute(bool_value=True), "cores": DeviceAttribute(int_value=4),
                  "name": DeviceAttribute(string_value="gpu-0")}  # fmt: skip
    return device_view(f"{D}/n/gpu-0", D, attributes, {})


@pytest.mark.parametrize(
    ("text", "args", "expected"),
    [
        ("%e", [2.71828], "2.718280\u00d710\u2070\u2070"),  # as 1.37.2's API server evaluates it (a CRD rule)
        ("%.6e", [1052.032911275], "1.052033\u00d710\u2070\u00b3"),
        ("%.3e", [12345.678], "1.234568×10⁰⁴"),  # the precision is Go's width: still six digits
        ("%.0e", [5.0], "5.000000×10⁰⁰"),  # `%0e`: the zero flag
        ("%.20e", [-1.5e-7], "     -1.500000×10⁻⁰⁷"),  # padded to 20 characters
        ("%e", ["Infinity"], "     ∞"),
        ("%f", [1234567.8], "1,234,567.800000"),
        ("%.2f", [-1234.5], "-1,234.50"),
        ("%.0f", [2.5], "2"),
        ("%f", ["NaN"], "NaN"),
        ("%s", [1234567.0], "1.234567e+06"),
        ("%s", [0.000000002], "2e-09"),
        ("%s", [[2.71, "a", 1, True, None]], '[2.710000, "a", 1, true, null]'),
        ("%s", [{"b": 1, "a": "x"}], '{"a":"x", "b":1}'),
        ("%d and %x and %X and %o and %b", [10, 255, "hi", 8, True], "10 and ff and 6869 and 10 and 1"),
        ("100%% %s", ["sure"], "100% sure"),
    ],
)
def test_format_as_cel_go_with_en_us(text, args, expected):
    assert format_string(text, args) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'%e'.format([1.5]) == '1.500000e+00'", False),  # the library's format would say true
        ("'%.3e'.format([12345.678]) == '1.235e+04'", False),
        ("'%.3e'.format([12345.678]) == '1.234568×10⁰⁴'", True),
        (f"'%s/%d'.format([device.driver, int({A}.cores)]) == 'gpu.example.com/4'", True),
        ("'%.1f'.format([1000.0]) == '1000.0'", False),
        (f"{A}.name.substring(4) == '0' && {A}.name.charAt(5) == ''", True),
    ],
)
def test_selectors_evaluate_what_the_scheduler_evaluates(expression, expected):
    assert compile_selector(expression).matches(device()) is expected


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        (f"int({A}.name) == 1", "type conversion error from 'string' to 'int'"),
        (f"bool({A}.name)", "type conversion error from 'string' to 'bool'"),
        (f"timestamp({A}.name) > timestamp(0)", "type conversion error from 'string' to 'google.protobuf.Timestamp'"),
        (f"{A}.name.matches({A}.name + '(')", "error parsing regexp: missing closing ): `gpu-0(`"),
        (f"{A}.name.find({A}.name + '(') == ''", "Illegal regex: error parsing regexp: missing closing ): `gpu-0(`"),
        (f"{A}.name.substring(1, 100) == ''", "index out of range: 100"),
        (f"{A}.name.substring(4, 2) == ''", "invalid substring range. start: 4, end: 2"),
        (f"{A}.name.substring(-1) == ''", "index out of range: -1"),
        (f"{A}.name.charAt(6) == ''", "index out of range: 6"),
        (
            f"cidr({A}.name).prefixLength() == 1",
            "network address parse error during conversion from string: network address parse error during "
            "conversion from string: netip.ParsePrefix(\"gpu-0\"): no '/'",
        ),  # twice, as 1.37.2's API server says it (a CRD rule)
        (f"{A}.flag && {A}.flag.enabled", "no such key: enabled"),  # a field of a bool
        (f"{A}.cores.count == 1", "no such key: count"),
        (
            f"'%d'.format([dyn({A}.flag)]) == ''",
            "error during formatting: decimal clause can only be used on integers, was given bool",
        ),
        (
            f"'%e'.format([dyn({A}.name)]) == ''",
            "error during formatting: scientific clause can only be used on doubles, was given string",
        ),
    ],
)
def test_runtime_errors_in_cel_go_words(expression, error):
    with pytest.raises(CelError) as caught:
        compile_selector(expression).matches(device())
    assert str(caught.value) == error
