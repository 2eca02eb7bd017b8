"""`validate` refuses plans that short a pod of GPUs or name GPUs that do not exist; `plan` refuses 0-GPU pods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .harness import invoke


def _plan(tmp_path: Path, gpus: list[int]) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(
        json.dumps(
            {
                "jobs": [{"name": "big", "pods": 1, "gpus": 6, "needs": {}}],
                "assignments": [{"pod": "big", "job": "big", "node": "dgx-a", "gpus": gpus}],
            }
        )
    )
    return path


def _cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - {name: dgx-a, gpu: {model: A100-SXM4-80GB, count: 8, memory_gib: 80}}\n")
    return path


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ([0], "given 1 GPU(s), asked for 6"),
        ([-1, 0, 1, 2, 3, 4], "GPU index -1 out of range"),
    ],
)
def test_validate_refuses(tmp_path: Path, gpus: list[int], expected: str) -> None:
    outcome = invoke("validate", _cluster(tmp_path), _plan(tmp_path, gpus))
    assert not outcome.crash and outcome.code == 1 and expected in outcome.stdout, outcome


def test_validate_accepts_a_whole_pod(tmp_path: Path) -> None:
    outcome = invoke("validate", _cluster(tmp_path), _plan(tmp_path, [0, 1, 2, 3, 4, 5]))
    assert not outcome.crash and outcome.code == 0, outcome


def test_plan_refuses_a_pod_without_gpus(tmp_path: Path) -> None:
    pods = tmp_path / "pods.yaml"
    pods.write_text("pods: [{name: z, gpus: 0}]\n")
    outcome = invoke("plan", "monday", "--pending", pods)
    assert not outcome.crash and outcome.code == 2 and "gpus must be at least 1" in outcome.stderr, outcome
    assert str(pods) in outcome.stderr, outcome  # the message names the file


def test_a_model_past_cp_sats_range_is_refused_not_infeasible() -> None:
    """Numbers CP-SAT cannot hold are bad input (exit 2), never "INFEASIBLE" (exit 1)."""
    from ortools.sat.python import cp_model

    from gpusched.planner.optimize.solver import SolverConfig, solve_lexicographic

    model = cp_model.CpModel()
    x = model.new_int_var(0, 2**62, "x")
    with pytest.raises(ValueError, match="beyond what CP-SAT can solve"):
        solve_lexicographic(model, [("level", "maximize", 4 * x)], SolverConfig(time_limit=1))
