"""preempt: the smallest set of lower-priority pods to evict so that a pending pod or gang runs, proven by CP-SAT.

build (model.py) → solve → extract (extract.py) → validate (validate.py). Nodes identical up to pod names form one
node class, and CP-SAT chooses how many nodes of each class take each eviction choice: exact (a superset of
evictions is never better), and sized by the classes of node, not the number of nodes.

Objective, in order: the highest victim priority, the victims' GPUs (units: GPUs, replicas or MIG instances), the
number of victims, then the earliest nodes by name (so that runs repeat). Disruption budgets are hard limits.
Beside it, kube-scheduler's DefaultPreemption on the same input, pod by pod, in the GPU and the integer view
(baselines.py).
"""

from __future__ import annotations

from ....errors import InputError
from ....models.cluster import Cluster
from ....models.workload import Job, Pod
from ...deadline import Deadline
from ...scheduler.framework import Status, fit_error
from ...validate import require_valid
from ..disrupt import Budgets, out_of_time, running_state
from ..solver import Infeasible, SolverConfig
from .baselines import default_preemption
from .extract import assignments_of, cost_of, evicted, extract, placement_of
from .model import PreemptNodeClass, eviction_choices, node_classes, solve_evictions
from .report import Alternative, EvictedPod, EvictionCost, Pending, PendingInfo, Placement, PreemptReport
from .validate import preempt_violations

__all__ = [
    "Alternative",
    "EvictedPod",
    "EvictionCost",
    "Pending",
    "PendingInfo",
    "Placement",
    "PreemptReport",
    "preempt",
]


def _info(pending: Pending) -> PendingInfo:
    return PendingInfo(
        name=pending.name,
        kind=pending.kind,
        pods=pending.pods,
        gpus_per_pod=pending.gpus,
        priority=pending.needs.priority,
        nvlink=pending.needs.nvlink,
        mig_profile=pending.needs.mig_profile,
    )


def _no_room(pending: Pending, classes: list[PreemptNodeClass], statuses: dict[str, Status], total: int) -> str | None:
    """Why no eviction can help, when even every evictable lower-priority pod gone is not enough."""
    room = sum(len(node_class.nodes) * max(choice.pods for choice in node_class.choices) for node_class in classes)
    if room == 0:
        why = fit_error(total, statuses.values())
        return f"{pending.name} cannot run even with every evictable lower-priority pod gone: {why}"
    if room < pending.pods:
        return f"even with every evictable lower-priority pod gone there is room for {room} of its {pending.pods} pods"
    return None


def preempt(
    cluster: Cluster, item: Pod | Job, config: SolverConfig | None = None, deadline: Deadline | None = None
) -> PreemptReport:
    """The optimal eviction set for a pending pod or job, validated, beside kube-scheduler's DefaultPreemption
    (the floor, worked out first). One `deadline` (default: the time limit from now) covers every phase: the
    eviction choices stop at it and the solve gets what is left; past it the reason says what ran out."""
    config = config or SolverConfig()
    deadline = deadline or Deadline.start(config.time_limit)
    pending = Pending.of(item)
    running = {pod.name: pod.node for pod in cluster.running_pods()}
    for name in pending.pod_names():
        if name in running:
            raise InputError(name, f"is already running on {running[name]}: preempt plans for a pending pod")
    budgets = Budgets.of(cluster)
    floor = [default_preemption(cluster, pending, budgets, view) for view in ("gpu", "extended")]
    state = running_state(cluster)
    reserve = 0.05 + 2e-5 * len(state.nodes)  # extraction and validation
    classes: list[PreemptNodeClass] = []
    statuses: dict[str, Status] = {}
    for node_class in node_classes(state, cluster, pending, budgets):
        if deadline.passed(reserve):
            deadline.note("model")
            report = PreemptReport(pending=_info(pending), feasible=False, kinds=len(classes), comparison=floor)
            never = f"no plan found within the time limit of {config.time_limit:g} s (not proven impossible either)"
            return report.model_copy(update={"reason": f"{never}; out of time: model"})
        found = eviction_choices(node_class, state.node(node_class.nodes[0]), pending, budgets)
        if isinstance(found, Status):
            statuses.update({node: found for node in node_class.nodes})
        else:
            node_class.choices = found
            classes.append(node_class)
    report = PreemptReport(pending=_info(pending), feasible=False, kinds=len(classes), comparison=floor)
    reason = _no_room(pending, classes, statuses, len(state.nodes))
    if reason:
        return report.model_copy(update={"reason": reason})
    try:
        limited = config.model_copy(update={"time_limit": deadline.solve_seconds(reserve)})
        counts, solve = solve_evictions(classes, pending, budgets, limited)
    except Infeasible:
        names = sorted({budgets.names[i] for c in classes for ch in c.choices for i, n in enumerate(ch.budgets) if n})
        return report.model_copy(
            update={"reason": f"the evictions it needs would break disruption budgets: {', '.join(names)}"}
        )
    if counts is None:
        deadline.note("solve")
        timed_out = out_of_time(report, solve, config)
        return timed_out.model_copy(update={"reason": f"{timed_out.reason}; out of time: solve"})
    victims, placed = extract(classes, counts, state, pending)
    assignments = assignments_of(pending, placed)
    require_valid("a preemption plan", preempt_violations(cluster, pending, victims, assignments, budgets))
    return report.model_copy(
        update={
            "feasible": True,
            "victims": [evicted(v) for v in victims],
            "placements": [placement_of(n, o) for n, o in placed],
            "cost": cost_of(victims, budgets),
            "solve": solve,
        }
    )
