"""`gpusched slices --apply` without a cluster: every way it can be misused or fail before the server answers is
one message and exit 2. tests/conformance/test_slices_apply_live.py publishes to a real API server."""

from __future__ import annotations

import json
import socket

import pytest

MODEL = "examples/kind/kind-model.json"


def kubeconfig(write, server: str, contexts=("ctx",), current="ctx"):
    return write("kubeconfig", {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": name, "context": {"cluster": "c", "user": "u"}} for name in contexts],
        "current-context": current,
    })  # fmt: skip


def closed_port() -> int:
    """A loopback port nothing listens on: bound, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--yes"], "--yes: only with --apply"),
        (["--kubeconfig", "k", "--context", "c"], "--kubeconfig, --context: only with --apply"),
        (["--apply"], "--apply needs --kubeconfig PATH"),
    ],
)
def test_apply_options_belong_together(gpusched, args, message):
    result = gpusched("slices", MODEL, *args)
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


def test_missing_kubeconfig(gpusched, tmp_path):
    result = gpusched("slices", MODEL, "--apply", "--kubeconfig", tmp_path / "nope")
    assert result.exit_code == 2 and "cannot read the kubeconfig" in result.stderr


def test_kubeconfig_that_is_not_one(gpusched, write):
    path = write("kubeconfig", "- just\n- a list\n")
    result = gpusched("slices", MODEL, "--apply", "--kubeconfig", path)
    assert result.exit_code == 2 and "not a kubeconfig" in result.stderr


def test_missing_context_names_the_ones_there_are(gpusched, write):
    path = kubeconfig(write, "https://127.0.0.1:1", contexts=("a", "b"), current="a")
    result = gpusched("slices", MODEL, "--apply", "--kubeconfig", path, "--context", "prod")
    assert result.exit_code == 2 and "context 'prod' not found (contexts: a, b)" in result.stderr


def test_unreachable_server_is_one_message(gpusched, write):
    server = f"https://127.0.0.1:{closed_port()}"
    result = gpusched("slices", MODEL, "--apply", "--kubeconfig", kubeconfig(write, server), "--yes")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {server}: GET /apis/") and ": cannot reach the API server" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""


def test_bad_cluster_never_contacts_the_server(gpusched, write):
    bad = write("bad.json", json.dumps({"nodes": [{"name": "n", "gpu": {"model": "L4", "count": "x"}}]}))
    result = gpusched("slices", bad, "--apply", "--kubeconfig", kubeconfig(write, "https://127.0.0.1:1"))
    assert result.exit_code == 2 and f"{bad}: nodes[0](n).gpu" in result.stderr and "reach" not in result.stderr
