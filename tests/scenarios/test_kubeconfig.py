"""Kubeconfigs as a typed model, merged as kubectl merges a $KUBECONFIG list; exec plugins run in their own group."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusched.errors import InputError
from gpusched.scenarios import credentials
from gpusched.scenarios.credentials import exec_user
from gpusched.scenarios.kubeconfig import load

SERVER = "http://127.0.0.1:9"


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _config(context: str = "x", cluster: str = "{server: 'http://127.0.0.1:9'}", user: str = "{token: t}") -> str:
    return (
        "kind: Config\n"
        f"clusters: [{{name: c, cluster: {cluster}}}]\n"
        f"users: [{{name: u, user: {user}}}]\n"
        f"contexts: [{{name: {context}, context: {{cluster: c, user: u, namespace: ns}}}}]\n"
        f"current-context: {context}\n"
    )


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("kind: Config\ncontexts: 5\n", "contexts"),
        ("kind: Config\ncontexts: [{name: 5, context: {cluster: c}}]\n", "contexts[0].name"),
        ("kind: Config\ncontexts: [{name: null}]\n", "contexts[0].name"),
        ("kind: Config\nclusters: [{name: c, cluster: text}]\n", "clusters[0](c).cluster"),
        ("kind: Config\nusers: [{name: u, user: {exec: {command: 7}}}]\n", "users[0](u).user.exec.command"),
        ("kind: Config\ncurrent-context: [a]\n", "current-context"),
        ("kind: Pod\n", "kind"),
    ],
)
def test_a_wrong_type_is_an_input_error_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = _write(tmp_path / "config", text)
    with pytest.raises(InputError) as error:
        load(path)
    assert error.value.source == path and error.value.field == field, error.value


def test_a_kubeconfig_list_merges_as_kubectl_does(tmp_path: Path) -> None:
    """The first file to name an entry wins it whole; the first non-empty current-context wins; missing files are
    skipped; relative paths are the entry's own file's."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _write(
        tmp_path / "a" / "config",
        "kind: Config\nclusters: [{name: c, cluster: {server: 'https://one', certificate-authority: ca.pem}}]\n"
        "contexts: [{name: x, context: {cluster: c, namespace: first}}]\n",
    )
    second = _write(
        tmp_path / "b" / "config",
        "kind: Config\ncurrent-context: y\n"
        "clusters: [{name: c, cluster: {server: 'https://two'}}, {name: d, cluster: {server: 'https://three'}}]\n"
        "contexts: [{name: x, context: {cluster: d}}, {name: y, context: {cluster: d, user: u}}]\n"
        "users: [{name: u, user: {client-certificate: cert.pem, exec: {command: ./bin/login}}}]\n",
    )
    merged = load(os.pathsep.join([str(tmp_path / "none"), first, second]))
    assert merged.files == [first, second] and merged.current_context == "y"
    x = merged.resolve("x")
    assert (x.namespace, x.cluster.server) == ("first", "https://one")
    assert x.cluster.certificate_authority == str(tmp_path / "a" / "ca.pem")
    y = merged.resolve(None)
    assert (y.namespace, y.cluster.server, y.user_file) == ("default", "https://three", second)
    assert y.user.client_certificate == str(tmp_path / "b" / "cert.pem")
    assert y.user.exec is not None and y.user.exec.command == str(tmp_path / "b" / "bin" / "login")
    with pytest.raises(InputError, match="context 'z' not found"):
        merged.resolve("z")


def test_a_socks_proxy_needs_its_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "socks", None)  # PySocks not installed
    path = _write(tmp_path / "config", _config(cluster="{server: 'https://s', proxy-url: 'socks5://127.0.0.1:1'}"))
    with pytest.raises(InputError, match=r"a socks5 proxy needs PySocks.*gpusched\[socks\]") as error:
        load(path).resolve(None)
    assert error.value.field == "clusters(c).cluster.proxy-url"
    path = _write(tmp_path / "config", _config(cluster="{server: 'https://s', proxy-url: 'ftp://127.0.0.1:1'}"))
    with pytest.raises(InputError, match="proxy scheme 'ftp' is not supported"):
        load(path).resolve(None)


def _plugin(tmp_path: Path, script: str) -> str:
    plugin = _write(tmp_path / "plugin.py", script)
    user = json.dumps(
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [plugin]}}
    )
    return _write(tmp_path / "config", _config(user=user))


CREDENTIAL = json.dumps(
    {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "secret"}}
)


def test_an_exec_plugin_gives_its_token(tmp_path: Path) -> None:
    path = _plugin(
        tmp_path,
        f"import os, json\nassert json.loads(os.environ['KUBERNETES_EXEC_INFO'])['kind']\nprint({CREDENTIAL!r})\n",
    )
    assert exec_user(load(path).resolve(None), "u") == {"token": "secret"}


def test_a_plugin_that_backgrounds_a_child_does_not_outlive_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    path = _plugin(
        tmp_path,
        "import subprocess, sys\n"
        f"child = subprocess.Popen(['sleep', '1000'])\nopen({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        f"print({CREDENTIAL!r}, flush=True)\n",
    )
    started = time.monotonic()
    assert exec_user(load(path).resolve(None), "u") == {"token": "secret"}
    assert time.monotonic() - started < 30
    time.sleep(0.2)
    pid = int(pid_file.read_text())
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    assert state[:1] in ("", "Z"), state  # killed with its group (a zombie until its reaper, init, collects it)


def test_a_plugin_with_endless_output_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(credentials, "MAX_OUTPUT", 10_000)
    path = _plugin(tmp_path, "import sys\nwhile True:\n    sys.stdout.write('x' * 4096)\n")
    with pytest.raises(InputError, match="wrote more than 10000 bytes"):
        exec_user(load(path).resolve(None), "u")


def test_a_plugin_past_the_timeout_is_killed_with_its_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCHED_EXEC_TIMEOUT", "0.5")
    path = _plugin(tmp_path, "import subprocess\nsubprocess.run(['sleep', '1000'])\n")
    with pytest.raises(InputError, match="took longer than 0.5 s"):
        exec_user(load(path).resolve(None), "u")


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("print('hello')", "no ExecCredential JSON"),
        ("print('[]')", "not an ExecCredential"),
        ("import sys\nsys.stderr.write('denied\\n')\nsys.exit(4)", r"failed \(exit 4\): denied"),
        (
            'print(\'{"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1", "status": {}}\')',
            "neither a token",
        ),
    ],
)
def test_a_bad_plugin_is_one_error_naming_the_user(tmp_path: Path, script: str, why: str) -> None:
    path = _plugin(tmp_path, script)
    with pytest.raises(InputError, match=why) as error:
        exec_user(load(path).resolve(None), "u")
    assert error.value.field == "users(u).user.exec"


def test_the_clients_log_lines_are_kept_for_the_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The client reports a failed credential with logging.error (`ERROR:root:` on stderr); gpusched says it once."""
    pytest.importorskip("kubernetes")
    from kubernetes.config.config_exception import ConfigException

    from gpusched.scenarios import live

    def fails(*args: object, **kwargs: object) -> None:
        logging.error("the auth provider refused")
        raise ConfigException("Invalid kube-config")

    monkeypatch.setattr("kubernetes.config.new_client_from_config_dict", fails)
    root = logging.getLogger()
    handlers = list(root.handlers)
    monkeypatch.setattr(root, "handlers", [])
    try:
        with pytest.raises(InputError, match="the auth provider refused"):
            live.connect(_write(tmp_path / "config", _config()))
        assert root.handlers == [] and "ERROR:root" not in capsys.readouterr().err
    finally:
        root.handlers = handlers
