"""Run the CLI in-process on hostile input and judge the outcome: the one definition of "handled".

Handled means: no exception but SystemExit escaped the command (a traceback exits 1 and reads as Pending), the exit
code is 0, 1 or 2, a refusal (2) is one line on stderr naming the input, and no temporary file is left behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from gpusched.cli import app

__all__ = ["Outcome", "invoke", "leftovers"]


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    crash: str  # the escaped exception, "" when none


def invoke(*args: str) -> Outcome:
    result = CliRunner().invoke(app, [str(arg) for arg in args], catch_exceptions=True)
    exception = result.exception
    crash = "" if exception is None or isinstance(exception, SystemExit) else f"{type(exception).__name__}: {exception}"
    return Outcome(result.exit_code, result.stdout, result.stderr, crash[:500])


def leftovers(folder: Path) -> list[Path]:
    """Temporary files a writer left in `folder` (the safe writer stages `.NAME.*.partial`)."""
    return [path for path in folder.rglob("*") if path.name.endswith(".partial")]
