"""SIGINT, SIGTERM and SIGHUP during an `--apply` run: each becomes `Signalled`, which unwinds to the runner; the
runner cleans up (its cordons, an incomplete gang) with further signals held back, journals the run as
interrupted, and raises gpusched.errors.Interrupted (exit 128 + the signal's number).

`Signalled` is a BaseException, like KeyboardInterrupt: an `except Exception` in a library the run calls (the
kubernetes client, urllib3) does not swallow it. Handlers are Python's, so they run between bytecodes of the main
thread: a signal that arrives during a CP-SAT solve is handled when the solve returns (its time limit bounds the
wait; gpusched.planner.optimize.solver keeps OR-Tools from replacing the handler).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["SIGNALS", "Held", "Signalled", "handled", "held"]

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Signalled(BaseException):  # noqa: N818 - like KeyboardInterrupt
    """A signal arrived: `signum` says which."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Signalled(signum)


@contextmanager
def _installed(handler: signal.Handlers | object) -> Iterator[None]:
    """`handler` for SIGNALS in the block, the previous handlers after it; nothing outside the main thread (where
    Python cannot install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in SIGNALS}  # type: ignore[arg-type]
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextmanager
def handled() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise Signalled in the block."""
    with _installed(_raise):
        yield


class Held:
    """The first signal that arrived while signals were held (None: none did)."""

    signum: int | None = None


@contextmanager
def held() -> Iterator[Held]:
    """Signals arriving in the block are noted, not acted on: a cleanup runs to its end. Ctrl-C twice does not cut
    it short; SIGKILL still does (and the journal says where to resume)."""
    found = Held()

    def note(signum: int, frame: FrameType | None) -> None:
        if found.signum is None:
            found.signum = signum

    with _installed(note):
        yield found
