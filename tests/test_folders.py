"""One place computes gpusched's own folders (platformdirs): the apply journals, the control plane cache and the
openb trace all follow it, and the XDG variables."""

from __future__ import annotations

from gpusched import folders
from gpusched.actions.journal import state_dir
from gpusched.conformance.build import cache_root
from gpusched.scenarios.openb import OPENB_ENV, openb_dir


def test_every_folder_comes_from_one_place(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("GPUSCHED_CACHE_DIR", raising=False)
    monkeypatch.delenv(OPENB_ENV, raising=False)
    assert folders.cache_dir() == tmp_path / "cache" / "gpusched"
    assert state_dir() == folders.state_dir() == tmp_path / "state" / "gpusched"
    assert cache_root() == tmp_path / "cache" / "gpusched" / "conformance"
    assert openb_dir() == tmp_path / "cache" / "gpusched" / "openb"
    monkeypatch.setenv("GPUSCHED_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine" / "conformance"  # the project's own override still wins


def test_without_xdg_the_linux_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert folders.cache_dir() == tmp_path / ".cache" / "gpusched"
    assert folders.state_dir() == tmp_path / ".local" / "state" / "gpusched"
