"""A live cluster that answers badly: a local http.server on 127.0.0.1 only; every answer is one clear exit 2."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .harness import invoke

BODIES = {"empty": b"", "null": b"null", "list": b"[1, 2]", "binary": b"\xff\xfe\x00\x81", "deep": b"[" * 100000}


def _serve(body: bytes | None):
    """A server answering every GET with `body` (None: accept and never answer)."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if body is None:
                stop.wait(10)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

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
        args = ["k8s", "--kubeconfig", config, "--pod", "p"] if command == "k8s" else ["import", "--kubeconfig", config]
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
        outcome = invoke("k8s", "--kubeconfig", _kubeconfig(tmp_path, server.server_address[1]), "--pod", "p")
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    assert not outcome.crash and outcome.code == 2 and "timed out" in outcome.stderr.lower(), outcome
