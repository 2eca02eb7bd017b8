"""Where the openb trace comes from: --data, else $GPUSCHED_OPENB, else the user cache; `bench openb --download`
fills it. Downloads go to a local http.server on 127.0.0.1 serving generated CSVs: no test needs the network."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusched.scenarios.openb import OPENB_FILES, openb_dir

NODES = "sn,cpu_milli,memory_mib,gpu,model\nnode-0,96000,786432,8,V100M32\nnode-1,96000,786432,2,T4\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(f"p-{i},1000,1024,1,500\n" for i in range(12))


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[str]:
    """A tiny copy of the trace served over HTTP on a free loopback port; its base URL."""
    served = tmp_path / "served"
    served.mkdir()
    for name in OPENB_FILES:
        (served / name).write_text(NODES if "node_list" in name else PODS)
    handler = functools.partial(QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """pytest treats stray stderr as noise; the test checks the files instead."""


def test_the_folder_is_data_then_the_variable_then_the_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUSCHED_OPENB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert openb_dir() == tmp_path / "xdg" / "gpusched" / "openb"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert openb_dir() == tmp_path / "home" / ".cache" / "gpusched" / "openb"
    monkeypatch.setenv("GPUSCHED_OPENB", str(tmp_path / "env"))
    assert openb_dir() == tmp_path / "env"
    assert openb_dir(tmp_path / "given") == tmp_path / "given"


def test_download_then_run(gpusched, mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("GPUSCHED_OPENB", raising=False)
    cache = tmp_path / "xdg" / "gpusched" / "openb"
    result = gpusched("bench", "openb", "--download", "--download-url", mirror)
    assert result.exit_code == 0, result.stderr
    assert result.lines == [f"downloaded {len(OPENB_FILES)} openb files into {cache}"]
    assert sorted(path.name for path in cache.iterdir()) == sorted(OPENB_FILES)  # no temporary files left
    assert (cache / OPENB_FILES[0]).read_text() == NODES
    run = gpusched("bench", "openb", "--seeds", "42", "--policies", "binpack", "--no-bound", "--workers", "1", "--json")
    assert run.exit_code == 0, run.stderr
    assert run.json()["traces"][0]["nodes"] == 2


def test_a_failed_download_leaves_nothing_behind(gpusched, mirror, tmp_path):
    target = tmp_path / "data"
    result = gpusched("bench", "openb", "--download", "--download-url", f"{mirror}/nowhere", "--data", target)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {mirror}/nowhere/{OPENB_FILES[0]}: cannot download: ")
    assert list(target.iterdir()) == []


def test_missing_data_says_how_to_get_it(gpusched, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSCHED_OPENB", str(tmp_path))
    for command in ("openb", "replay"):
        result = gpusched("bench", command, "--seeds", "42") if command == "openb" else gpusched("bench", command)
        assert result.exit_code == 2
        assert result.stderr.splitlines() == [
            f"error: {tmp_path / OPENB_FILES[0]}: no such file: get the openb trace with `gpusched bench openb "
            "--download`, or point --data or $GPUSCHED_OPENB at a folder holding it"
        ]
