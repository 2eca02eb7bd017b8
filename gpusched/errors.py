"""The one error type for unreadable input: it names the file, the field and what was expected."""

from __future__ import annotations

__all__ = ["InputError", "Infeasible"]


class InputError(Exception):
    """Bad input. The CLI prints it and exits 2; nothing is written."""

    def __init__(self, source: str, message: str, field: str = "") -> None:
        self.source = source
        self.field = field
        self.message = message
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {message}")


class Infeasible(Exception):
    """A well-formed request with no answer, or none found in the time limit: the CLI prints it and exits 1."""
