"""One module per scheduler plugin, each with its `NAME` and its reason strings (`ERR_REASON_*`).

Nothing is imported here, so that `planner/dra/` can use one plugin's constants without loading the others.
"""

from __future__ import annotations

__all__: list[str] = []
