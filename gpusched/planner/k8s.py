# TEMPORARY re-export shim: removed when the branches merge
"""Moved to `scheduler/predict.py`."""

from __future__ import annotations

from .scheduler.predict import K8sPrediction, parse_version, predict, predict_files

__all__ = ["K8sPrediction", "parse_version", "predict", "predict_files"]
