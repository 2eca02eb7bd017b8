"""gpusched: a GPU placement planner for Kubernetes.

The library API; the `gpusched` command (gpusched.cli) is a thin layer over it and the library never prints.
"""

from .errors import InputError
from .models.cluster import BusyGpu, Cluster, GpuBlock, MigInstance, Node
from .models.graph import build_graph
from .models.workload import Job, JobList, Pod, PodList
from .planner.frag import FragReport, fragmentation
from .planner.gang import GangReport, simulate
from .planner.k8s import K8sPrediction, predict
from .planner.place import PlaceReport, place
from .planner.state import ClusterState, advertised
from .planner.validate import Assignment, violations
from .scenarios import load_cluster, load_jobs, load_pods, load_scenario, scenario_names

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
