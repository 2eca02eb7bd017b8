"""Where gpusched keeps files of its own, in the one place that knows: the user's cache (the conformance control
plane's binaries, the openb trace) and state (apply journals) folders, as platformdirs finds them on each system
($XDG_CACHE_HOME or ~/.cache and $XDG_STATE_HOME or ~/.local/state on Linux)."""

from __future__ import annotations

from pathlib import Path

import platformdirs

__all__ = ["cache_dir", "state_dir"]

APP = "gpusched"


def cache_dir() -> Path:
    """The user's cache folder for gpusched (not created here)."""
    return platformdirs.user_cache_path(APP)


def state_dir() -> Path:
    """The user's state folder for gpusched (not created here)."""
    return platformdirs.user_state_path(APP)
