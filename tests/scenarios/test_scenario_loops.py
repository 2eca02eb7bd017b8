"""A scenario that reuses another's cluster by name: a loop of them is one clear error, never a RecursionError."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusched.errors import InputError
from gpusched.scenarios import load_scenario


def test_a_scenario_naming_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("self.yaml").write_text("cluster: self.yaml\n")
    with pytest.raises(InputError, match=r"name each other as their cluster \(self.yaml -> self.yaml\)"):
        load_scenario("self.yaml")
    with pytest.raises(InputError, match="name each other"):
        load_scenario("./self.yaml")


def test_two_scenarios_naming_each_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.yaml").write_text("cluster: b.yaml\n")
    Path("b.yaml").write_text("cluster: a.yaml\n")
    with pytest.raises(InputError, match=r"a.yaml -> b.yaml -> a.yaml"):
        load_scenario("a.yaml")


def test_a_chain_without_a_loop_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.yaml").write_text("cluster: b.yaml\n")
    Path("b.yaml").write_text("cluster: monday\n")
    assert load_scenario("a.yaml").cluster == load_scenario("monday").cluster


def test_gpu_memory_past_an_int64_of_bytes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n- name: n\n  gpu: {model: A100-SXM4-80GB, count: 1, memory_gib: 1e308}\n")
    with pytest.raises(InputError, match=r"nodes\[0\]\(n\).gpu.memory_gib: Input should be less than or equal"):
        load_scenario(str(path))
