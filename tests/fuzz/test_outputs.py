"""Every output option pointed at a path that cannot take it: exit 2 naming the path, nothing written or left."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .harness import invoke, leftovers

pytestmark = pytest.mark.fuzz
DUMP = Path(__file__).resolve().parents[1] / "data" / "import"
OUTPUTS = {
    "place --emit-scheduler-config": (["place", "monday", "--emit-scheduler-config", "{T}"], "out.yaml"),
    "gang --emit-kueue": (["gang", "monday", "--jobs", "training", "--emit-kueue", "{T}"], "out.yaml"),
    "frag --output-file": (["frag", "monday", "--output-file", "{T}"], "out.png"),
    "map --output-file": (["map", "monday", "--output-file", "{T}"], "out.png"),
    "explain --emit-claim": (["explain", "train-8", "--cluster", "monday", "--emit-claim", "{T}"], "out.yaml"),
    "import --output-file": (
        ["import", "--nodes", str(DUMP / "nodes.json"), "--pods", str(DUMP / "pods.json"), "--output-file", "{T}"],
        "out.yaml",
    ),
    "import --emit-pods": (
        ["import", "--nodes", str(DUMP / "nodes.json"), "--pods", str(DUMP / "pods.json"), "--emit-pods", "{T}"],
        "out.yaml",
    ),
    "mig plan --emit": (
        ["mig", "plan", "fragmented", "--demand", "3g.40gb=2", "--emit-mig-parted", "{T}"],
        "out.yaml",
    ),
    "bench synthetic --out": (
        ["bench", "synthetic", "--nodes", "10", "--time-limit", "2", "--workers", "1", "--output-dir", "{T}"],
        "results",
    ),
}


def _targets(tmp_path: Path, name: str) -> dict[str, Path]:
    """Paths that cannot be written: a folder, a file's child, a missing folder's child, a full disk."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / name).mkdir()
    (tmp_path / "file").write_text("old\n")
    targets = {
        "a folder": tmp_path / "folder" / name,
        "under a file": tmp_path / "file" / name,
        "under a missing folder": tmp_path / "missing" / name,
    }
    if not name.endswith(".png") and name != "results" and Path("/dev/full").exists():
        targets["a full disk"] = Path("/dev/full")
    return targets


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("option", sorted(OUTPUTS))
def test_an_unwritable_output_is_exit_2_naming_it(tmp_path: Path, option: str) -> None:
    args, name = OUTPUTS[option]
    for why, target in _targets(tmp_path, name).items():
        if option == "bench synthetic --out" and why in ("a folder", "under a missing folder"):
            continue  # --out wants a folder, and makes it
        before = _snapshot(tmp_path)
        outcome = invoke(*[arg.replace("{T}", str(target)) for arg in args])
        assert not outcome.crash and outcome.code == 2, (why, outcome)
        assert str(target) in outcome.stderr or str(target.parent) in outcome.stderr, (why, outcome.stderr)
        assert _snapshot(tmp_path) == before and not leftovers(tmp_path), why


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    outcome = invoke("place", "monday", "--emit-scheduler-config", folder / "out.yaml")
    folder.chmod(0o700)
    assert outcome.code == 2 and str(folder / "out.yaml") in outcome.stderr and not list(folder.iterdir())


def test_import_replaces_nothing_when_a_later_output_fails(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("old\n")
    (tmp_path / "pods").mkdir()
    outcome = invoke(
        "import",
        "--nodes",
        DUMP / "nodes.json",
        "--pods",
        DUMP / "pods.json",
        "--output-file",
        cluster,
        "--emit-pods",
        tmp_path / "pods",
    )
    assert outcome.code == 2 and cluster.read_text() == "old\n" and not leftovers(tmp_path), outcome


def test_a_good_output_replaces_the_old_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "config.yaml"
    target.write_text("old\n")
    outcome = invoke("place", "monday", "--emit-scheduler-config", target)
    assert outcome.code in (0, 1) and "KubeSchedulerConfiguration" in target.read_text() and not leftovers(tmp_path)


@pytest.mark.parametrize("option", sorted(OUTPUTS))
def test_a_fifo_or_an_empty_name_is_refused_before_any_work(tmp_path: Path, option: str) -> None:
    """A FIFO would block the writer until someone reads it: refused up front, like an empty name."""
    args, name = OUTPUTS[option]
    if option == "bench synthetic --out":
        return  # a folder, made by the bench: see test_a_fifo_as_the_output_folder
    fifo = tmp_path / name
    os.mkfifo(fifo)
    for target in (str(fifo), ""):
        outcome = invoke(*[arg.replace("{T}", target) for arg in args])
        assert not outcome.crash and outcome.code == 2, (target, outcome)
        assert (str(fifo) if target else "expected a file name") in outcome.stderr, outcome.stderr
    assert sorted(tmp_path.iterdir()) == [fifo]


def test_a_fifo_as_the_output_folder(tmp_path: Path) -> None:
    fifo = tmp_path / "results"
    os.mkfifo(fifo)
    args, _ = OUTPUTS["bench synthetic --out"]
    outcome = invoke(*[arg.replace("{T}", str(fifo)) for arg in args])
    assert not outcome.crash and outcome.code == 2 and str(fifo) in outcome.stderr, outcome


def test_a_name_longer_than_the_file_system_takes(tmp_path: Path) -> None:
    target = tmp_path / ("a" * 300)
    outcome = invoke("place", "monday", "--emit-scheduler-config", target)
    assert (
        outcome.code == 2
        and "too long" in outcome.stderr.replace("longer than", "too long")
        and not list(tmp_path.iterdir())
    ), outcome
    near = tmp_path / ("b" * 250)  # its temporary name must fit too
    outcome = invoke("place", "monday", "--emit-scheduler-config", near)
    assert outcome.code in (0, 1) and near.is_file() and not leftovers(tmp_path), outcome


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", [["place", "monday", "--json"], ["place", "monday"], ["scenarios"]])
def test_standard_output_on_a_full_device_is_one_line(args: list[str]) -> None:
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "gpusched", *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == "error: standard output: cannot write: No space left on device\n"


def test_a_broken_pipe_on_standard_output_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import typer

    from gpusched.cli import common

    class Broken:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", Broken())
    lines: list[str] = []
    monkeypatch.setattr(common.err, "print", lambda text, **_: lines.append(text))
    with pytest.raises(typer.Exit) as exit_:
        common.run(lambda: common.sys.stdout.write("x") and 0)
    assert exit_.value.exit_code == 2 and lines == ["error: standard output: cannot write: Broken pipe"]
