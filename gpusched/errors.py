"""The errors every layer raises: unreadable input (naming the file, the field and what was expected), a request
with no answer, and an optional dependency that is not installed."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["InputError", "Infeasible", "MissingExtra", "require"]


class InputError(Exception):
    """Bad input. The CLI prints it and exits 2; nothing is written."""

    def __init__(self, source: str, message: str, field: str = "") -> None:
        self.source = source
        self.field = field
        self.message = message
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str, str]]:
        """Picklable as it was made, so that an error in a worker process reaches the CLI as itself."""
        return type(self), (self.source, self.message, self.field)


class Infeasible(Exception):
    """A well-formed request with no answer, or none found in the time limit: the CLI prints it and exits 1."""


class MissingExtra(Exception):
    """An optional dependency is missing: the CLI prints the one pip command that installs it and exits 2."""

    def __init__(self, module: str, extra: str) -> None:
        self.module, self.extra = module, extra
        super().__init__(f"this needs {module}, which is not installed: pip install 'gpusched[{extra}]'")


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, from the package extra `extra`: heavy dependencies a core user does not need are extras."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(module, extra) from None
