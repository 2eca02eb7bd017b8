"""Hostile documents: mutations of the built-in scenarios and the kubectl dumps, and raw files no parser should fear.

Pure functions of a random.Random, so that hypothesis (through st.randoms) and tests/fuzz/run.py (N fresh cases)
draw the same kinds of case. A case is a command line and the files it reads; `check` runs one and judges it.
"""

from __future__ import annotations

import copy
import json
import os
import random
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
    "output_case",
    "kubeconfig_case",
    "live_case",
    "limit_case",
    "cel_case",
    "leftover_case",
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
    """A command line, with `{NAME}` standing for files written into the case's folder (`{out}`: a path in it
    that does not exist); `fifos` are made there too, `env` is set while it runs, `answers` are what the local
    API server (live_server) answers per path."""

    args: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    describe: str = ""
    fifos: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    answers: dict[str, bytes] | None = None

    def write(self, folder: Path) -> list[str]:
        for name, content in self.files.items():
            (folder / name).write_bytes(content.replace(b"{folder}", str(folder).encode()))
        for name in self.fifos:
            os.mkfifo(folder / name)
        names = {Path(n).stem: str(folder / n) for n in (*self.files, *self.fifos)}
        names.setdefault("out", str(folder / "out"))
        names["folder"] = str(folder)
        return [arg.format(**names) for arg in self.args]


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
    ["defrag", "--for", "8", "--time-limit", "2"],
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


# --- round two's classes: outputs, kubeconfigs, live answers, limit variables, CEL, scenario loops, MIG demand ---

OUTPUT_COMMANDS = (
    ["place", "monday", "--emit-scheduler-config", "{T}"],
    ["gang", "monday", "--jobs", "training", "--emit-kueue", "{T}"],
    ["explain", "train-8", "--cluster", "monday", "--emit-claim", "{T}"],
    ["mig", "plan", "fragmented", "--demand", "3g.40gb=2", "--emit-mig-parted", "{T}"],
    ["import", "--nodes", str(DUMP / "nodes.json"), "--output-file", "{T}"],
    ["import", "--nodes", str(DUMP / "nodes.json"), "--pods", str(DUMP / "pods.json"), "--output-file", "{out}",
     "--emit-pods", "{T}"],
    ["frag", "monday", "--output-file", "{T}"],
)  # fmt: skip
OUTPUT_TARGETS = ("fifo", "", " ", "/dev/full", "{folder}", "{folder}/missing/x.yaml", "{folder}/" + "a" * 300)


def output_case(rng: random.Random) -> Case:
    """An output option pointed at what cannot take it (a FIFO blocked for ever before round two)."""
    command = list(rng.choice(OUTPUT_COMMANDS))
    target = rng.choice(OUTPUT_TARGETS)
    if command[0] == "frag" and target == "fifo":
        target = "fifo.png"
    fifos = [target] if target.startswith("fifo") else []
    placeholder = "{" + Path(target).stem + "}" if fifos else target
    args = [placeholder if arg == "{T}" else arg for arg in command]
    return Case(args, {}, f"output {target[:20]!r}, {' '.join(command[:2])}", fifos=fifos)


KUBECONFIG_EDITS: list[tuple[str, Any]] = [
    ("contexts", 5), ("contexts", "x"), ("contexts", [{"name": 5, "context": {"cluster": "c"}}]),
    ("contexts", [{"name": None}]), ("clusters", [{"name": "c", "cluster": "text"}]), ("users", {"u": 1}),
    ("current-context", ["x"]), ("current-context", "missing"), ("kind", "Pod"),
    ("clusters", [{"name": "c", "cluster": {"server": "http://127.0.0.1:9", "proxy-url": "socks5://127.0.0.1:1"}}]),
    ("clusters", [{"name": "c", "cluster": {"server": "http://127.0.0.1:9", "proxy-url": "gopher://x"}}]),
    ("users", [{"name": "u", "user": {"exec": {"command": "sh", "args": ["-c", "sleep 1000 & echo {}"]}}}]),
    ("users", [{"name": "u", "user": {"exec": {"command": "sh", "args": ["-c", "yes"]}}}]),
    ("users", [{"name": "u", "user": {"exec": {"command": "/nonexistent/plugin"}}}]),
    ("users", [{"name": "u", "user": {"exec": {"command": 7}}}]),
    ("users", [{"name": "u", "user": {"client-certificate": "missing.pem", "client-key": "missing.key"}}]),
]  # fmt: skip


def _kubeconfig(server: str = "http://127.0.0.1:9") -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
    }  # fmt: skip


def kubeconfig_case(rng: random.Random) -> Case:
    """A kubeconfig entry of the wrong type or a hostile plugin or proxy, alone or in a $KUBECONFIG list."""
    config = _kubeconfig()
    key, value = rng.choice(KUBECONFIG_EDITS)
    config[key] = copy.deepcopy(value)
    command = rng.choice([["import", "--kubeconfig", "{kc}"], ["frag", "--kubeconfig", "{kc}"],
                          ["k8s", "--kubeconfig", "{kc}", "p"], ["import", "--kubeconfig", "{ok}:{kc}"]])  # fmt: skip
    files = {"kc.yaml": _dump(config, ".yaml"), "ok.yaml": _dump(_kubeconfig(), ".yaml")}
    return Case(command, files, f"kubeconfig {key}={str(value)[:30]}, {command[0]}", env={"GPUSCHED_EXEC_TIMEOUT": "3"})


_live: dict[str, Any] = {}


def live_server() -> str:
    """One local API server (127.0.0.1 only) for every live case: it answers what the running case says."""
    if "url" not in _live:

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                answers = _live.get("answers") or {}
                body = answers.get(self.path.split("?")[0])
                self.send_response(404 if body is None else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        _live["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    return str(_live["url"])


def live_case(rng: random.Random) -> Case:
    """A live server's answers, mutated: counts of GPUs and MIG instances, the wrong kinds, not JSON."""
    nodes, pods = json.loads((DUMP / "nodes.json").read_text()), json.loads((DUMP / "pods.json").read_text())
    nodes["kind"], pods["kind"] = "NodeList", "PodList"
    move = rng.randrange(5)
    if move == 0:
        item = rng.choice(nodes["items"])
        resource = rng.choice(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"])
        item.setdefault("status", {}).setdefault("allocatable", {})[resource] = rng.choice(
            ["1000000000", "65", "449", "9223372036854775807", "1e3", "-1"]
        )
    elif move == 1:
        nodes = mutate(nodes, rng, rng.randint(1, 3))
    elif move == 2:
        nodes = pods if rng.random() < 0.5 else {"kind": "Node", "metadata": {"name": "n"}}
    answers = {"/api/v1/nodes": _dump(nodes, ".json"), "/api/v1/pods": _dump(pods, ".json")}
    if move == 3:
        answers[rng.choice(list(answers))] = rng.choice([b"<html>", b"", b"null", b"[1]", b"{" * 100])
    if move == 4:
        answers["/api/v1/nodes"] = _dump({"kind": "NodeList", "items": [{"metadata": {"name": f"n{i}"}}
                                                                       for i in range(100_001)]}, ".json")  # fmt: skip
    command = rng.choice([["import", "--kubeconfig", "{kc}"], ["frag", "--kubeconfig", "{kc}"]])
    files = {"kc.yaml": _dump(_kubeconfig(live_server()), ".yaml")}
    return Case(command, files, f"live answer (edit {move}), {command[0]}", answers=answers)


LIMIT_VARIABLES = ("GPUSCHED_READ_TIMEOUT", "GPUSCHED_API_TIMEOUT", "GPUSCHED_EXEC_TIMEOUT",
                   "GPUSCHED_MAX_INPUT_BYTES", "GPUSCHED_DRA_MAX_STEPS", "GPUSCHED_DRA_COMMAND_STEPS")  # fmt: skip
LIMIT_VALUES = ("inf", "-inf", "1e308", "-1", "0", "nan", "abc", "1e3", "99999999999999999999999", " ", "0x10")


def limit_case(rng: random.Random) -> Case:
    """A limit variable that is no number in range, on a command that reads it."""
    variable = rng.choice(LIMIT_VARIABLES)
    command = {
        "GPUSCHED_READ_TIMEOUT": ["frag", "{fifo}"], "GPUSCHED_MAX_INPUT_BYTES": ["frag", "{c}"],
        "GPUSCHED_API_TIMEOUT": ["import", "--kubeconfig", "{kc}"],
        "GPUSCHED_EXEC_TIMEOUT": ["import", "--kubeconfig", "{kc}"],
        "GPUSCHED_DRA_MAX_STEPS": ["dra", "--cluster", "monday", "--objects", "seed-claims"],
        "GPUSCHED_DRA_COMMAND_STEPS": ["dra", "--cluster", "monday", "--objects", "seed-claims"],
    }[variable]  # fmt: skip
    config = _kubeconfig()
    config["users"] = [{"name": "u", "user": {"exec": {"command": "true"}}}]
    files = {"kc.yaml": _dump(config, ".yaml"), "c.yaml": (SCENARIOS / "monday.yaml").read_bytes()}
    fifos = ["fifo.yaml"] if "{fifo}" in command else []
    value = rng.choice(LIMIT_VALUES)
    return Case(command, files, f"{variable}={value!r}, {command[0]}", fifos=fifos, env={variable: value})


def _range(n: int) -> str:
    return rng_list(n) if n <= 200 else f"lists.range({n})"


def rng_list(n: int) -> str:
    return "[" + ",".join(str(i) for i in range(n)) + "]"


CEL_SELECTORS = (
    "{A}.all(a, {B}.all(b, a + b >= 0))", "{A}.exists(a, {B}.exists(b, {C}.all(c, a + b + c < 0)))",
    "{A}.map(a, {B}.filter(b, b > a)).size() >= 0", "lists.range({N}).all(x, x >= 0)",
    "'aa'" + ".replace('a', 'aa')" * 22 + ".size() > 0", "device.attributes[\"gpu.example.com\"].all(k, {A}.all(a, k != ''))",
)  # fmt: skip


def cel_case(rng: random.Random) -> Case:
    """A claim whose selector the cost estimate or the library's iteration budget must stop, or let through."""
    documents = list(yaml.safe_load_all((ROOT / "gpusched" / "scenarios" / "dra" / "seed-claims.yaml").read_text()))
    claims = [doc for doc in documents if doc.get("kind") == "ResourceClaim"]
    claim = rng.choice(claims)
    sizes = {key: _range(rng.choice([1, 10, 99, 100, 101, 1000])) for key in "ABC"}
    expression = rng.choice(CEL_SELECTORS).replace("\\", "\\")
    for key, text in sizes.items():
        expression = expression.replace("{" + key + "}", text)
    expression = expression.replace("{N}", str(rng.choice([9999, 10000, 10**6, 2**63])))
    request = claim["spec"]["devices"]["requests"][0]
    exactly = request.get("exactly", request)
    exactly["selectors"] = [{"cel": {"expression": expression}}]
    content = yaml.safe_dump_all(documents).encode()
    return Case(["dra", "--cluster", "monday", "--objects", "{objects}"], {"objects.yaml": content},
                f"CEL {expression[:50]}")  # fmt: skip


def leftover_case(rng: random.Random) -> Case:
    """Round one's leftovers: a scenario naming itself, memory past an int64, a MIG demand past the limit."""
    move = rng.randrange(3)
    if move == 0:
        other = rng.choice(["{folder}/self.yaml", "{folder}/./self.yaml", "{folder}/other.yaml"])
        files = {"self.yaml": f"cluster: {other}\n".encode(), "other.yaml": b"cluster: {folder}/self.yaml\n"}
        return Case([rng.choice(["frag", "slices", "place"]), "{self}"], files, f"scenario loop via {other[9:]}")
    if move == 1:
        memory = rng.choice(["1e308", "1e20", "8589934592", "inf", "-1", "1e-300"])
        text = f"nodes:\n- name: n\n  gpu: {{model: A100-SXM4-80GB, count: 1, memory_gib: {memory}}}\n"
        command = rng.choice(["slices", "frag", "place", "map"])
        return Case([command, "{c}"], {"c.yaml": text.encode()}, f"memory_gib {memory}, {command}")
    count = rng.choice([str(2**63), str(2**64), "1000001", "-5", "0", "1e9", "9" * 50])
    return Case(["mig", "plan", "fragmented", "--demand", f"3g.40gb={count}"], {}, f"mig demand {count[:20]}")


def random_case(rng: random.Random) -> Case:
    return rng.choice(
        [scenario_case, scenario_case, dump_case, raw_case, output_case, kubeconfig_case, live_case, limit_case,
         cel_case, leftover_case]
    )(rng)  # fmt: skip


def check(case: Case, folder: Path) -> tuple[Outcome, list[str]]:
    """Run the case in `folder`; the problems found: a traceback, an unknown exit code (3 is an internal error), an
    exit 2 that does not name the input, a temporary file or any other new file left behind."""
    args = case.write(folder)
    before = set(folder.iterdir())
    saved = {name: os.environ.get(name) for name in case.env}
    os.environ.update(case.env)
    _live["answers"] = case.answers
    try:
        outcome = invoke(*args)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    problems = []
    if outcome.crash:
        problems.append(f"traceback: {outcome.crash}")
    if outcome.code not in (0, 1, 2):
        problems.append(f"exit code {outcome.code}: {outcome.stderr.strip()[:200]}")
    if outcome.code == 2 and not outcome.crash:
        named = (
            any(str(folder / name) in outcome.stderr for name in (*case.files, *case.fifos))
            or any(f"${name}" in outcome.stderr for name in case.env)
            or "Usage:" in outcome.stderr
            or ("--kubeconfig" in case.args and "http://127.0.0.1:" in outcome.stderr)  # the server it names
            or any(flag in outcome.stderr for flag in case.args if flag.startswith("--"))
        )
        if not named:
            problems.append(f"exit 2 without naming the input: {outcome.stderr.strip()[:200]}")
    written = [str(path) for path in set(folder.iterdir()) - before] + [str(p) for p in leftovers(folder)]
    if outcome.code != 0 and written:
        problems.append(f"files written on failure: {written}")
    elif written and not any(arg.startswith(str(folder)) for arg in args):
        problems.append(f"files written: {written}")
    return outcome, problems
