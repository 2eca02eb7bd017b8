"""The fuzz suite's hypothesis profiles: a short one for every test run, a long one with GPUSCHED_FUZZ=long."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "gpusched-fuzz",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "gpusched-fuzz-long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PROFILE = settings.get_profile("gpusched-fuzz-long" if os.environ.get("GPUSCHED_FUZZ") == "long" else "gpusched-fuzz")
