"""Heavy dependencies a core user does not need are extras: a command that needs a missing one says which to
install, in one line, and exits 2. Simulated by hiding the module (sys.modules[name] = None makes import fail)."""

from __future__ import annotations

import sys

import pytest

from gpusched.errors import MissingExtra, require


def test_require_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtra, match=r"pip install 'gpusched\[plots\]'"):
        require("matplotlib", "plots")
    assert require("json", "none").__name__ == "json"


def test_a_picture_without_matplotlib(gpusched, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    target = tmp_path / "frag.png"
    result = gpusched("frag", "monday", "--output-file", target)
    assert result.exit_code == 2 and not target.exists()
    assert result.stderr.splitlines() == [
        "error: this needs matplotlib, which is not installed: pip install 'gpusched[plots]'"
    ]


def test_a_live_cluster_without_the_kubernetes_client(gpusched, write, monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    result = gpusched("k8s", "--kubeconfig", write("kubeconfig", "{}"), "p")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: this needs kubernetes, which is not installed: pip install 'gpusched[live]'"
    ]


def test_ray_without_ray(monkeypatch):
    from gpusched.bench.fanout import LOCAL_RAY, fan_out

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtra, match=r"gpusched\[ray\]"):
        fan_out(abs, [1], 1, LOCAL_RAY)
