# TEMPORARY re-export shim: removed when the branches merge
"""Moved to `scheduler/plugins/defaultpreemption.py`."""

from __future__ import annotations

from .scheduler.plugins.defaultpreemption import (
    Candidate,
    budget_split,
    candidates_wanted,
    importance,
    pick,
    reprieve,
)

__all__ = ["Candidate", "budget_split", "candidates_wanted", "importance", "pick", "reprieve"]
