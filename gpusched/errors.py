"""The errors every layer raises, one hierarchy (after httpx's `_exceptions.py`), and the exit code of each.

    GpuschedError
    ├── InputError        unreadable or invalid input: which file, which field, what was expected   exit 2
    │   └── LimitError    input past a documented limit (count, size, quantity, time)               exit 2
    ├── Infeasible        a well-formed request with no answer (or none found in time)               exit 1
    ├── ClusterError      the API server or the transport failed (status, timeout, malformed answer)
    │                     exit 2 when nothing was touched, 1 once a run changed the cluster
    ├── Interrupted       a signal stopped the run after its cleanup                                 128 + signal
    └── MissingExtra      an optional dependency is not installed                                    exit 2

Anything else that escapes the library is a bug in gpusched: the CLI maps it to `INTERNAL` (exit 3) with one line
asking for a report. A library error names files and fields, never CLI flags; only the CLI names flags.
"""

from __future__ import annotations

import importlib
import signal
from types import ModuleType

__all__ = [
    "GpuschedWarning",
    "GpuschedError",
    "InputError",
    "LimitError",
    "Infeasible",
    "ClusterError",
    "Interrupted",
    "MissingExtra",
    "require",
    "INTERNAL",
]

INTERNAL = 3  # the exit code of an unexpected exception: a gpusched bug, never the user's input


class GpuschedWarning(UserWarning):
    """Input gpusched reads but doubts (an unknown GPU model): the CLI prints `warning: ...` on stderr and goes on."""


class GpuschedError(Exception):
    """The root of every error gpusched means to raise; `exit_code` is what the CLI exits with."""

    exit_code = 2


class InputError(GpuschedError):
    """Bad input. The CLI prints it and exits 2; nothing is written."""

    def __init__(self, source: str, message: str, field: str = "") -> None:
        self.source = source
        self.field = field
        self.message = message
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {message}" if where else message)  # no source: a command line's own words

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str, str]]:
        """Picklable as it was made, so that an error in a worker process reaches the CLI as itself."""
        return type(self), (self.source, self.message, self.field)


class LimitError(InputError):
    """Input past a documented limit (how many nodes, how large a file or quantity): named, with the limit."""


class Infeasible(GpuschedError):
    """A well-formed request with no answer, or none found in the time limit: the CLI prints it and exits 1."""

    exit_code = 1


class ClusterError(GpuschedError):
    """The API server or the way to it failed: `server` and `request` say which call; `touched` whether this run
    had already changed the cluster (then exit 1 and the journal says where to resume; else exit 2)."""

    def __init__(self, server: str, request: str, message: str, touched: bool = False) -> None:
        self.server, self.request, self.message, self.touched = server, request, message, touched
        super().__init__(f"{server}: {request}: {message}" if request else f"{server}: {message}")

    @property
    def exit_code(self) -> int:  # type: ignore[override]
        return 1 if self.touched else 2

    def __reduce__(self) -> tuple[type[ClusterError], tuple[str, str, str, bool]]:
        return type(self), (self.server, self.request, self.message, self.touched)


class Interrupted(GpuschedError):
    """A signal (SIGINT, SIGTERM, SIGHUP) stopped the run after its cleanup: exit 128 + the signal's number."""

    def __init__(self, signum: int, message: str = "") -> None:
        self.signum = signum
        super().__init__(message or f"interrupted by {signal.Signals(signum).name}")

    @property
    def exit_code(self) -> int:  # type: ignore[override]
        return 128 + self.signum

    def __reduce__(self) -> tuple[type[Interrupted], tuple[int, str]]:
        return type(self), (self.signum, str(self))


class MissingExtra(GpuschedError):
    """An optional dependency is missing: the CLI prints the one pip command that installs it and exits 2."""

    def __init__(self, module: str, extra: str) -> None:
        self.module, self.extra = module, extra
        super().__init__(f"this needs {module}, which is not installed: pip install 'gpusched[{extra}]'")

    def __reduce__(self) -> tuple[type[MissingExtra], tuple[str, str]]:
        return type(self), (self.module, self.extra)


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, from the package extra `extra`: heavy dependencies a core user does not need are extras."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(module, extra) from None
