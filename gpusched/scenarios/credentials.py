"""A kubeconfig's exec credential plugin, run by gpusched itself rather than by the kubernetes client.

The client runs a plugin with no timeout and reads its output without a bound; a plugin is a program named by a
file gpusched did not write. So it runs here, in its own process group (`start_new_session`), with no terminal:
- its output is capped at `MAX_OUTPUT` bytes, stdout and stderr together;
- the whole run has GPUSCHED_EXEC_TIMEOUT seconds;
- when it ends, or at the timeout or the cap, its whole group is killed, so a child it left in the background
  (`sleep 1000 & echo {...}`) does not outlive it or hold its output open.
Its ExecCredential (client.authentication.k8s.io) becomes the token or client certificate the client sends.
"""

from __future__ import annotations

import base64
import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..limits import setting
from .kubeconfig import Resolved

__all__ = ["DEFAULT_EXEC_TIMEOUT", "MAX_OUTPUT", "exec_timeout", "exec_user"]

DEFAULT_EXEC_TIMEOUT = 60.0  # seconds a kubeconfig's exec plugin may take; GPUSCHED_EXEC_TIMEOUT overrides it
MAX_OUTPUT = 1 << 20  # an ExecCredential is a few kilobytes
_DRAIN = 0.2  # seconds to read what a plugin that exited left in its pipes


def exec_timeout() -> float:
    """Seconds that a kubeconfig's exec plugin (a cloud login, say) may take: GPUSCHED_EXEC_TIMEOUT, else 60."""
    return setting("GPUSCHED_EXEC_TIMEOUT", DEFAULT_EXEC_TIMEOUT)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _run(argv: list[str], env: dict[str, str], cwd: str, seconds: float) -> tuple[int | None, bytes, bytes, str]:
    """(exit status or None, stdout, stderr, why it was stopped or "")."""
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
        start_new_session=True,
    )  # fmt: skip
    output: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
    give_up = time.monotonic() + seconds
    why = ""
    try:
        with selectors.DefaultSelector() as selector:
            assert process.stdout is not None and process.stderr is not None
            selector.register(process.stdout, selectors.EVENT_READ, 1)
            selector.register(process.stderr, selectors.EVENT_READ, 2)
            exited_at: float | None = None
            while selector.get_map():
                now = time.monotonic()
                if exited_at is None and process.poll() is not None:
                    exited_at = now  # a child in the background may hold the pipes open: read briefly, then stop
                if exited_at is not None and now > exited_at + _DRAIN:
                    break
                if now >= give_up:
                    why = f"took longer than {seconds:g} s (set GPUSCHED_EXEC_TIMEOUT to wait longer)"
                    break
                wait = min(give_up - now, _DRAIN if exited_at is not None else 0.05)
                for key, _ in selector.select(max(wait, 0.0)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    output[key.data] += chunk
                    if len(output[1]) + len(output[2]) > MAX_OUTPUT:
                        why = f"wrote more than {MAX_OUTPUT} bytes"
                        break
                if why:
                    break
    finally:
        _kill_group(process)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    return (None if why else process.returncode), bytes(output[1]), bytes(output[2]), why


def _cluster_info(resolved: Resolved) -> dict[str, Any]:
    cluster = resolved.cluster.model_dump(by_alias=True, exclude_defaults=True)
    info: dict[str, Any] = {"server": resolved.cluster.server}
    for key, name in (("certificate-authority-data", "certificate-authority-data"), ("proxy-url", "proxy-url")):
        if key in cluster:
            info[name] = cluster[key]
    if "insecure-skip-tls-verify" in cluster:
        info["insecure-skip-tls-verify"] = cluster["insecure-skip-tls-verify"]
    return info


def exec_user(resolved: Resolved, user_name: str) -> dict[str, Any] | None:
    """The resolved user with its exec plugin's credentials in place of the plugin (None: the user has none)."""
    plugin = resolved.user.exec
    if plugin is None:
        return None
    source, field = resolved.user_file, f"users({user_name}).user.exec"
    if plugin.interactive_mode == "Always":
        raise InputError(source, "interactiveMode Always needs a terminal; gpusched runs plugins without one", field)
    info: dict[str, Any] = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    if plugin.provide_cluster_info:
        info["spec"]["cluster"] = _cluster_info(resolved)
    env = {**os.environ, **{item.name: item.value for item in plugin.env or []}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    argv = [plugin.command, *(plugin.args or [])]
    name = Path(plugin.command).name
    try:
        status, out, err, why = _run(argv, env, str(Path(source).resolve().parent), exec_timeout())
    except OSError as error:
        hint = f" ({plugin.install_hint.strip()})" if plugin.install_hint.strip() else ""
        raise InputError(source, f"cannot run the exec plugin {name}: {error.strerror or error}{hint}", field) from None
    if why:
        raise InputError(source, f"the exec plugin {name} {why}; it was stopped", field)
    if status != 0:
        said = err.decode("utf-8", "replace").strip().splitlines()
        raise InputError(
            source, f"the exec plugin {name} failed (exit {status})" + (f": {said[-1]}" if said else ""), field
        )
    return {**_kept(resolved), **_credential(source, field, name, plugin.api_version, out)}


def _kept(resolved: Resolved) -> dict[str, Any]:
    """The user's own settings besides the plugin (a client certificate the plugin does not give, say)."""
    user = resolved.user.model_dump(by_alias=True, exclude_defaults=True)
    user.pop("exec", None)
    return user


def _credential(source: str, field: str, name: str, api_version: str, out: bytes) -> dict[str, Any]:
    """The ExecCredential's status as kubeconfig user keys: token, or client-certificate-data and client-key-data."""
    try:
        found = json.loads(out)
    except (ValueError, RecursionError):
        raise InputError(source, f"the exec plugin {name} printed no ExecCredential JSON", field) from None
    if not isinstance(found, dict) or found.get("kind") != "ExecCredential":
        raise InputError(source, f"the exec plugin {name} printed JSON that is not an ExecCredential", field)
    if api_version and found.get("apiVersion") != api_version:
        raise InputError(
            source,
            f"the exec plugin {name} answered apiVersion {found.get('apiVersion')!r}, not {api_version!r}",
            field,
        )
    status = found.get("status")
    if not isinstance(status, dict):
        raise InputError(source, f"the exec plugin {name}'s ExecCredential has no status", field)
    token, certificate, key = (status.get(k) for k in ("token", "clientCertificateData", "clientKeyData"))
    if isinstance(token, str) and token:
        return {"token": token}
    if isinstance(certificate, str) and isinstance(key, str) and certificate and key:
        return {
            "client-certificate-data": base64.b64encode(certificate.encode()).decode(),
            "client-key-data": base64.b64encode(key.encode()).decode(),
        }
    raise InputError(source, f"the exec plugin {name} gave neither a token nor a client certificate and key", field)
