"""The `gpusched` command: parse, load, call one library function, render (rich text or --json).

Each module here registers its commands on the one Typer app; rendering lives beside the commands.
"""

from . import bench  # noqa: F401
from . import conformance  # noqa: F401
from . import core  # noqa: F401  (registers the core commands)
from . import dra  # noqa: F401
from . import importer  # noqa: F401
from . import mig  # noqa: F401
from . import plan  # noqa: F401
from . import repair  # noqa: F401
from .app import app, main

__all__ = ["app", "main"]
