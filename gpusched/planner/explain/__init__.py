"""explain: why a GPU pod (or job) is Pending, in the scheduler's words and in the hardware's, whether the GPUs are
gone or only fragmented, the one change that schedules it and what will not help.

Every change offered was applied to the model (`apply_edit`) and the target placed again; changes that touch other
pods come from the proven planners (preempt, defrag, mig plan).
"""

from __future__ import annotations

from ...models.cluster import Cluster
from ...models.workload import Pod
from ..optimize.disrupt import running_state
from ..optimize.solver import SolverConfig
from ..place import DEFAULT_GRADIENT_GB
from ..scheduler.plugins.gpudevices import GpuChoice
from .changes import Context, candidates
from .claim import check_claim, claim_for, explain_claim
from .edit import Edit, apply_edit, place_one
from .gang import explain_job, job_outcome
from .reasons import capacity, restate, scheduler_view
from .report import Change, Explanation, NotHelp

__all__ = [
    "Change",
    "Edit",
    "Explanation",
    "NotHelp",
    "apply_edit",
    "check_claim",
    "claim_for",
    "explain_claim",
    "explain_job",
    "explain_pod",
    "job_outcome",
    "place_one",
]


def explain_pod(
    cluster: Cluster, pod: Pod, config: SolverConfig | None = None, gradient_gb: float = DEFAULT_GRADIENT_GB
) -> Explanation:
    config = config or SolverConfig()
    state = running_state(cluster)
    found = place_one(cluster, pod, pod.gpus)
    scheduler = scheduler_view(cluster, pod, pod.gpus)
    if isinstance(found, GpuChoice):
        return Explanation(
            target=pod.name,
            kind="pod",
            fits=True,
            node=found.node.name,
            scheduler=scheduler,
            capacity=capacity(state, pod, pod.gpus, found, None),
        )
    changes, useless = candidates(Context(cluster, pod, state, found, config, gradient_gb))
    moves = next((len(change.edit.moves) for change in changes if change.kind == "move"), None)
    return Explanation(
        target=pod.name,
        kind="pod",
        fits=False,
        scheduler=scheduler,
        reasons=restate(found, state, pod, pod.gpus),
        capacity=capacity(state, pod, pod.gpus, found, moves),
        changes=changes,
        will_not_help=useless,
    )
