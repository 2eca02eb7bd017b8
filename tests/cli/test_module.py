"""`python3 -m gpusched` is the same CLI as the `gpusched` command."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run([sys.executable, "-m", "gpusched", "scenarios"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "monday" in done.stdout


def test_python_dash_m_exits_2_on_bad_input() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpusched", "frag", "no-such-file.yaml"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "no-such-file.yaml" in done.stderr
