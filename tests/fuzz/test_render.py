"""Names from input files never reach the terminal as rich markup or control sequences, in any command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .harness import invoke

HOSTILE = "x[/bold][red]\x1b[2J:smile:"


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    """A scenario whose node, pod and job names hold markup, an emoji code and a clear-screen escape."""
    node = {
        "name": f"node-{HOSTILE}",
        "cpu": 8,
        "memory": "64Gi",
        "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "islands": [[0, 1, 2, 3, 4, 5, 6, 7]]},
    }
    doc = {
        "cluster": {"nodes": [node]},
        "pods": [{"name": f"pod-{HOSTILE}", "gpus": 2}, {"name": f"big-{HOSTILE}", "gpus": 16}],
        "jobs": [{"name": f"job-{HOSTILE}", "pods": 2, "gpus_per_pod": 8, "duration": 10}],
    }
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "command", [["place"], ["frag"], ["advertised"], ["gang"], ["plan"], ["map"], ["place", "--view", "extended"]]
)
def test_names_print_literally(scenario: Path, command: list[str]) -> None:
    outcome = invoke(command[0], scenario, *command[1:])
    assert not outcome.crash, outcome
    assert outcome.code in (0, 1), outcome
    shown = outcome.stdout + outcome.stderr
    assert "\x1b" not in shown and "\\x1b[2J" in shown, shown
    assert "x[/bold][red]" in shown, shown  # tables may cut the rest of the name at the terminal width


def test_an_error_message_prints_literally(tmp_path: Path) -> None:
    path = tmp_path / "bad[red]\x1b[2J.yaml"
    path.write_text("nodes: [{name: a, gpu: {model: x, count: 1e999}}]")
    outcome = invoke("frag", path)
    assert not outcome.crash and outcome.code == 2, outcome
    assert "\x1b" not in outcome.stderr and "bad[red]\\x1b[2J.yaml" in outcome.stderr, outcome.stderr


@pytest.mark.parametrize(
    "args",
    [
        [HOSTILE],
        ["place", f"--{HOSTILE}"],
        ["plan", "monday", "--time-limit", HOSTILE],
        ["place", "monday", "--view", HOSTILE],
        ["place", "monday", HOSTILE],
    ],
    ids=["command", "option", "number", "choice", "extra-argument"],
)
def test_usage_errors_print_input_literally(args: list[str]) -> None:
    """Click's usage panel (unknown command, option or value) repeats what was typed: escaped too."""
    outcome = invoke(*args)
    assert not outcome.crash and outcome.code == 2, outcome
    assert "\x1b" not in outcome.stdout + outcome.stderr, outcome
    assert "[/bold]" in outcome.stderr or "\\x1b" in outcome.stderr, outcome
