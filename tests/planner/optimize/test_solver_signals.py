"""A CP-SAT solve leaves the process's signal handlers as it found them.

OR-Tools' default (`catch_sigint_signal`) installs its own SIGINT handler for the solve and afterwards resets
SIGINT to the system default at the C level, while Python's `signal.getsignal` still reports the old handler: a
later Ctrl-C then kills the process without running any cleanup. So these tests read the handler the kernel has
(sigaction), not Python's record of it, and send a real SIGINT after a real solve.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import textwrap

import pytest
from ortools.sat.python import cp_model

from gpusched.planner.optimize.solver import SolverConfig, solve_lexicographic

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads struct sigaction (Linux)")


class _Sigaction(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16), ("flags", ctypes.c_int),
                ("restorer", ctypes.c_void_p)]  # fmt: skip


def kernel_handler(signum: int) -> int:
    """The address of the handler the kernel runs for `signum` (0: SIG_DFL)."""
    found = _Sigaction()
    assert ctypes.CDLL(None).sigaction(signum, None, ctypes.byref(found)) == 0
    return int(found.handler or 0)


def tiny_model() -> tuple[cp_model.CpModel, cp_model.IntVar]:
    model = cp_model.CpModel()
    x = model.new_int_var(0, 10, "x")
    model.add(x <= 7)
    return model, x


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_lexicographic_solve_keeps_the_kernel_handlers(signum):
    previous = signal.signal(signum, lambda *_: None)
    try:
        before = kernel_handler(signum)
        assert before != 0
        model, x = tiny_model()
        _, report = solve_lexicographic(model, [("x", "maximize", x)], SolverConfig(time_limit=1, workers=1))
        assert report.optimal and report.levels[0].objective == 7
        assert kernel_handler(signum) == before
    finally:
        signal.signal(signum, previous)


def test_the_mig_tie_break_solve_keeps_the_kernel_handler():
    from gpusched.planner.optimize.mig import plan_mig
    from gpusched.scenarios import load_cluster

    previous = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        before = kernel_handler(signal.SIGINT)
        plan = plan_mig(load_cluster("fragmented"), {"3g.40gb": 1}, SolverConfig(time_limit=5, workers=1))
        assert plan.outcome.met
        assert kernel_handler(signal.SIGINT) == before
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_real_sigint_after_a_solve_reaches_python():
    """The process solves, then signals itself: Python's KeyboardInterrupt, not death by SIGINT."""
    script = textwrap.dedent(
        """
        import os, signal, time
        from ortools.sat.python import cp_model
        from gpusched.planner.optimize.solver import SolverConfig, solve_lexicographic
        model = cp_model.CpModel()
        x = model.new_int_var(0, 10, "x")
        solve_lexicographic(model, [("x", "maximize", x)], SolverConfig(time_limit=1, workers=1))
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            print("cleanup ran")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "cleanup ran"), done.stderr
