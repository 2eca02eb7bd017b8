"""Hostile documents: mutations of the built-in scenarios and the kubectl dumps, and raw files no parser should fear.

Pure functions of a random.Random, so that hypothesis (through st.randoms) and tests/fuzz/run.py (N fresh cases)
draw the same kinds of case. A case is a command line and the files it reads; `check` runs one and judges it.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpusched.scenarios import scenario_names

from .harness import Outcome, invoke, leftovers

__all__ = [
    "HOSTILE_VALUES",
    "RAW",
    "Case",
    "mutate",
    "nudge",
    "scenario_case",
    "dump_case",
    "raw_case",
    "random_case",
    "check",
]

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "gpusched" / "scenarios" / "data"
DUMP = ROOT / "tests" / "data" / "import"
CORPUS = Path(__file__).parent / "corpus"

MARKUP = "x[/bold][red]\x1b[2J\x07:smile:"
HOSTILE_VALUES: list[Any] = [
    None,
    True,
    False,
    -1,
    0,
    2**31,
    2**31 - 1,
    -(2**31) - 1,
    2**63,
    2**64,
    10**9,
    10**30,
    -(10**30),
    1e308,
    -0.0,
    float("inf"),
    float("-inf"),
    float("nan"),
    "1e999999999",
    "1e-999999999",
    "Infinity",
    "NaN",
    "-Inf",
    "9Ei",
    "100000000000000000000Gi",
    "0.000000001m",
    "1.2.3",
    "",
    " ",
    "\x00",
    MARKUP,
    "a" * 300,
    [],
    {},
    [[[[[]]]]],
    {"a": {"b": {"c": None}}},
    "[/bold]",
    "\x1b[31mred\x1b[0m",
    "${HOME}",
    "*anchor",
    "&x",
]
DEEP = 5000
RAW: dict[str, str] = {
    "deep.json": "[" * DEEP + "]" * DEEP,
    "deep.yaml": "[" * DEEP + "]" * DEEP,
    "deep-map.yaml": "".join(f"{' ' * i}k:\n" for i in range(200)) + " " * 200 + "v\n",
    "laughs.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))
    + "nodes: *i\n",
    "cycle.yaml": "nodes: &a [*a]\n",
    "binary.yaml": "\x00\x01\x02\xff\xfe",
    "bom.json": "\ufeff{}",
    "tab.yaml": "nodes:\n\t- name: a\n",
    "big-int.json": '{"nodes": [{"name": "a", "gpu": {"model": "A100-SXM4-80GB", "count": ' + "9" * 5000 + "}}]}",
    "inf.json": '{"nodes": [{"name": "a", "gpu": {"model": "A100-SXM4-80GB", "count": 1, "memory_gib": Infinity}}]}',
    "nan.json": '{"nodes": [{"name": "a", "gpu": {"model": "A100-SXM4-80GB", "count": 1, "memory_gib": NaN}}]}',
    "exp.json": '{"nodes": [{"name": "a", "cpu": 1e999999999, "gpu": {"model": "A100-SXM4-80GB", "count": 1, '
    '"memory_gib": 80}}]}',
    "tags.yaml": "!!python/object/apply:os.system ['true']\n",
    "timestamp.yaml": "nodes: [{name: 2024-99-99}]\n",
    "empty.yaml": "",
    "null.json": "null",
    "list.yaml": "- 1\n- 2\n",
    "huge-count.yaml": "nodes: [{name: a, gpu: {model: A100-SXM4-80GB, count: 1000000000, memory_gib: 80}}]\n",
    "huge-replicas.yaml": "nodes: [{name: a, gpu: {model: L4, count: 1, memory_gib: 24, replicas: 1000000000}}]\n",
}


@dataclass
class Case:
    """A command line, with `{NAME}` standing for files written into the case's folder."""

    args: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    describe: str = ""

    def write(self, folder: Path) -> list[str]:
        for name, content in self.files.items():
            (folder / name).write_bytes(content)
        return [arg.format(**{Path(n).stem: str(folder / n) for n in self.files}) for arg in self.args]


def _paths(data: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data[:20]):
            found += _paths(value, (*path, index))
    return found


def _nest(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def mutate(data: Any, rng: random.Random, rounds: int = 3) -> Any:
    """`rounds` random edits: a value replaced by a hostile one, a key dropped or renamed, a list repeated, deep
    nesting put in. The edits stay small, so most cases still reach the models and the planners."""
    data = copy.deepcopy(data)
    for _ in range(rounds):
        path = rng.choice(_paths(data))
        if not path:
            continue
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        move = rng.randrange(6)
        if move <= 1:
            parent[key] = rng.choice(HOSTILE_VALUES)
        elif move == 2 and isinstance(parent, dict):
            del parent[key]
        elif move == 3 and isinstance(parent, dict):
            parent[rng.choice([MARKUP, "", "unknown_key", str(rng.random())])] = parent.pop(key)
        elif move == 4 and isinstance(parent[key], list) and parent[key]:
            parent[key] = parent[key] * rng.choice([2, 10, 50])
        else:
            parent[key] = _nest(rng.choice([10, 70, 300]))
    return data


EDGES: dict[type, list[Any]] = {
    int: [0, 1, 2, 7, 8, 9, 63, 64, 65, 1023, 1024, 1025, 2**31 - 1, -(2**31), -1, 10**6],
    float: [0.0, 1e-9, 0.5, 1e9, 1e300],
    str: [MARKUP, "0", "1e3", "999Ei", "500m", "a" * 63, "\x1b]0;title\x07"],
}


def nudge(data: Any, rng: random.Random, rounds: int = 2) -> Any:
    """Scalar leaves set to edge values of their own type: the document mostly stays valid, so the planners and
    renderers see the numbers and names, not just the models."""
    data = copy.deepcopy(data)
    leaves = [path for path in _paths(data) if path]
    for _ in range(rounds):
        path = rng.choice(leaves)
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        value = parent[path[-1]]
        if type(value) in EDGES:
            parent[path[-1]] = rng.choice(EDGES[type(value)])
    return data


def _dump(data: Any, suffix: str) -> bytes:
    try:
        text = json.dumps(data) if suffix == ".json" else yaml.safe_dump(data, allow_unicode=True)
    except RecursionError:  # PyYAML's dumper recurses: deep nesting as JSON, which YAML reads too
        text = json.dumps(data)
    return text.encode("utf-8", "surrogatepass")


def _serialise(data: Any, rng: random.Random) -> tuple[str, bytes]:
    suffix = rng.choice([".json", ".yaml"])
    content = _dump(data, suffix)
    if rng.random() < 0.1:  # a truncated file
        content = content[: rng.randrange(max(len(content), 1))]
    return suffix, content


COMMANDS = (
    ["frag"],
    ["advertised"],
    ["place"],
    ["place", "--view", "extended"],
    ["gang"],
    ["map"],
    ["plan", "--time-limit", "2", "--workers", "1"],
    ["preempt"],
    ["defrag", "--time-limit", "2"],
)


def scenario_case(rng: random.Random) -> Case:
    name = rng.choice(scenario_names())
    data = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    changed = nudge(data, rng, rng.randint(1, 3)) if rng.random() < 0.5 else mutate(data, rng, rng.randint(1, 4))
    suffix, content = _serialise(changed, rng)
    command = rng.choice(COMMANDS)
    if command[0] in ("preempt", "defrag"):
        command = (
            ["preempt", rng.choice(["x", MARKUP]), "-f", "{scenario}", *command[1:]]
            if command[0] == "preempt"
            else ["defrag", "{scenario}", *command[1:]]
        )
    else:
        command = [command[0], "{scenario}", *command[1:]]
    return Case(command, {f"scenario{suffix}": content}, f"{name} mutated, {' '.join(command)}")


def dump_case(rng: random.Random) -> Case:
    nodes, pods = json.loads((DUMP / "nodes.json").read_text()), json.loads((DUMP / "pods.json").read_text())
    which = rng.choice(["nodes", "pods", "both"])
    change = nudge if rng.random() < 0.5 else mutate
    if which in ("nodes", "both"):
        nodes = change(nodes, rng, rng.randint(1, 4))
    if which in ("pods", "both"):
        pods = change(pods, rng, rng.randint(1, 4))
    items = pods.get("items") if isinstance(pods, dict) else None
    pod = copy.deepcopy(rng.choice(items)) if isinstance(items, list) and items else pods
    files = {"nodes.json": _dump(nodes, ".json"), "pods.json": _dump(pods, ".json"), "pod.json": _dump(pod, ".json")}
    if rng.random() < 0.5:
        return Case(["import", "--nodes", "{nodes}", "--pods", "{pods}"], files, f"dump ({which}) mutated, import")
    return Case(["k8s", "--nodes", "{nodes}", "--pods", "{pods}", "{pod}"], files, f"dump ({which}) mutated, k8s")


def raw_case(rng: random.Random) -> Case:
    name = rng.choice(sorted(RAW))
    command = rng.choice(
        [
            ["frag", "{%s}"],
            ["place", "monday", "--pods", "{%s}"],
            ["k8s", "--nodes", "{%s}", "{%s}"],
            ["dra", "--objects", "{%s}"],
            ["validate", "monday", "{%s}"],
            ["import", "--nodes", "{%s}"],
        ]
    )
    stem = Path(name).stem
    return Case(
        [arg % stem if "%s" in arg else arg for arg in command],
        {name: RAW[name].encode("utf-8", "surrogateescape")},
        f"raw {name}, {command[0]}",
    )


def random_case(rng: random.Random) -> Case:
    return rng.choice([scenario_case, scenario_case, dump_case, raw_case])(rng)


def check(case: Case, folder: Path) -> tuple[Outcome, list[str]]:
    """Run the case in `folder`; the problems found: a traceback, an unknown exit code, an exit 2 that does not name
    the input, a temporary file or any other new file left behind."""
    args = case.write(folder)
    before = set(folder.iterdir())
    outcome = invoke(*args)
    problems = []
    if outcome.crash:
        problems.append(f"traceback: {outcome.crash}")
    if outcome.code not in (0, 1, 2):
        problems.append(f"exit code {outcome.code}")
    if outcome.code == 2 and not outcome.crash:
        named = any(str(folder / name) in outcome.stderr for name in case.files) or "Usage:" in outcome.stderr
        if not named:
            problems.append(f"exit 2 without naming the input: {outcome.stderr.strip()[:200]}")
    written = [str(path) for path in set(folder.iterdir()) - before] + [str(p) for p in leftovers(folder)]
    if written:
        problems.append(f"files written: {written}")
    return outcome, problems
