"""kube-scheduler's answer to the same question: DefaultPreemption on the same input, pod by pod, in a view."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ....models.cluster import Cluster, RunningPod
from ...place import Placer
from ...scheduler.framework import Code, Diagnosis, Status
from ...scheduler.plugins.defaultpreemption import (
    Candidate,
    budget_split,
    candidates_wanted,
    importance,
    pick,
    reprieve,
)
from ...scheduler.plugins.gpudevices import GpuChoice
from ...scheduler.views import View, evaluate
from ...state import ClusterState, NodeState
from ..disrupt import Budgets, problems, running_state
from .extract import assignments_of, cost_of, evicted, placement_of
from .model import place_pending
from .report import Alternative, Pending

__all__ = ["default_preemption"]


@dataclass(frozen=True)
class _Evictable:
    """A running pod as DefaultPreemption sees a victim (gpusched's model has no start times)."""

    pod: RunningPod
    start_time: datetime | None = None

    @property
    def priority(self) -> int:
        return self.pod.needs.priority


def _node_candidate(
    node: NodeState, alive: list[RunningPod], pending: Pending, budgets: Budgets, left: list[int], view: View
) -> Candidate[_Evictable] | None:
    """SelectVictimsOnNode: all lower-priority pods out; if the pod fits, reprieve as many as possible."""
    lower = [_Evictable(pod) for pod in alive if pod.needs.priority < pending.needs.priority]

    def fits(gone: list[_Evictable]) -> bool:
        return place_pending(node, [e.pod for e in gone], pending, 1, view)[1] is None

    if not lower or not fits(lower):
        return None
    violating, fine = budget_split(sorted(lower, key=importance), left, lambda i, e: i in budgets.selecting(e.pod))
    victims = reprieve(violating, fine, fits)
    return Candidate(node.name, victims, sum(1 for victim in victims if victim in violating))


def _dry_run(
    state: ClusterState,
    diagnosis: Diagnosis,
    alive: dict[str, list[RunningPod]],
    pending: Pending,
    budgets: Budgets,
    left: list[int],
    view: View,
) -> list[Candidate[_Evictable]]:
    """DryRunPreemption over the Unschedulable nodes in order (the scheduler starts at a random offset), until it
    has enough candidates and one of them breaks no budget."""
    wanted = candidates_wanted(len(state.nodes))
    candidates: list[Candidate[_Evictable]] = []
    for node in state.nodes:
        if diagnosis.statuses[node.name].code is not Code.UNSCHEDULABLE:
            continue
        candidate = _node_candidate(node, alive[node.name], pending, budgets, left, view)
        if candidate is not None:
            candidates.append(candidate)
            if len(candidates) >= wanted and any(c.budget_violations == 0 for c in candidates):
                break
    return candidates


def default_preemption(cluster: Cluster, pending: Pending, budgets: Budgets, view: View) -> Alternative:
    """DefaultPreemption pod by pod (the scheduler knows no gangs); ties go to the first node."""
    label = f"kube, {view} view"
    state = running_state(cluster)
    placer = Placer(state, view, "binpack")
    alive: dict[str, list[RunningPod]] = {node.name: [] for node in state.nodes}
    for pod in cluster.running_pods():
        alive[pod.node].append(pod)
    left = list(budgets.allowed)
    victims: list[RunningPod] = []
    placed: list[tuple[str, GpuChoice]] = []
    for name in pending.pod_names():
        found = placer.best(pending.needs, pending.gpus)
        if isinstance(found, Diagnosis):
            candidates = _dry_run(state, found, alive, pending, budgets, left, view)
            if not candidates:
                return Alternative(
                    name=label,
                    found=False,
                    victims=[evicted(v) for v in victims],
                    note=f"{name} stays Pending: no node where preemption helps",
                )
            best = pick(candidates)
            node = state.node(best.node)
            for victim in best.victims:
                placer.release(victim.pod.name, victim.pod.needs, node)
                alive[node.name].remove(victim.pod)
                victims.append(victim.pod)
                for index in budgets.selecting(victim.pod):
                    left[index] -= 1
            fitted = evaluate(pending.needs, pending.gpus, node, view)
            if isinstance(fitted, Status):
                raise RuntimeError(f"internal error: {name} does not fit on {node.name} after preemption")
            found = fitted
        placer.bind(name, pending.needs, found)
        placed.append((name, found))
    issues = problems(cluster, [v.name for v in victims], assignments_of(pending, placed))
    return Alternative(
        name=label,
        found=True,
        victims=[evicted(v) for v in victims],
        placements=[placement_of(n, o) for n, o in placed],
        cost=cost_of(victims, budgets),
        valid=not issues,
        problems=issues,
        note="" if victims else f"no preemption: it fits as the {view} view counts",
    )
