"""A fault-injecting HTTP proxy in front of the real API server, for tests of what gpusched does when the server
misbehaves: the answers are the real server's except where a rule says otherwise.

Clients talk plain HTTP to the proxy (on loopback; the kubeconfig's token goes through unchanged) and the proxy
talks HTTPS to the API server. A rule matches a method and a path (a regular expression, without the query), and
optionally the query (so that `dryRun=All` requests can be told apart) and a pattern found in the body; it lets
`skip` matching requests through, then acts on the next `times` of them:

- `status`: answer that HTTP status (503, 429, 403, ...) with a Kubernetes Status body, without asking the server;
- `garbage`: answer 200 with a body that is not JSON, without asking the server;
- `drop`: close the connection without an answer, without asking the server;
- `lose`: forward the request (the server acts on it), then close the connection without passing the answer on;
- `hold`: forward the request, then wait `seconds` (or until the rules are cleared) before passing the answer on:
  a kill can land in between.
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

__all__ = ["FaultProxy", "Rule"]

Action = Literal["status", "garbage", "drop", "lose", "hold"]
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "upgrade"}


@dataclass
class Rule:
    method: str | None  # None: any method
    path: str  # a regular expression the whole path (without the query) must match
    action: Action
    status: int = 503
    times: int = 1
    skip: int = 0
    seconds: float = 0.0
    query: str | None = None  # a regular expression the whole query must match
    body: str | None = None  # a regular expression found somewhere in the request's body
    seen: int = field(default=0, init=False)  # matching requests so far
    fired: int = field(default=0, init=False)  # requests it acted on

    def take(self, method: str, path: str, query: str, body: bytes) -> bool:
        """Whether it acts on this request (counting it)."""
        if (self.method and self.method != method) or not re.fullmatch(self.path, path):
            return False
        if self.query is not None and not re.fullmatch(self.query, query):
            return False
        if self.body is not None and not re.search(self.body, body.decode(errors="replace")):
            return False
        self.seen += 1
        if self.seen <= self.skip or self.fired >= self.times:
            return False
        self.fired += 1
        return True


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone before its answer (killed, on purpose) is no error of the proxy's."""


class FaultProxy:
    """`with FaultProxy(server, ca) as proxy:` serves on `proxy.url` until the block ends; `proxy.rules` is read
    at every request, so a test may add rules as it goes. `proxy.log` keeps (method, path, what happened)."""

    def __init__(self, upstream: str, ca: Path) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 443
        self.context = ssl.create_default_context(cafile=str(ca))
        self.rules: list[Rule] = []
        self.log: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()
        self.released = threading.Event()  # set by clear(): held answers go on at once
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def add(self, *rules: Rule) -> None:
        with self.lock:
            self.rules.extend(rules)

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()
            self.released.set()
            self.released = threading.Event()

    def kubeconfig(self, source: Path, target: Path) -> Path:
        """A copy of `source` whose clusters point at the proxy."""
        config = json.loads(source.read_text())
        for entry in config["clusters"]:
            entry["cluster"] = {"server": self.url}
        target.write_text(json.dumps(config, indent=2))
        return target

    def _rule(self, method: str, path: str, query: str, body: bytes) -> Rule | None:
        with self.lock:
            return next((rule for rule in self.rules if rule.take(method, path, query, body)), None)

    def _forward(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, list, bytes]:
        upstream = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=60)
        try:
            upstream.request(method, target, body=body or None, headers=headers)
            answer = upstream.getresponse()
            return answer.status, answer.getheaders(), answer.read()
        finally:
            upstream.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

            def _serve(self) -> None:
                method, parts = self.command, urlsplit(self.path)
                path = parts.path
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                rule = proxy._rule(method, path, parts.query, body)
                proxy.log.append((method, path, rule.action if rule else "forwarded"))
                if rule is not None and rule.action == "drop":
                    self.close_connection = True
                    return
                if rule is not None and rule.action in ("status", "garbage"):
                    if rule.action == "status":
                        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": rule.status,
                                  "message": f"injected by the fault proxy: {rule.status}"}  # fmt: skip
                        self._answer(rule.status, [("Content-Type", "application/json")], json.dumps(status).encode())
                    else:
                        self._answer(200, [("Content-Type", "text/html")], b"<html>a proxy's error page</html>")
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP and k.lower() != "host"}
                status_code, answer_headers, content = proxy._forward(method, self.path, headers, body)
                if rule is not None and rule.action == "lose":
                    self.close_connection = True
                    return
                if rule is not None and rule.action == "hold":
                    proxy.released.wait(rule.seconds)
                self._answer(status_code, [(k, v) for k, v in answer_headers if k.lower() not in HOP], content)

            def _answer(self, status: int, headers: list[tuple[str, str]], content: bytes) -> None:
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve  # noqa: N815 - http.server's names

        return Handler
