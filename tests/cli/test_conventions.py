"""The CLI's kubectl conventions, on every command they apply to (gpusched.cli.common keeps each in one place):
argument order, -o json|yaml|wide|name, stdin, namespaces, help, defaults, and output that pipes cleanly."""

from __future__ import annotations

import json
import re
import typing
from importlib.metadata import version
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from gpusched.cli import app, load
from gpusched.cli.common import DEFAULT_DRIVER, DEFAULT_WORKERS, PANEL_OF, PANELS, Driver
from gpusched.planner.dra.slices import DRIVERS, EXAMPLE

ROOT = Path(__file__).resolve().parents[2]
ROOT_COMMANDS = sorted(typer.main.get_command(load()).commands)  # type: ignore[attr-defined]


def _leaves(command, path=()):
    """Every runnable command, as its path of names."""
    children = getattr(command, "commands", None)
    if not children:
        return [path]
    return [leaf for name, child in sorted(children.items()) for leaf in _leaves(child, (*path, name))]


LEAVES = _leaves(typer.main.get_command(app))


# --- help, version, completion -----------------------------------------------------------------------------------


def test_version(gpusched):
    result = gpusched("--version")
    assert result.exit_code == 0 and result.stdout == f"gpusched {version('gpusched')}\n"


@pytest.mark.parametrize("path", [(), *LEAVES], ids=lambda path: " ".join(path) or "gpusched")
def test_dash_h_is_help_and_no_flag_shows_a_type(gpusched, path):
    result = gpusched(*path, "-h")
    assert result.exit_code == 0 and "Usage:" in result.stdout
    assert "<bool>" not in result.stdout and "<str>" not in result.stdout, result.stdout


def test_shell_completion_is_on(gpusched):
    assert "--show-completion" in gpusched("-h").stdout


def test_every_command_sits_in_a_help_panel_in_order(gpusched):
    missing = set(ROOT_COMMANDS) - set(PANEL_OF)
    assert not missing, f"add {missing} to gpusched.cli.common.PANELS"
    text = CliRunner().invoke(app, ["-h"], env={"COLUMNS": "200"}).stdout
    titles = [title for title in re.findall(r"─ (\w+) ─", text) if title != "Options"]
    assert titles == [title for title in PANELS if set(PANELS[title]) & set(ROOT_COMMANDS)]


def test_choices_are_checked_by_the_parser(gpusched):
    result = gpusched("place", "monday", "--policy", "fastest")
    assert result.exit_code == 2 and result.stdout == ""
    assert "Invalid value for '--policy': 'fastest' is not one of 'binpack', 'spread', 'topology'." in result.stderr


# --- one argument order, one set of defaults ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "train-8", "-f", "monday"],
        ["explain", "train-8", "--cluster", "monday"],
        ["preempt", "train-8", "-f", "preemption"],
        ["preempt", "train-8", "--cluster", "preemption"],
        ["k8s", "examples/kind/gpu-c.json", "--nodes", "examples/kind/nodes.json"],
        ["dra", "--objects", "seed-claims", "-f", "fragmented"],
    ],
)
def test_the_pod_is_the_argument_and_the_cluster_a_flag(gpusched, args, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = gpusched(*args)
    assert result.exit_code in (0, 1), result.stderr


def test_the_old_preempt_order_is_refused_with_the_pod_not_found(gpusched):
    result = gpusched("preempt", "preemption", "train-8")  # CLUSTER POD, as before: two arguments for one
    assert result.exit_code == 2 and "Got unexpected extra argument(s) (train-8)" in result.stderr


def test_one_default_for_workers_and_driver(gpusched):
    assert DEFAULT_WORKERS == 2 and DEFAULT_DRIVER == EXAMPLE and typing.get_args(Driver) == DRIVERS
    for path in (["explain"], ["preempt"], ["defrag"], ["plan"], ["mig", "plan"], ["bench", "mig"]):
        assert _default(path, "workers") == DEFAULT_WORKERS, path
    for path in (["explain"], ["dra"], ["slices"]):
        assert _default(path, "driver") == DEFAULT_DRIVER, path
    assert gpusched("preempt", "train-8", "-f", "preemption", "--json").json()["solve"]["workers"] == DEFAULT_WORKERS


def _default(path: list[str], name: str):
    command = typer.main.get_command(app)
    for part in path:
        command = command.commands[part]  # type: ignore[attr-defined]
    return next(param.default for param in command.params if param.name == name)


# --- -o json|yaml|wide|name ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["scenarios"],
        ["advertised", "monday"],
        ["place", "monday"],
        ["frag", "monday"],
        ["map", "monday"],
        ["gang", "training"],
        ["explain", "train-8", "-f", "monday"],
        ["k8s", "examples/kind/gpu-c.json", "--nodes", "examples/kind/nodes.json"],
        ["slices", "monday"],
    ],
)
def test_o_json_is_json_and_o_yaml_the_same_data(gpusched, args, monkeypatch):
    monkeypatch.chdir(ROOT)
    as_json = gpusched(*args, "--json")
    assert gpusched(*args, "-o", "json").stdout == as_json.stdout
    assert yaml.safe_load(gpusched(*args, "-o", "yaml").stdout) == json.loads(as_json.stdout)
    assert gpusched(*args, "--output", "yaml").stdout == gpusched(*args, "-o", "yaml").stdout


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["scenarios"], "scenario/backlog"),
        (["advertised", "monday"], "node/dgx-a"),
        (["place", "monday"], "pod/notebook-0"),
        (["map", "monday"], "node/dgx-a"),
        (["preempt", "train-8", "-f", "preemption"], "pod/"),
        (["slices", "monday"], "resourceslice/dgx-a-gpu.example.com"),
        (["import", "--nodes", "tests/data/import/nodes.json"], "node/"),
    ],
)
def test_o_name_lists_kind_slash_name(gpusched, args, first, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = gpusched(*args, "-o", "name")
    assert result.exit_code in (0, 1) and result.lines and result.lines[0].startswith(first), result.stdout
    assert all(re.fullmatch(r"[a-z]+/[^/\s]+", line) for line in result.lines), result.stdout


def test_o_name_where_nothing_is_listed_is_refused_before_work(gpusched):
    result = gpusched("frag", "monday", "-o", "name")
    assert result.exit_code == 2 and result.stdout == ""
    assert "`gpusched frag` lists no objects to name: use -o json, yaml or wide" in result.stderr


def test_json_with_another_output_is_refused(gpusched):
    result = gpusched("frag", "monday", "--json", "-o", "yaml")
    assert result.exit_code == 2 and "--json is -o json: give one of --json and -o yaml" in result.stderr


def test_import_o_json_prints_json_and_writes_no_file_named_json(gpusched, tmp_path, monkeypatch):
    """Before: `import --nodes nodes.json -o json` wrote the cluster to a file called `json`."""
    nodes = ROOT / "tests" / "data" / "import" / "nodes.json"
    monkeypatch.chdir(tmp_path)
    result = gpusched("import", "--nodes", nodes, "-o", "json")
    assert result.exit_code in (0, 1) and result.json()["gpus"] > 0 and not (tmp_path / "json").exists()
    written = gpusched("import", "--nodes", nodes, "--output-file", "cluster.yaml")
    assert written.exit_code in (0, 1) and "nodes" in yaml.safe_load((tmp_path / "cluster.yaml").read_text())


def test_wide_never_folds_even_on_a_terminal(monkeypatch, write):
    gpu = {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "islands": [[0, 1, 2, 3]]}
    cluster = str(write("c.json", {"nodes": [{"name": "n" * 150, "gpu": gpu}]}))
    runner = CliRunner()
    monkeypatch.setattr("rich.console.Console.is_terminal", property(lambda self: True))
    folded = runner.invoke(app, ["map", cluster], env={"COLUMNS": "80"}).stdout
    wide = runner.invoke(app, ["map", cluster, "-o", "wide"], env={"COLUMNS": "80"}).stdout
    assert not any(line.startswith("n" * 150 + " ") for line in folded.splitlines()), folded  # the table folds
    assert any(line.startswith("n" * 150 + " ") for line in wide.splitlines()), wide


# --- pipes: no folding, no trailing spaces ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [["scenarios"], ["map", "tests/data/import"], ["plan", "backlog"], ["frag", "fragmented"]]
)
def test_piped_output_is_never_folded_and_has_no_trailing_spaces(gpusched, args, monkeypatch):
    """Before: `gpusched map x.yaml | cat` and `gpusched scenarios | awk` folded at 80 columns and every table row
    ended in spaces."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "40")
    lines = gpusched(*args).lines
    assert lines and not [line for line in lines if line != line.rstrip()]
    rows = [line for line in lines if line.split() and line.split()[0] in {"backlog", "monday", "weekend"}]
    assert all(len(row.split()) > 3 for row in rows)  # a scenario's whole row on one line
    if args[0] == "scenarios":
        assert any(len(line) > 80 for line in lines)


# --- stdin -------------------------------------------------------------------------------------------------------


def _runner_input(args: list[str], text: str):
    return CliRunner().invoke(app, args, input=text, catch_exceptions=False)


@pytest.mark.parametrize(
    "args",
    [
        ["frag", "-"],
        ["map", "-"],
        ["advertised", "-"],
        ["place", "-"],
        ["explain", "train-8", "-f", "-"],
        ["plan", "-"],
    ],
)
def test_dash_reads_stdin(args):
    scenario = (ROOT / "gpusched" / "scenarios" / "data" / "monday.yaml").read_text()
    result = _runner_input(args, scenario)
    assert result.exit_code in (0, 1), result.stderr
    assert result.stdout


def test_kubectl_get_nodes_piped_into_import():
    """Before: `kubectl get nodes -o json | gpusched import --nodes -` said `-: no such file`."""
    nodes = (ROOT / "tests" / "data" / "import" / "nodes.json").read_text()
    result = _runner_input(["import", "--nodes", "-", "-o", "json"], nodes)
    assert result.exit_code in (0, 1) and json.loads(result.stdout)["gpus"] > 0, result.stderr


def test_bad_stdin_names_it(gpusched):
    result = _runner_input(["frag", "-"], "nodes: [1, 2")
    assert result.exit_code == 2 and result.stderr.startswith("error: -: malformed YAML")


# --- namespaces, kubectl command lines ------------------------------------------------------------------------------

DUMP = "tests/data/import"


def test_n_completes_a_pods_name(gpusched, monkeypatch):
    monkeypatch.chdir(ROOT)
    named = gpusched("explain", "llm-pretrain-1", "-f", DUMP, "-n", "ml")
    assert named.exit_code == 1 and named.lines[0].startswith("ml/llm-pretrain-1 is Pending"), named.stderr
    whole = gpusched("explain", "ml/llm-pretrain-1", "-f", DUMP)
    assert whole.lines[0] == named.lines[0]
    wrong = gpusched("explain", "llm-pretrain-1", "-f", DUMP, "-n", "serve")
    assert wrong.exit_code == 2 and "no pod or job named 'serve/llm-pretrain-1'" in wrong.stderr


def test_n_and_a_on_the_commands_that_read_many_pods(gpusched, monkeypatch):
    monkeypatch.chdir(ROOT)
    every = gpusched("plan", DUMP, "--json").json()
    one = gpusched("plan", DUMP, "-n", "serve", "--json").json()
    all_ns = gpusched("plan", DUMP, "-A", "--json").json()
    assert {a["pod"] for a in all_ns["assignments"]} == {a["pod"] for a in every["assignments"]}
    assert one["assignments"] and all(a["pod"].startswith("serve/") for a in one["assignments"])
    assert not any(a["pod"].startswith("serve/") for a in every["assignments"]) or len(one["assignments"]) < len(
        every["assignments"]
    )
    both = gpusched("plan", DUMP, "-n", "ml", "-A")
    assert both.exit_code == 2 and "-n/--namespace and -A/--all-namespaces: give one" in both.stderr
    placed = gpusched("place", DUMP, "-n", "ml", "-o", "name")
    assert placed.lines and all(line.startswith("pod/") for line in placed.lines)


def test_printed_kubectl_lines_are_valid_kubectl(gpusched, write):
    """Before: `kubectl delete pod lab/physics-sim`, which kubectl reads as a pod named `lab/physics-sim`."""
    nodes = [
        {
            "name": f"n{i}",
            "gpu": {"model": "A100-SXM4-80GB", "count": 2, "memory_gib": 80, "busy": [{"gpu": 0, "pod": f"lab/p{i}"}]},
        }
        for i in range(2)
    ]
    cluster = write("c.json", {"nodes": nodes})
    result = gpusched("defrag", cluster, "--for", "2")
    assert result.exit_code == 0, result.stderr
    deletes = [line for line in result.lines if line.startswith("kubectl delete pod")]
    assert deletes and all(re.match(r"kubectl delete pod p\d -n lab ", line) for line in deletes), deletes
    assert not any("lab/" in line for line in result.lines if line.startswith("kubectl "))


# --- schema --output COMMAND -------------------------------------------------------------------------------------


def test_every_command_that_prints_json_publishes_its_shape(gpusched):
    from gpusched.cli.common import command_named, command_paths

    printing = [path for path in command_paths() if getattr(command_named(path), "__gpusched_output__", False)]
    assert len(printing) > 25
    for path in printing:
        result = gpusched("schema", "--output", path)
        assert result.exit_code == 0 and ("type" in result.json() or "anyOf" in result.json()), path


@pytest.mark.parametrize(
    "args",
    [
        ["scenarios"],
        ["advertised", "monday"],
        ["place", "monday"],
        ["frag", "monday"],
        ["map", "monday"],
        ["gang", "training"],
        ["allreduce", "monday", "dgx-a:0-7"],
        ["explain", "train-8", "-f", "monday"],
        ["preempt", "train-8", "-f", "preemption"],
        ["defrag", "fragmented", "--for", "8"],
        ["plan", "backlog"],
        ["mig", "plan", "fragmented", "--demand", "3g.40gb=2"],
        ["slices", "monday"],
        ["dra", "--objects", "seed-claims", "-f", "fragmented"],
        ["k8s", "examples/kind/gpu-c.json", "--nodes", "examples/kind/nodes.json"],
        ["import", "--nodes", "tests/data/import/nodes.json"],
        ["scale", "up", "crowded", "examples/scale/backlog.yaml", "--offers", "examples/scale/offers.yaml"],
        ["scale", "down", "examples/scale/pool.yaml", "--offers", "examples/scale/offers.yaml"],
    ],
)
def test_what_a_command_prints_is_its_published_shape(gpusched, args, monkeypatch):
    from pydantic import TypeAdapter

    from gpusched.cli.common import command_named

    monkeypatch.chdir(ROOT)
    path = " ".join(args[:2]) if args[0] in ("mig", "scale") else args[0]
    printed = gpusched(*args, "-o", "json").stdout
    TypeAdapter(command_named(path).__gpusched_shape__).validate_json(printed)  # type: ignore[union-attr]


def test_schema_needs_one_of_kind_and_output(gpusched):
    assert gpusched("schema").exit_code == 2
    wrong = gpusched("schema", "--output", "nope")
    assert wrong.exit_code == 2 and "is no command that prints JSON; one of: " in wrong.stderr
    assert "mig plan" in wrong.stderr and "bench openb" in wrong.stderr
