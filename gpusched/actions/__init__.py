"""Actions on a live cluster: what gpusched writes to an API server (server-side apply), above the planner."""

from __future__ import annotations

from .apply import FIELD_MANAGER, AppliedChange, ApplyReport, apply_objects

__all__ = ["FIELD_MANAGER", "AppliedChange", "ApplyReport", "apply_objects"]
