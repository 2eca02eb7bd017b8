"""Round two's classes, each a generator in tests/fuzz/mutate.py: every output, kubeconfig, live answer, limit
variable, CEL selector and round one's leftovers, drawn at random and judged as every case is."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import PROFILE
from .mutate import cel_case, check, kubeconfig_case, leftover_case, limit_case, live_case, output_case

pytestmark = pytest.mark.fuzz


@pytest.mark.parametrize(
    "make", [output_case, kubeconfig_case, live_case, limit_case, cel_case, leftover_case], ids=lambda f: f.__name__
)
@settings(PROFILE, max_examples=min(PROFILE.max_examples, 10))
@given(rng=st.randoms(use_true_random=False))
def test_round_two(make, rng: random.Random) -> None:
    case = make(rng)
    with tempfile.TemporaryDirectory() as folder:
        outcome, problems = check(case, Path(folder))
    assert not problems, (case.describe, problems, outcome)
