"""Pictures the CLI draws (PNG, SVG or PDF, by the file name): the path checked before any work, the figure written
before the report, one line saying where it went. matplotlib (through gpusched.cli.plots) loads only when a figure
is asked for.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import require
from .common import check_output, err, out, usage

__all__ = ["FIGURE_FORMATS", "figure_target", "save_figure", "wrote"]

FIGURE_FORMATS = ("png", "svg", "pdf")
_ENDINGS = "a file name ending in .png, .svg or .pdf"


def figure_target(option: str, name: str | None) -> Path | None:
    """Refuse a path that cannot take a picture (or a missing matplotlib) before anything is loaded: nothing is
    written."""
    if name is None:
        return None
    if not name.strip():
        raise usage(f"{option}: expected a file name")
    require("matplotlib", "plots")
    path = Path(name)
    if len(os.fsencode(path.name)) > 255:  # the system would refuse even to look it up
        check_output(option, name)
    if path.is_dir():
        raise usage(f"{option}: {path} is a folder; give {_ENDINGS}")
    if path.suffix.lower().lstrip(".") not in FIGURE_FORMATS:
        raise usage(f"{option}: {path}: expected {_ENDINGS}")
    folder = path.parent
    if not folder.is_dir():
        raise usage(f"{option}: {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise usage(f"{option}: {path}: the folder {folder} is not writable")
    check_output(option, str(path))
    return path


def save_figure(option: str, path: Path | None, figure: str, *data: Any) -> None:
    """Draw `data` with gpusched.cli.plots' function named `figure` and write it to `path` (nothing when None)."""
    if path is None:
        return
    from . import plots  # matplotlib only when a picture is wanted

    plots.save(getattr(plots, figure)(*data), path)


def wrote(path: Path | None, as_json: bool) -> None:
    """Say where the picture went: after the text report, or on stderr so that --json stays one document."""
    if path is not None:
        (err if as_json else out).print(f"wrote {path}", markup=False)
