"""Random scenarios on the real scheduler: every pod's outcome must be gpusched's prediction."""

from __future__ import annotations

from gpusched.conformance.differential import run

SCENARIOS = 60


def test_random_scenarios_agree_with_the_real_scheduler(rest, control_plane):
    report = run(rest, control_plane.info.version, seed=2026, count=SCENARIOS)
    assert report.pods > SCENARIOS
    assert report.disagreements == [], report.model_dump_json(indent=2)
