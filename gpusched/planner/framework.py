# TEMPORARY re-export shim: removed when the branches merge
"""Moved to `scheduler/framework.py`."""

from __future__ import annotations

from .scheduler.framework import Code, Diagnosis, Status, fit_error

__all__ = ["Code", "Diagnosis", "Status", "fit_error"]
