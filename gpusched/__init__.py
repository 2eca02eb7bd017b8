"""gpusched: a GPU placement planner for Kubernetes.

The library API; the `gpusched` command (gpusched.cli) is a thin layer over it and the library never prints.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Assignment": ".planner.validate",
    "BusyGpu": ".models.cluster",
    "Cluster": ".models.cluster",
    "ClusterState": ".planner.state",
    "FragReport": ".planner.frag",
    "GangReport": ".planner.gang",
    "GpuBlock": ".models.cluster",
    "InputError": ".errors",
    "Job": ".models.workload",
    "JobList": ".models.workload",
    "K8sPrediction": ".planner.scheduler.predict",
    "MigInstance": ".models.cluster",
    "Node": ".models.cluster",
    "PlaceReport": ".planner.place",
    "Pod": ".models.workload",
    "PodList": ".models.workload",
    "advertised": ".planner.state",
    "build_graph": ".models.graph",
    "fragmentation": ".planner.frag",
    "load_cluster": ".scenarios",
    "load_jobs": ".scenarios",
    "load_pods": ".scenarios",
    "load_scenario": ".scenarios",
    "place": ".planner.place",
    "predict": ".planner.scheduler.predict",
    "scenario_names": ".scenarios",
    "simulate": ".planner.gang",
    "violations": ".planner.validate",
}

__all__ = [
    "Assignment",
    "BusyGpu",
    "Cluster",
    "ClusterState",
    "FragReport",
    "GangReport",
    "GpuBlock",
    "InputError",
    "Job",
    "JobList",
    "K8sPrediction",
    "MigInstance",
    "Node",
    "PlaceReport",
    "Pod",
    "PodList",
    "advertised",
    "build_graph",
    "fragmentation",
    "load_cluster",
    "load_jobs",
    "load_pods",
    "load_scenario",
    "place",
    "predict",
    "scenario_names",
    "simulate",
    "violations",
]


def __getattr__(name: str) -> Any:
    """Exports load on first use: the CLI imports this package, and need not pay for every solver."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module 'gpusched' has no attribute {name!r}")
