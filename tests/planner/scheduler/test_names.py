"""Every plugin name and every reason string is spelled once, in its defining module, and imported elsewhere."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import gpusched

PACKAGE = Path(gpusched.__file__).parent
NAMES = PACKAGE / "planner" / "scheduler" / "names.py"
SCHEDULER = PACKAGE / "planner" / "scheduler"
PROSE = {"description", "help"}  # keyword arguments that document, as docstrings do
SHORTEST = 12  # a template's fixed piece shorter than this ("free GPUs") is ordinary wording, not a reason


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "literal"` assignments."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value.value
    return found


def _not_code(tree: ast.Module) -> set[int]:
    """The ids of literals that are documentation or identifiers: docstrings, `help=`/`description=`, `__all__`."""
    owners = [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)),
    ]
    skip = {
        id(owner.body[0].value)
        for owner in owners
        if owner.body and isinstance(owner.body[0], ast.Expr) and isinstance(owner.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in PROSE:
            skip |= {id(part) for part in ast.walk(node.value)}
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                skip |= {id(part) for part in ast.walk(node.value)}
    return skip


def _literals(path: Path) -> list[tuple[int, str]]:
    """Every string literal in the file (f-string pieces included) that is code, not documentation."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _not_code(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def _plugin_names() -> set[str]:
    return set(_module_strings(ast.parse(NAMES.read_text())).values())


def _reasons() -> dict[str, Path]:
    """The fixed text of every `ERR_REASON*` constant (a template's placeholders cut out) -> its defining module."""
    found: dict[str, Path] = {}
    for path in SCHEDULER.rglob("*.py"):
        for name, text in _module_strings(ast.parse(path.read_text())).items():
            if name.startswith("ERR_REASON"):
                for literal, *_ in string.Formatter().parse(text):
                    if len(literal.strip()) >= SHORTEST:
                        found[literal.strip()] = path
    return found


def test_the_names_and_reasons_are_found():
    assert {"NodeResourcesFit", "DynamicResources", "DefaultPreemption", "GpuDevices"} <= _plugin_names()
    assert "node(s) were unschedulable" in _reasons()
    assert "GPU model is not" in _reasons()  # from a template


def test_no_plugin_name_or_reason_is_typed_again():
    names = {name: re.compile(rf"\b{name}\b") for name in _plugin_names()}
    reasons = _reasons()
    repeated = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for line, text in _literals(path):
            for name, pattern in names.items():
                if path != NAMES and pattern.search(text):
                    repeated.append(f"{relative}:{line}: {name}")
            for reason, home in reasons.items():
                if path != home and reason in text:
                    repeated.append(f"{relative}:{line}: {reason!r}")
    assert not repeated, "spelled outside its defining module:\n" + "\n".join(repeated)
