"""The README shows real output: every console block is run and compared, and CI runs the README's test command."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from gpusched.scenarios.openb import NODE_FILE, openb_dir

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```console\n(.*?)```", README, re.S)


def _examples() -> list[tuple[str, list[str]]]:
    examples = []
    for block in BLOCKS:
        command, *output = block.rstrip("\n").split("\n")
        assert command.startswith("$ gpusched "), command
        examples.append((command[2:], output))
    return examples


def _steady(line: str) -> str:
    """Solve times differ from run to run (the solver line, plan's time line); everything else must match exactly."""
    line = re.sub(r"in \d+\.\d+ s \(time limit", "in <t> s (time limit", line.rstrip())
    return re.sub(r"\d+\.\d+(?= s of |,|\))", "<t>", line) if line.startswith("time: ") else line


NEEDS_OPENB = ("gpusched bench openb", "gpusched bench replay")  # they read the trace, kept outside the repository


@pytest.mark.parametrize(("command", "expected"), _examples(), ids=[c for c, _ in _examples()])
def test_readme_output_is_real(gpusched, monkeypatch, command, expected):
    if command.startswith(NEEDS_OPENB) and not (openb_dir() / NODE_FILE).exists():
        pytest.skip(f"needs the openb trace, not at {openb_dir()} (set $GPUSCHED_OPENB, or `bench openb --download`)")
    monkeypatch.chdir(ROOT)  # the examples name files relative to the repository
    result = gpusched(*shlex.split(command)[1:])
    assert [_steady(line) for line in result.lines] == [_steady(line) for line in expected]


def test_readme_opens_with_the_two_setup_commands_and_ci_runs_the_second():
    first_block = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(first_block) == 2
    assert "gpusched place monday" in first_block[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert first_block[1] in ci


def test_the_readme_test_command_is_the_fast_suite_and_ci_adds_conformance():
    """`pytest -q` leaves the conformance suite out by the marker default in pyproject; `.ci/run` runs the
    README's command, then `pytest -m conformance`; the README says both right under the commands."""
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["addopts"] == "-m 'not conformance'"
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()[1]
    assert ci.index(test_command) < ci.index("python3 -m pytest -q -m conformance")
    said = README.split("```", 3)[2].strip().split("\n\n")[0]
    assert len(said.splitlines()) == 2 and "fast suite" in said and "-m conformance" in said and ".ci/run" in said
