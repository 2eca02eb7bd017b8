"""The CLI's error types survive a trip through a worker process (pickled as they were made)."""

from __future__ import annotations

import pickle

import pytest

from gpusched.errors import InputError


def test_input_error_pickles_as_it_was_made():
    error = InputError("pods.csv", "expected an integer", field="line 3 (p-1)")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is InputError
    assert (back.source, back.field, back.message, str(back)) == (
        "pods.csv",
        "line 3 (p-1)",
        "expected an integer",
        "pods.csv: line 3 (p-1): expected an integer",
    )


@pytest.mark.parametrize("raw", ["inf", "1e308", "-1", "nan", "0", "abc", "1e400"])
def test_a_limit_variable_out_of_range_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    from gpusched.limits import setting

    monkeypatch.setenv("GPUSCHED_READ_TIMEOUT", raw)
    with pytest.raises(
        InputError, match=r"\$GPUSCHED_READ_TIMEOUT: expected a number of seconds more than 0 and at most"
    ):
        setting("GPUSCHED_READ_TIMEOUT", 60.0)
    monkeypatch.setenv("GPUSCHED_MAX_NODES", raw)
    with pytest.raises(InputError, match=r"\$GPUSCHED_MAX_NODES: expected a whole number more than 0"):
        setting("GPUSCHED_MAX_NODES", 100)


def test_a_limit_variable_in_range_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusched.limits import setting

    monkeypatch.setenv("GPUSCHED_READ_TIMEOUT", " 2.5 ")
    monkeypatch.setenv("GPUSCHED_MAX_NODES", "")
    assert setting("GPUSCHED_READ_TIMEOUT", 60.0) == 2.5 and setting("GPUSCHED_MAX_NODES", 100) == 100


def test_a_bad_limit_read_at_import_is_one_line_from_the_cli() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "gpusched", "place", "monday"],
        env={**__import__("os").environ, "GPUSCHED_MAX_NODES": "nan"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr == (
        "error: $GPUSCHED_MAX_NODES: expected a whole number more than 0, got 'nan'\n"
    ), done.stderr
