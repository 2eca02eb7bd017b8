"""Selectors priced before they run: over-budget ones are refused at once, in the API server's words (each case
here checked against the 1.37.2 API server)."""

from __future__ import annotations

import time

import pytest

from gpusched.planner.dra.cel import CelError, compile_selector

LIST = "[" + ",".join(str(i) for i in range(100)) + "]"


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        (f"{LIST}.all(x, {LIST}.all(y, {LIST}.all(z, x + y + z >= 0)))", "too complex, exceeds cost limit"),
        ("'aa'" + ".replace('a', 'aa')" * 22 + ".size() > 0", "too complex, exceeds cost limit"),
        ("true" + " && true" * 3000, "must be no more than 10240 bytes"),
        ("(" * 40 + "true" + ")" * 40, "nested deeper than 32"),
    ],
)
def test_over_budget_selectors_are_refused_quickly(expression: str, why: str) -> None:
    started = time.monotonic()
    with pytest.raises(CelError, match=why):
        compile_selector(expression)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize(
    "expression",
    [
        f"{LIST}.all(x, {LIST}.exists(y, x == y))",
        "'ab'.replace('a', 'x').replace('b', 'y') == 'xy'",
        "'a'.replace('a', device.driver).replace('a', device.driver).size() > 0",  # Kubernetes sizes the results
        "'aa'" + ".replace('a', 'aa')" * 21 + ".size() > 0",  # 22 are over the limit
        'device.attributes["gpu.nvidia.com"].all(k, k != "")',
    ],
)
def test_selectors_within_budget_compile(expression: str) -> None:
    compile_selector(expression)
