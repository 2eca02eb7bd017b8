"""GPU sharing in thousandths of a GPU (the FGD paper's model of Alibaba's cluster): state, fragmentation, and the
share policies (the online rules `bench openb` compares; one registry, SHARE_POLICIES)."""

from .frag import TargetWorkload, target_workload
from .policies import (
    FGD_POLICIES,
    GPUSCHED_POLICIES,
    SHARE_POLICIES,
    PolicyArgs,
    PolicyRegistry,
    PolicySpec,
    SharePolicy,
    share_policy,
)
from .state import PodTable, SharePod, ShareState

__all__ = [
    "FGD_POLICIES",
    "GPUSCHED_POLICIES",
    "SHARE_POLICIES",
    "PodTable",
    "PolicyArgs",
    "PolicyRegistry",
    "PolicySpec",
    "SharePod",
    "SharePolicy",
    "ShareState",
    "TargetWorkload",
    "share_policy",
    "target_workload",
]
