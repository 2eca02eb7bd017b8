"""A live cluster that answers badly: a local http.server on 127.0.0.1 only; every answer is one clear exit 2."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .harness import invoke

BODIES = {"empty": b"", "null": b"null", "list": b"[1, 2]", "binary": b"\xff\xfe\x00\x81", "deep": b"[" * 100000}


def _serve(body: bytes | dict[str, bytes] | None):
    """A server answering every GET with `body` (by path when a dict; None: accept and never answer)."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if body is None:
                stop.wait(10)
                return
            answer = body.get(self.path.split("?")[0]) if isinstance(body, dict) else body
            self.send_response(404 if answer is None else 200)
            answer = answer or b""
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, stop


def _kubeconfig(tmp_path: Path, port: int, user: str = "{token: abc}") -> Path:
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        f"users: [{{name: u, user: {user}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    return path


@pytest.mark.parametrize("kind", sorted(BODIES))
@pytest.mark.parametrize("command", ["k8s", "import"])
def test_a_bad_answer_is_one_clear_error(tmp_path: Path, kind: str, command: str) -> None:
    server, stop = _serve(BODIES[kind])
    try:
        config = _kubeconfig(tmp_path, server.server_address[1])
        args = ["k8s", "--kubeconfig", config, "p"] if command == "k8s" else ["import", "--kubeconfig", config]
        outcome = invoke(*args)
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    assert not outcome.crash and outcome.code == 2, outcome
    assert "127.0.0.1" in outcome.stderr and "JSON object" in outcome.stderr, outcome.stderr


@pytest.mark.parametrize("user", ["{}", "[]", "{token: 5}", "text", "{exec: {}}", "{username: a}"])
def test_a_user_without_credentials_is_not_a_crash(tmp_path: Path, user: str) -> None:
    server, stop = _serve(b'{"kind": "NodeList", "items": []}')
    try:
        outcome = invoke("import", "--kubeconfig", _kubeconfig(tmp_path, server.server_address[1], user))
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    assert not outcome.crash and outcome.code in (0, 1, 2), outcome


def test_a_silent_server_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCHED_API_TIMEOUT", "0.5")
    server, stop = _serve(None)
    try:
        outcome = invoke("k8s", "--kubeconfig", _kubeconfig(tmp_path, server.server_address[1]), "p")
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    assert not outcome.crash and outcome.code == 2 and "timed out" in outcome.stderr.lower(), outcome


def _trickler(head: bytes) -> tuple[socket.socket, threading.Event]:
    """A raw server that sends `head` then one more byte every 0.3 s for ever: each read is quick, the answer never
    ends (the socket read timeout alone would wait for ever)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(head)
            while not stop.wait(0.3):
                try:
                    connection.sendall(b" ")
                except OSError:
                    return

    threading.Thread(target=serve, daemon=True).start()
    return listener, stop


@pytest.mark.parametrize(
    "head",
    [b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9999\r\n\r\n{"],
    ids=["in-the-headers", "in-the-body"],
)
def test_a_trickling_server_meets_the_whole_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: bytes
) -> None:
    monkeypatch.setenv("GPUSCHED_API_TIMEOUT", "1")
    listener, stop = _trickler(head)
    started = time.monotonic()
    try:
        outcome = invoke("k8s", "--kubeconfig", _kubeconfig(tmp_path, listener.getsockname()[1]), "p")
    finally:
        stop.set()
        listener.close()
    assert not outcome.crash and outcome.code == 2 and "timed out" in outcome.stderr, outcome
    assert time.monotonic() - started < 10


def test_an_endless_answer_stops_at_the_input_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCHED_MAX_INPUT_BYTES", "1000")
    server, stop = _serve(b'{"items": [' + b"0," * 5000 + b"0]}")
    try:
        outcome = invoke("import", "--kubeconfig", _kubeconfig(tmp_path, server.server_address[1]))
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    assert not outcome.crash and outcome.code == 2 and "input limit of 1000 bytes" in outcome.stderr, outcome


def test_an_exec_plugin_that_never_returns_is_stopped_and_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCHED_EXEC_TIMEOUT", "1")
    pid_file = tmp_path / "plugin.pid"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(3600)\n")
    user = f"{{exec: {{apiVersion: client.authentication.k8s.io/v1, command: {sys.executable!r}, args: [{str(plugin)!r}], interactiveMode: Never}}}}"
    started = time.monotonic()
    outcome = invoke("import", "--kubeconfig", _kubeconfig(tmp_path, 9, user))
    assert not outcome.crash and outcome.code == 2, outcome
    assert "GPUSCHED_EXEC_TIMEOUT" in outcome.stderr and time.monotonic() - started < 10, outcome
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped, not left sleeping


def test_deadlines_nest() -> None:
    """An outer alarm (the fuzz runner's per-case limit) survives an inner deadline and still fires."""
    import signal

    from gpusched.scenarios.live import Expired, deadline

    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.6)
        with deadline(5, "inner, later than the outer"):
            pass
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.6
        with pytest.raises(Expired), deadline(0.1, "inner, sooner"):
            time.sleep(1)
        assert not fired
        time.sleep(0.8)
        assert fired, "the outer alarm was lost"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _answering(tmp_path: Path, body: bytes | dict[str, bytes]):
    server, stop = _serve(body)
    return _kubeconfig(tmp_path, server.server_address[1]), server, stop


def _close(server, stop) -> None:
    stop.set()
    server.shutdown()
    server.server_close()


def test_a_list_where_one_node_was_asked_for_is_a_cluster_error(tmp_path: Path) -> None:
    from gpusched.actions.kube import Kube
    from gpusched.errors import ClusterError
    from gpusched.scenarios.live import connect

    config, server, stop = _answering(tmp_path, b'{"kind": "NodeList", "items": []}')
    try:
        with connect(config) as api:
            with pytest.raises(ClusterError, match=r"GET /api/v1/nodes/n: expected a Node, got a NodeList"):
                Kube(api, str(config), None).node("n")
    finally:
        _close(server, stop)


def test_a_not_json_answer_names_the_server_and_the_request(tmp_path: Path) -> None:
    config, server, stop = _answering(tmp_path, b"<html>")
    try:
        outcome = invoke("import", "--kubeconfig", config)
    finally:
        _close(server, stop)
    assert outcome.code == 2 and "http://127.0.0.1:" in outcome.stderr, outcome
    assert "GET /api/v1/nodes: expected a JSON object, got an answer that is not JSON" in outcome.stderr


@pytest.mark.parametrize(
    "allocatable",
    [{"nvidia.com/mig-1g.10gb": "1000000000"}, {"nvidia.com/gpu": "1000000000"}, {"nvidia.com/gpu": "-1"}],
    ids=["mig", "gpu", "negative"],
)
def test_a_huge_allocatable_from_a_server_is_refused_before_it_is_laid_out(tmp_path: Path, allocatable: dict) -> None:
    import json

    labels = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/mig.strategy": "mixed"}
    node = {"metadata": {"name": "n1", "labels": labels}, "status": {"allocatable": allocatable}}
    answers = {
        "/api/v1/nodes": json.dumps({"kind": "NodeList", "items": [node]}).encode(),
        "/api/v1/pods": b'{"kind": "PodList", "items": []}',
    }
    config, server, stop = _answering(tmp_path, answers)
    try:
        outcome = invoke("import", "--kubeconfig", config)
    finally:
        _close(server, stop)
    assert not outcome.crash and outcome.code == 2, outcome
    assert "node n1" in outcome.stderr and "127.0.0.1" in outcome.stderr, outcome.stderr
    assert "GPUSCHED_MAX_GPUS_PER_NODE" in outcome.stderr or "cannot be negative" in outcome.stderr, outcome.stderr


def test_more_nodes_than_the_limit_name_the_limit() -> None:
    from gpusched.errors import LimitError
    from gpusched.models.kube import _objects

    listed = {"kind": "NodeList", "items": [{"metadata": {"name": f"n{i}"}} for i in range(4)]}
    with pytest.raises(LimitError, match=r"4 Nodes: more than the 3 gpusched reads \(set GPUSCHED_MAX_NODES"):
        _objects(listed, "Node", "nodes.json", (3, "GPUSCHED_MAX_NODES"))
