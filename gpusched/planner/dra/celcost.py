"""A CEL selector priced before it compiles: the CEL library has no cost estimator and cannot be interrupted."""

from __future__ import annotations

import re

__all__ = ["MAX_COST", "MAX_EXPRESSION_LENGTH", "MAX_NESTING", "STRING_LITERAL", "cost_problem"]

STRING_LITERAL = re.compile(r"""[rRbB]{0,2}('''.*?'''|\"\"\"(?:.|\n)*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")

# The library has no cost estimator and cannot be interrupted, so a selector is priced before it compiles, in the
# spirit of the API server's budget (k8s.io/dynamic-resource-allocation/cel: 10 KiB, cost at most 1,000,000):
# comprehensions cost the product of the sizes they range over, nested; each `.replace()` may multiply the size of a
# string by len(new) (by 10 KiB when `new` is not a literal). A device's attribute maps hold at most 32 entries.
MAX_EXPRESSION_LENGTH = 10 * 1024
MAX_COST = 1_000_000
MAX_NESTING = 32
_MACRO = re.compile(
    r"\.\s*(all|exists_one|existsOne|exists|map|filter|transformList|transformMap|transformMapEntry|sortBy)\s*\("
)
_REPLACE = re.compile(
    r"""\.\s*replace\s*\(\s*('(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")\s*,\s*('(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")\s*\)"""
)
_UNKNOWN_RANGE = 32
_JOIN = re.compile(r"\.\s*join\s*\(")


def _range_size(code: str, end: int) -> int:
    """How many items the comprehension whose `.` is at `end` ranges over: a list literal's, else a map's bound."""
    if end == 0 or code[end - 1] != "]":
        return _UNKNOWN_RANGE
    depth, items = 0, 1
    for index in range(end - 1, -1, -1):
        char = code[index]
        depth += char in ")]}"
        depth -= char in "([{"
        if depth == 0:
            return items if code[index + 1 : end - 1].strip() else 0
        items += char == "," and depth == 1
    return _UNKNOWN_RANGE


def cost_problem(expression: str) -> str | None:
    """Why a selector could run for minutes or take gigabytes (the limit it passes), or None when it is cheap."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        return f"must be no more than {MAX_EXPRESSION_LENGTH} bytes long (got {len(expression)})"
    code = STRING_LITERAL.sub('""', expression)
    if _JOIN.search(code):  # library/cost.go prices join() by list size times element size, which DRA cannot size
        return f"estimated cost exceeds budget of {MAX_COST} (join() of a list whose element sizes are unknown)"
    depth = deepest = 0
    for char in code:
        depth += char in "([{"
        depth -= char in ")]}"
        deepest = max(deepest, depth)
    if deepest > MAX_NESTING:
        return f"nested deeper than {MAX_NESTING} parentheses and brackets"
    open_macros: list[tuple[int, int]] = []  # (where its argument list closes, the cost of one iteration of it)
    cost = 0
    for match in _MACRO.finditer(code):
        while open_macros and open_macros[-1][0] < match.start():
            open_macros.pop()
        outer = open_macros[-1][1] if open_macros else 1
        iterations = outer * max(_range_size(code, match.start()), 1)
        cost += iterations
        open_macros.append((_closing(code, match.end() - 1), iterations))
    size = len(expression)
    for match in _REPLACE.finditer(expression):
        old, new = len(match.group(1)) - 2, len(match.group(2)) - 2
        size *= new + 1 if old == 0 else max(1, -(-new // old))
    replaces = len(re.findall(r"\.\s*replace\s*\(", code)) - len(_REPLACE.findall(expression))
    size *= MAX_EXPRESSION_LENGTH**replaces
    if max(cost, size) > MAX_COST:
        return f"estimated cost exceeds budget of {MAX_COST} (nested comprehensions or chained replace() grow too fast)"
    return None


def _closing(code: str, opening: int) -> int:
    depth = 0
    for index in range(opening, len(code)):
        depth += code[index] in "([{"
        depth -= code[index] in ")]}"
        if depth == 0:
            return index
    return len(code)
