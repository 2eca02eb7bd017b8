"""Progress bars: drawn on a terminal's stderr, absent from pipes, and fed by conformance scenario by scenario."""

from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from gpusched.cli import conformance as conformance_cli
from gpusched.cli.progress import progress_bar
from gpusched.conformance import differential
from gpusched.conformance.build import Binaries


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    stream = io.StringIO()
    return Console(file=stream, force_terminal=terminal, width=100), stream


def test_the_bar_counts_on_a_terminal():
    console, stream = _console(terminal=True)
    with progress_bar("scenarios", 3, console) as progress:
        progress(1, 3)
        progress(3, 3)
    assert "scenarios" in stream.getvalue() and "3/3" in stream.getvalue()


def test_no_bar_when_stderr_is_not_a_terminal():
    console, stream = _console(terminal=False)
    with progress_bar("scenarios", 3, console) as progress:
        progress(3, 3)
    assert stream.getvalue() == ""


def test_conformance_reports_every_scenario_to_its_bar(gpusched, monkeypatch, tmp_path):
    """The real cluster is replaced; what is checked is that the command feeds the bar and keeps stdout clean."""
    bars: list[tuple[str, int | None, list[tuple[int, int]]]] = []

    @contextmanager
    def recording_bar(label, total=None):
        updates: list[tuple[int, int]] = []
        bars.append((label, total, updates))
        yield lambda done, of: updates.append((done, of))

    @contextmanager
    def fake_start(binaries, **options):
        yield type("Cluster", (), {"kubeconfig": tmp_path / "kubeconfig"})()

    def fake_run(rest, version, seed, count, progress=None):
        for index in range(count):
            progress(index, [])
        return differential.ConformanceReport(
            version=version, seed=seed, scenarios=count, pods=0, agreed=0, seconds=0.0, disagreements=[]
        )

    binaries = Binaries(pin="v1.37.2", key="test", bin_dir=Path(tmp_path), built=False, seconds=0.0)
    monkeypatch.setattr(conformance_cli, "progress_bar", recording_bar)
    monkeypatch.setattr(conformance_cli, "ensure_built", lambda source, version: binaries)
    monkeypatch.setattr(conformance_cli, "start", fake_start)
    monkeypatch.setattr(conformance_cli, "Rest", lambda kubeconfig: type("Rest", (), {"close": lambda self: None})())
    monkeypatch.setattr(differential, "run", fake_run)

    result = gpusched("conformance", "--scenarios", "4", "--seed", "7")
    assert result.exit_code == 0
    assert result.lines == [
        "conformance against kube-scheduler v1.37.2, seed 7: 4 scenarios, 0 pods, 0 agree (100%) in 0 s"
    ]
    assert [label for label, _, _ in bars] == ["control plane binaries (a cold build takes minutes)", "scenarios"]
    assert bars[1][1:] == (4, [(1, 4), (2, 4), (3, 4), (4, 4)])
