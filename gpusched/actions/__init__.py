"""Actions on a live cluster: what gpusched writes to an API server, above the planner: server-side apply of
generated objects, and `--apply` runs (evictions, moves, MIG repartitions, bindings) with their journal."""

from __future__ import annotations

from .apply import FIELD_MANAGER, AppliedChange, ApplyReport, apply_objects
from .journal import Journal, Step, load_journal
from .run import carry_out, journal_status, resume
from .runner import RunOutcome

__all__ = [
    "FIELD_MANAGER", "AppliedChange", "ApplyReport", "Journal", "RunOutcome", "Step", "apply_objects", "carry_out",
    "journal_status", "load_journal", "resume",
]  # fmt: skip
