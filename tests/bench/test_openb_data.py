"""Where the openb trace comes from: --data, else $GPUSCHED_OPENB, else the user cache; `bench openb --download`
fills it, verified against the published sizes and SHA-256. Downloads go to a local server on 127.0.0.1 (an
http.server with generated CSVs, the real trace when ../shared has it, or a raw socket that misbehaves on purpose):
no test needs the network."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusched.scenarios import openb_download
from gpusched.scenarios.openb import OPENB_FILES, openb_dir
from gpusched.scenarios.openb_download import OPENB_MANIFEST, Published

NODES = "sn,cpu_milli,memory_mib,gpu,model\nnode-0,96000,786432,8,V100M32\nnode-1,96000,786432,2,T4\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(f"p-{i},1000,1024,1,500\n" for i in range(12))
SHARED = Path(os.environ.get("GPUSCHED_OPENB", "-"))


def _manifest(files: dict[str, bytes]) -> tuple[Published, ...]:
    return tuple(Published(name, len(body), hashlib.sha256(body).hexdigest()) for name, body in files.items())


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """pytest treats stray stderr as noise; the test checks the files instead."""


def _serve(folder: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


GENERATED = {name: (NODES if "node_list" in name else PODS).encode() for name in OPENB_FILES}


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch) -> Iterator[str]:
    """A tiny copy of the trace served over HTTP on a free loopback port, with its own manifest (sizes and
    SHA-256) in place of the published one; its base URL."""
    served = tmp_path / "served"
    served.mkdir()
    for name, body in GENERATED.items():
        (served / name).write_bytes(body)
    monkeypatch.setattr(openb_download, "OPENB_MANIFEST", _manifest(GENERATED))
    yield from _serve(served)


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


def test_the_published_manifest_names_every_shipped_file():
    assert [item.name for item in OPENB_MANIFEST] == list(OPENB_FILES)


@pytest.mark.skipif(not (SHARED / OPENB_FILES[0]).exists(), reason="the openb trace is not at $GPUSCHED_OPENB")
def test_the_real_trace_verifies_against_the_published_manifest(gpusched, tmp_path):
    """Served from the copy beside the repository: every file's size and SHA-256 are the published ones."""
    served = tmp_path / "served"
    served.mkdir()
    for name in OPENB_FILES:
        (served / name).write_bytes((SHARED / name).read_bytes())
    seen: list[tuple[int, int]] = []
    for url in _serve(served):
        written = openb_download.download_openb(
            tmp_path / "got", url, progress=lambda done, of: seen.append((done, of))
        )
    assert [path.read_bytes() for path in written] == [(SHARED / name).read_bytes() for name in OPENB_FILES]
    total = sum(item.size for item in OPENB_MANIFEST)
    assert seen[-1] == (total, total) and all(a <= b for (a, _), (b, _) in zip(seen, seen[1:], strict=False))


def test_a_failed_download_leaves_nothing_behind(gpusched, mirror, tmp_path):
    target = tmp_path / "data"
    result = gpusched("bench", "openb", "--download", "--download-url", f"{mirror}/nowhere", "--data", target)
    assert result.exit_code == 2
    assert result.stderr == f"error: {mirror}/nowhere/{OPENB_FILES[0]}: cannot download: HTTP 404 File not found\n"
    assert not target.exists()


def test_a_changed_file_is_refused_by_its_checksum(gpusched, mirror, tmp_path, monkeypatch):
    """The last file differs in one byte: nothing lands, not even the five that verified."""
    changed = dict(GENERATED)
    name = OPENB_FILES[-1]
    changed[name] = changed[name].replace(b"p-11", b"p-12")
    (tmp_path / "served" / name).write_bytes(changed[name])
    target = tmp_path / "data"
    result = gpusched("bench", "openb", "--download", "--download-url", mirror, "--data", target)
    assert result.exit_code == 2
    digest = hashlib.sha256(changed[name]).hexdigest()
    assert result.stderr.startswith(f"error: {mirror}/{name}: SHA-256 {digest} is not the published file's ")
    assert not target.exists()


def _raw_server(answer: bytes, trickle: float = 0.0) -> Iterator[str]:
    """A loopback server that answers every request with `answer` (a byte at a time, `trickle` seconds apart,
    when given), then closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                try:
                    if trickle:
                        for byte in answer:
                            if stop.is_set():
                                break
                            conn.sendall(bytes([byte]))
                            stop.wait(trickle)
                    else:
                        conn.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    listener.close()


SIZE = len(GENERATED[OPENB_FILES[0]])
HOSTILE = {
    "bad status line": (b"HTTP/1.1 abc\r\n\r\n", 0.0, "cannot download: HTTP/1.1 abc"),
    "too many headers": (
        b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(150)) + b"\r\n",
        0.0,
        "cannot download: got more than 100 headers",
    ),
    "a body cut short": (
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\nsn,cpu" % SIZE,
        0.0,
        "cannot download: IncompleteRead(6 bytes read",
    ),
    "a body cut short, no length": (b"HTTP/1.1 200 OK\r\n\r\nsn,cpu", 0.0, "6 bytes, cut short"),
    "an oversized length": (b"HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n", 0.0, "announces 999999999"),
    "an oversized body": (
        b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * (SIZE + 10),
        0.0,
        f"more than the published file's {SIZE}",
    ),
    "a trickle": (b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * SIZE, 0.05, "not done within 1 s (GPUSCHED_DOWNLOAD_TIMEOUT)"),
    "silence": (b"HTTP/1.1 200 OK\r\n\r\n", 30.0, "cannot download: "),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_server_is_one_clear_error(gpusched, mirror, tmp_path, monkeypatch, case):
    """Each answer is refused within the limits, as exit 2 naming the URL, with nothing written."""
    answer, trickle, message = HOSTILE[case]
    monkeypatch.setenv("GPUSCHED_DOWNLOAD_TIMEOUT", "1")
    monkeypatch.setenv("GPUSCHED_READ_TIMEOUT", "1")
    target = tmp_path / "data"
    began = time.monotonic()
    for url in _raw_server(answer, trickle):
        result = gpusched("bench", "openb", "--download", "--download-url", url, "--data", target)
    assert time.monotonic() - began < 20
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {url}/{OPENB_FILES[0]}: "), result.stderr
    assert message in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert not target.exists()


@pytest.mark.parametrize("url", ["file:///etc", "ftp://example.org/x", "example.org/x", "http://"])
def test_a_url_that_is_not_http_is_refused(gpusched, tmp_path, url):
    result = gpusched("bench", "openb", "--download", "--download-url", url, "--data", tmp_path / "data")
    assert result.exit_code == 2 and result.stderr.startswith("error: "), result.stderr
    assert not (tmp_path / "data").exists()


def test_missing_data_says_how_to_get_it(gpusched, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSCHED_OPENB", str(tmp_path))
    for command in ("openb", "replay"):
        result = gpusched("bench", command, "--seeds", "42") if command == "openb" else gpusched("bench", command)
        assert result.exit_code == 2
        assert result.stderr.splitlines() == [
            f"error: {tmp_path / OPENB_FILES[0]}: no such file: get the openb trace with `gpusched bench openb "
            "--download`, or point --data or $GPUSCHED_OPENB at a folder holding it"
        ]
