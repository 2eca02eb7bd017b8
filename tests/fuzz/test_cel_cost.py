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


def _literal(n: int) -> str:
    return "[" + ",".join(str(i) for i in range(n)) + "]"


@pytest.mark.parametrize(
    ("expression", "most"),
    [
        (f"{_literal(99)}.all(a, {_literal(99)}.all(b, a + b >= 0))", 9900),
        (f"{_literal(100)}.all(a, {_literal(100)}.all(b, a + b >= 0))", 10100),
        ("lists.range(9999).all(x, x >= 0)", 9999),
        ("lists.range(10000).all(x, x >= 0)", 10000),
        ("lists.range(5000).all(x, x >= 0) && lists.range(5000).all(x, x >= 0)", 10000),
        ("lists.range(10).all(a, lists.range(999).all(b, b >= 0))", 10000),
    ],
)
def test_the_iteration_estimate_agrees_with_the_runtime_budget(expression: str, most: int) -> None:
    """The API server accepts these (within its cost limit); the CEL library stops at its 10,000th iteration. The
    estimate says which it would stop, exactly: those are "not modelled", never a RuntimeError mid-search."""
    from gpusched.planner.dra.celcheck import checked
    from gpusched.planner.dra.celcost import iterations

    assert iterations(checked(expression)) == most
    selector = compile_selector(expression)
    if most < 10_000:
        assert not selector.missing and selector.program.eval(data={"device": {}}).value() is True
    else:
        assert "comprehension iterations" in selector.missing
        with pytest.raises(CelError, match="not modelled by gpusched: up to"):
            selector.matches(None)  # type: ignore[arg-type]  # refused before the device is read
