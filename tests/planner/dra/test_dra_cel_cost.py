"""The port of the API server's cost estimate, alone: its arithmetic, the DRA size bounds, and estimates worked out
by hand from cel-go's and Kubernetes' rules (the live agreement is tests/conformance/test_dra_cel_and_taint_rules.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusched.planner.dra.celcheck import CheckError, checked
from gpusched.planner.dra.celcost import MAX_COST, Range, _declared_size, estimate

TOP = 2**64 - 1
A = "device.attributes['gpu.example.com']"


def cost(expression: str) -> int:
    return estimate(checked(expression))


def test_ranges_saturate_at_the_top_of_uint64():
    assert Range(TOP, TOP) + Range(1, 1) == Range(TOP, TOP)
    assert Range(2**40, 2**40) * Range(2**40, 2**40) == Range(TOP, TOP)
    assert Range(0, TOP).scaled(0.1) == Range(0, 1844674407370955264)  # float64, rounded up, as cel-go
    assert Range(0, TOP).scaled(2.0) == Range(0, TOP)
    assert Range(3, 64).scaled(0.1) == Range(1, 7)
    assert Range(5, 9).union(Range(1, 7)) == Range(1, 9)


@pytest.mark.parametrize(
    ("path", "size"),
    [
        (("device", "driver"), Range(0, 63)),
        (("device", "allowMultipleAllocations"), Range(0, 1)),
        (("device", "attributes"), Range(0, 32)),
        (("device", "attributes", "@keys"), Range(0, 63)),
        (("device", "attributes", "@values"), Range(0, 32)),
        (("device", "attributes", "@values", "@keys"), Range(0, 32)),
        (("device", "attributes", "@values", "model"), Range(0, 64)),  # any name in an attribute map
        (("device", "attributes", "@values", "@values"), Range(0, 64)),
        (("device", "capacity", "@values", "memory"), None),  # a capacity map holds Quantities, not attributes
        (("device", "capacity", "@values", "@values"), Range(0, 0)),
        (("device", "attributes", "model"), None),  # a select on the outer map is not an attribute
        (("x", "driver"), None),
    ],
)
def test_the_dra_size_bounds(path, size):
    assert _declared_size(path) == size


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("true", 0),
        # device.driver: an identifier and a select (2); == prices the shorter side, ceil(1 * 0.1)
        ("device.driver == 'x'", 3),
        # the attribute: ident + select + index on a map (3) + select on a map (1); == against 3 characters
        (f"{A}.s == 'abc'", 5),
        # startsWith: the argument's length times 0.1 (1)
        (f"{A}.s.startsWith('ab')", 5),
        # contains: ceil(64 * 0.1) * ceil(2 * 0.1) = 7
        (f"{A}.s.contains('ab')", 11),
        # matches: ceil(65 * 0.1) * ceil(3 * 0.25) = 7
        (f"{A}.s.matches('a+b')", 11),
        # split (Kubernetes): ceil(64 * 0.2) = 13; size() 1; > 1
        (f"{A}.s.split(',').size() > 1", 4 + 13 + 1 + 1),
        # a comprehension: its range's size times its condition and step; lists.range(N) is N + 11
        ("lists.range(10).all(x, true)", 4 * 10 + 12),
        ("device.attributes.exists(d, true)", 2 + 32 * (1 + 2 + 1) + 1 + 0),
        # cel.bind costs its empty range (a list literal, 10), its init once, and its result
        (f"cel.bind(v, {A}.s, v.size() > 0)", 10 + 4 + 1 + 1 + 1),
        # list and map literals cost 10 and 30
        ("[1, 2].size() == 2 && {'a': 1}.size() == 1", 10 + 1 + 1 + 30 + 1 + 1),
    ],
)
def test_estimates_worked_out_by_hand(expression, expected):
    assert cost(expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "['a'].join('-') == 'a'",  # the elements of a list literal of strings have no bound to Kubernetes
        f"{A}.s.split(',').all(x, x.split(';').size() > 0)",  # the parts of a split have no bound either
        "url('https://x.io/a').getEscapedPath().findAll('[A-Z]').size() == 1",  # nor a URL's path
        "['a', 'b'].isSorted()",
    ],
)
def test_unsized_strings_cost_without_bound(expression):
    assert cost(expression) >= TOP // 10


@given(st.integers(min_value=0, max_value=10**9))
def test_a_range_comprehension_costs_four_per_iteration_and_twelve(n):
    """lists.range(n): n + 1 + 10; the loop: n times condition (2) and step (1); result 1."""
    assert cost(f"lists.range({n}).all(x, true)") == 4 * n + 12


@given(st.integers(min_value=1, max_value=3))
def test_nested_comprehensions_over_attributes_multiply(depth):
    inner = "true"
    for name in "defg"[:depth]:
        inner = f"device.attributes.all({name}, {inner})"
    total = cost(inner)
    assert 32**depth <= total <= 5 * 32**depth
    assert (total <= MAX_COST) is (depth <= 3)


def test_the_check_only_environment_refuses_what_the_api_servers_types_refuse():
    with pytest.raises(CheckError, match="cannot be the range of a comprehension"):
        checked(f"{A}.l.exists(p, p == 1)")
