"""Hostile input files through the whole CLI: mutated scenarios and kubectl dumps, and a corpus of raw files.

Every case must end with exit 0, 1 or 2, no traceback, an exit 2 naming the file, and nothing written.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import PROFILE
from .harness import invoke
from .mutate import CORPUS, RAW, check, dump_case, raw_case, scenario_case

pytestmark = pytest.mark.fuzz


def _judge(make, rng: random.Random) -> None:
    case = make(rng)
    with tempfile.TemporaryDirectory() as folder:
        outcome, problems = check(case, Path(folder))
    assert not problems, (case.describe, problems, outcome)


@settings(PROFILE)
@given(st.randoms(use_true_random=False))
def test_mutated_scenarios(rng: random.Random) -> None:
    _judge(scenario_case, rng)


@settings(PROFILE)
@given(st.randoms(use_true_random=False))
def test_mutated_kubectl_dumps(rng: random.Random) -> None:
    _judge(dump_case, rng)


@settings(PROFILE)
@given(st.randoms(use_true_random=False))
def test_raw_hostile_files(rng: random.Random) -> None:
    _judge(raw_case, rng)


def test_the_corpus_is_current() -> None:
    """tests/fuzz/corpus holds the raw files, for people and other tools to replay."""
    assert sorted(path.name for path in CORPUS.iterdir()) == sorted(RAW)
    for name, text in RAW.items():
        assert (CORPUS / name).read_bytes() == text.encode("utf-8", "surrogateescape"), name


@pytest.mark.parametrize("name", sorted(RAW))
@pytest.mark.parametrize("command", ["frag", "place"])
def test_each_corpus_file_exits_2_naming_it(name: str, command: str) -> None:
    path = CORPUS / name
    outcome = invoke(*(["frag", path] if command == "frag" else ["place", "monday", "--pods", path]))
    assert not outcome.crash and outcome.code == 2 and str(path) in outcome.stderr, outcome
    assert len(outcome.stderr.strip().splitlines()) <= 3, outcome.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100 + "]" * 100, "nested deeper than 64 levels"),
        (RAW["laughs.yaml"], "aliases expand to more than"),
    ],
)
def test_limits_name_themselves(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    outcome = invoke("frag", path)
    assert outcome.code == 2 and expected in outcome.stderr, outcome


def test_an_endless_stream_stops_at_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCHED_MAX_INPUT_BYTES", "100000")
    outcome = invoke("frag", "/dev/zero")
    assert outcome.code == 2 and "larger than the input limit of 100000 bytes" in outcome.stderr, outcome


def test_a_fifo_without_a_writer_is_empty_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    outcome = invoke("frag", fifo)
    assert outcome.code == 2 and "empty" in outcome.stderr, outcome


def test_a_fifo_whose_writer_sends_nothing_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCHED_READ_TIMEOUT", "0.5")
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # holds the FIFO open for writing and never writes
    try:
        outcome = invoke("frag", fifo)
    finally:
        os.close(writer)
    assert outcome.code == 2 and "GPUSCHED_READ_TIMEOUT" in outcome.stderr and str(fifo) in outcome.stderr, outcome


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--workers", str(2**40)),
        ("--seed", str(2**63)),
        ("--seed", "-1"),
        ("--time-limit", "nan"),
        ("--time-limit", "inf"),
        ("--workers", "257"),
    ],
)
def test_solver_options_out_of_range_are_usage_errors(option: str, value: str) -> None:
    outcome = invoke("plan", "monday", option, value)
    assert not outcome.crash and outcome.code == 2 and option in outcome.stderr, outcome


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "plan", "--nodes", "1000000000"],
        ["bench", "place", "--pods", "1000000000"],
        ["bench", "synthetic", "--busy", "nan"],
        ["place", "monday", "--gradient-gb", "inf"],
    ],
)
def test_generator_sizes_out_of_range_are_usage_errors(args: list[str]) -> None:
    outcome = invoke(*args)
    assert not outcome.crash and outcome.code == 2 and args[-2] in outcome.stderr, outcome


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            "nodes: [{name: a, gpu: {model: A100-SXM4-80GB, count: 1000000000, memory_gib: 80}}]",
            "must be no more than 64",
        ),
        (
            "nodes: [{name: a, gpu: {model: L4, count: 1, memory_gib: 24, replicas: 1000000000}}]",
            "must be no more than 1024",
        ),
        ("nodes: [{name: a, cpu: 1e999999999}]", "must be no more than"),
        ("nodes: [{name: a, memory: 100000000000000000000Gi}]", "must be no more than"),
        ("nodes: [{name: a, cpu: Infinity}]", "quantities must match the regular expression"),
        ("nodes: [{name: a, gpu: {model: A100-SXM4-80GB, count: 1, memory_gib: .nan}}]", "finite number"),
        ("nodes: [{name: a, gpu: {model: A100-SXM4-80GB, count: 1, memory_gib: .inf}}]", "finite number"),
    ],
)
def test_huge_and_special_numbers(tmp_path: Path, document: str, expected: str) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(document + "\n")
    outcome = invoke("frag", path)
    assert not outcome.crash and outcome.code == 2 and expected in outcome.stderr and str(path) in outcome.stderr, (
        outcome
    )


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ("pods: [{name: p, gpus: 1, priority: 3000000000}]", "less than or equal to 2147483647"),
        ("pods: [{name: p, gpus: 1000000000}]", "must be no more than 65536"),
        ("pods: [{name: p, gpus: 1, memory: 9Ei}]", "must be no more than"),
    ],
)
def test_huge_pod_numbers(tmp_path: Path, pods: str, expected: str) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(pods + "\n")
    outcome = invoke("place", "monday", "--pods", path)
    assert not outcome.crash and outcome.code == 2 and expected in outcome.stderr, outcome


def test_the_node_limit_is_settable(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n" + "".join(f"  - {{name: n{i}}}\n" for i in range(3)))
    script = (
        f"import sys; sys.path.insert(0, {str(Path.cwd())!r}); from tests.fuzz.harness import invoke; "
        f"o = invoke('frag', {str(path)!r}); print(o.code, o.stderr)"
    )
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "GPUSCHED_MAX_NODES": "2"},
        check=False,
    )
    assert found.stdout.startswith("2 ") and "GPUSCHED_MAX_NODES" in found.stdout, found
