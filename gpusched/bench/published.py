"""The FGD paper's published GPU allocation (%) at 130% arrived workload, mean of 10 seeds (42-51), per trace.

From the simulator's experiments/analysis/expected_results/analysis_allo_discrete.csv (Weng et al., ATC 2023);
see shared/reference/fgd.md.
"""

from __future__ import annotations

__all__ = ["PUBLISHED", "published"]

_POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
_ROWS = {
    "default": (87.47, 90.85, 91.88, 92.00, 93.08, 95.39),
    "cpu050": (91.24, 93.27, 93.79, 93.72, 93.79, 95.21),
    "cpu100": (89.11, 91.96, 92.64, 92.72, 93.44, 95.35),
    "cpu200": (83.77, 87.70, 89.92, 90.22, 92.40, 95.04),
    "gpushare40": (86.00, 89.56, 90.02, 90.03, 91.69, 94.15),
    "gpushare60": (83.65, 87.12, 87.20, 87.45, 89.36, 91.40),
    "gpushare80": (81.22, 84.49, 84.85, 85.00, 87.01, 89.30),
    "gpuspec20": (87.24, 89.97, 92.24, 92.94, 93.30, 94.84),
    "gpuspec25": (86.94, 89.63, 92.08, 92.98, 93.23, 94.74),
    "gpuspec33": (86.46, 89.14, 92.12, 93.22, 93.09, 94.55),
    "multigpu20": (88.69, 92.06, 93.56, 93.71, 93.93, 95.65),
    "multigpu30": (89.27, 93.28, 94.72, 94.87, 94.72, 96.46),
    "multigpu40": (90.09, 94.19, 95.50, 95.74, 95.24, 96.99),
}
PUBLISHED: dict[str, dict[str, float]] = {trace: dict(zip(_POLICIES, row, strict=True)) for trace, row in _ROWS.items()}


def published(trace: str, policy: str) -> float | None:
    """The published number, or None (a trace or policy the paper did not run)."""
    return PUBLISHED.get(trace, {}).get(policy)
