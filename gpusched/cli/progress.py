"""Progress bars on stderr for the commands that run for minutes, so a terminal never sits silent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from .common import err

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(label: str, total: int | None = None, console: Console = err) -> Iterator[Callable[[int, int], None]]:
    """A bar updated by (done, total), a clock until the total is known; only on a terminal (logs, pipes and
    stdout stay clean), and gone when done."""
    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda done, of: bar.update(task, completed=done, total=of)
