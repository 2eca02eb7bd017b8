"""Random scenarios on the real scheduler: every pod's outcome (and every claim's allocation) must be gpusched's."""

from __future__ import annotations

from gpusched.conformance.differential import run

SCENARIOS = 60


def test_random_scenarios_agree_with_the_real_scheduler(rest, control_plane):
    report = run(rest, control_plane.info.version, seed=2026, count=SCENARIOS)
    assert report.pods > SCENARIOS
    assert report.dra_scenarios > 10 and report.allocated > 0  # claims were allocated, and compared
    assert report.preemption_scenarios > 5
    assert report.disagreements == [], report.model_dump_json(indent=2)
