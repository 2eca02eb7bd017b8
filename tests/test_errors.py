"""The CLI's error types survive a trip through a worker process (pickled as they were made)."""

from __future__ import annotations

import pickle

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
