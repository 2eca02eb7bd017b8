"""GPU sharing in thousandths of a GPU (the FGD paper's model of Alibaba's cluster): state, fragmentation, policies."""

from .frag import TargetWorkload, target_workload
from .policies import FGD_POLICIES, GPUSCHED_POLICIES, POLICIES, SharePolicy, policy_named
from .state import PodTable, SharePod, ShareState

__all__ = [
    "FGD_POLICIES",
    "GPUSCHED_POLICIES",
    "POLICIES",
    "PodTable",
    "SharePod",
    "SharePolicy",
    "ShareState",
    "TargetWorkload",
    "policy_named",
    "target_workload",
]
