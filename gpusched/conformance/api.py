"""A thin JSON REST client over the official kubernetes client's connection (kubeconfig, TLS, token).

Raw JSON both ways: objects go in as the manifests a user would apply and come back as `kubectl get -o json`
shows them, which is what gpusched's parsers read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..scenarios.live import RestError, connect, request

__all__ = ["Rest", "RestError"]


class Rest:
    def __init__(self, kubeconfig: Path, context: str | None = None) -> None:
        self.api = connect(kubeconfig, context)

    def close(self) -> None:
        self.api.close()

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        return request(self.api, method, path, body, content_type)

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def create(self, path: str, body: Any) -> Any:
        return self.call("POST", path, body)

    def delete(self, path: str) -> Any:
        """Delete at once: with no kubelet a bound pod would otherwise stay Terminating forever."""
        return self.call("DELETE", path, {"gracePeriodSeconds": 0, "propagationPolicy": "Background"})

    def patch_status(self, path: str, patch: list[dict]) -> Any:
        return self.call("PATCH", f"{path}/status", patch, "application/json-patch+json")

    def wait(self, probe: Callable[[], Any], timeout: float = 30.0, interval: float = 0.02) -> Any:
        """Poll until `probe` returns something truthy; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            found = probe()
            if found:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing after {timeout:.0f} s")
            time.sleep(interval)
