"""SchedulingGates: a pod with spec.schedulingGates never leaves PreEnqueue, so no scheduling cycle judges it.

The scheduler writes nothing; the API server set its PodScheduled condition when the pod was created, with the
reason and message below (pkg/registry/core/pod), and the pod stays so until the last gate is removed.
"""

from __future__ import annotations

from ....models.kube import KubePod
from ..names import SCHEDULING_GATES as NAME

__all__ = ["NAME", "ERR_REASON", "CONDITION_REASON", "CONDITION_MESSAGE", "pre_enqueue"]

ERR_REASON = "waiting for scheduling gates: [{gates}]"  # the PreEnqueue status, seen only in the scheduler's log
CONDITION_REASON = "SchedulingGated"
CONDITION_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def pre_enqueue(pod: KubePod) -> str:
    """'' when the pod may be queued, else why it may not."""
    return ERR_REASON.format(gates=" ".join(pod.scheduling_gates)) if pod.scheduling_gates else ""
