# TEMPORARY re-export shim: removed when the branches merge
"""The model views moved to `scheduler/views.py` and `scheduler/plugins/gpudevices.py`; `Option` is `GpuChoice`."""

from __future__ import annotations

from .scheduler.plugins.gpudevices import GpuChoice as Option
from .scheduler.plugins.gpudevices import choose_gpus, mismatch
from .scheduler.views import View, evaluate, node_filters

__all__ = ["Option", "View", "evaluate", "mismatch", "node_filters", "choose_gpus"]
