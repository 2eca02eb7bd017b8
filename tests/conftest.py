from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpusched.cli import app
from gpusched.scenarios.openb import OPENB_ENV

# The project keeps the openb trace beside the repository (CI has it there); a user's own $GPUSCHED_OPENB wins.
_SHARED_OPENB = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "openb"
if _SHARED_OPENB.is_dir():
    os.environ.setdefault(OPENB_ENV, str(_SHARED_OPENB))


class Result:
    def __init__(self, exit_code: int, stdout: str, stderr: str) -> None:
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    @property
    def words(self) -> list[list[str]]:
        """Each output line split on whitespace: table rows compare independent of column padding."""
        return [line.split() for line in self.lines]

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def gpusched():
    """Run the CLI in-process; stdout and stderr apart, exceptions propagate (a traceback fails the test)."""
    runner = CliRunner()

    def run(*args: str) -> Result:
        result = runner.invoke(app, [str(arg) for arg in args], catch_exceptions=False)
        return Result(result.exit_code, result.stdout, result.stderr)

    return run


@pytest.fixture
def write(tmp_path: Path):
    """Write a document (dict/list as JSON, str as is) into tmp_path and return its path."""

    def make(name: str, content) -> Path:
        path = tmp_path / name
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    return make
