"""How much GPU the arrived pods could occupy at best, were they placed all at once: an interval around it.

Upper: the LP relaxation (GLOP) of the batch placement over classes of identical nodes and classes of identical
pods: x[c, t] pods of class c on nodes of type t, within each type's total cpu, memory and GPU milli, a pod only
on a type it fits (cpu, memory, GPU count, allowed model). No placement can allocate more.
Lower: an actual placement, offline (it may leave pods out: 30% more arrive than fit): the GPU pods sorted, those
restricted to some GPU models first, then the largest (GPU milli, then cpu), each placed by gpusched's own policy.
The true offline optimum lies between the two.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from ortools.linear_solver import pywraplp
from pydantic import BaseModel, Field

from ..planner.gpushare import PodTable, SharePod, ShareState, target_workload
from ..planner.gpushare.policies import Balanced
from .openb import RunSpec, arrivals, prepare

__all__ = ["BoundResult", "lp_bound", "offline_bound", "offline_greedy"]


class BoundResult(BaseModel):
    trace: str
    seed: int
    lp_pct: float = Field(description="LP upper bound on the allocated GPU milli, % of capacity")
    offline_pct: float = Field(description="an offline greedy placement of the same pods, % of capacity")
    lp_status: str


def _node_types(state: ShareState) -> Counter[tuple[int, int, int, int]]:
    keys = zip(
        state.model.tolist(),
        state.gpus.tolist(),
        state.cpu_capacity.tolist(),
        state.memory_capacity.tolist(),
        strict=True,
    )
    return Counter(keys)


def lp_bound(state: ShareState, pods: list[SharePod]) -> tuple[float, str]:
    """The LP optimum of GPU milli placed (and GLOP's status)."""
    solver = pywraplp.Solver.CreateSolver("GLOP")
    types = _node_types(state)
    classes = Counter((p.cpu, p.memory, p.gpus, p.milli, p.spec) for p in pods if p.gpus)
    allowed = {spec: state.access[spec] for spec in {key[4] for key in classes}}
    use: dict[tuple, list] = {t: [] for t in types}
    objective = []
    for (cpu, memory, gpus, milli, spec), count in classes.items():
        fits = []
        for t in types:
            model, node_gpus, node_cpu, node_memory = t
            model_ok = model >= 0 and bool(allowed[spec][np.flatnonzero(state.model == model)[0]])
            if gpus <= node_gpus and cpu <= node_cpu and memory <= node_memory and model_ok:
                x = solver.NumVar(0, count, "")
                fits.append(x)
                use[t].append((x, cpu, memory, gpus * milli))
                objective.append(gpus * milli * x)
        if fits:
            solver.Add(sum(fits) <= count)
    for t, items in use.items():
        if items:
            n = types[t]
            solver.Add(sum(x * cpu for x, cpu, _, _ in items) <= n * t[2])
            solver.Add(sum(x * memory for x, _, memory, _ in items) <= n * t[3])
            solver.Add(sum(x * milli for x, _, _, milli in items) <= n * t[1] * 1000)
    solver.Maximize(sum(objective))
    status = solver.Solve()
    names = {pywraplp.Solver.OPTIMAL: "OPTIMAL", pywraplp.Solver.FEASIBLE: "FEASIBLE"}
    return solver.Objective().Value(), names.get(status, "NOT_SOLVED")


def offline_greedy(state: ShareState, table: PodTable, pods: list[SharePod]) -> int:
    """Place the GPU pods most constrained and largest first with gpusched's policy; returns the milli placed."""
    rng = np.random.default_rng(0)
    placer = Balanced(state, table, target_workload(table, state), rng)
    anywhere = table.specs.index(()) if () in table.specs else -1
    for pod in sorted(
        (p for p in pods if p.gpus), key=lambda p: (p.spec != anywhere, p.total_milli, p.cpu), reverse=True
    ):
        choice = placer.choose(pod, rng)
        if choice is not None:
            state.bind(pod, *choice)
    return state.allocated_milli


def offline_bound(spec: RunSpec) -> BoundResult:
    """The interval for the pods that arrive under `spec.seed`."""
    prepared = prepare(spec.trace, spec.nodes, spec.node_count)
    state = ShareState(prepared.cluster, prepared.table)
    order = arrivals(prepared.milli, state.capacity_milli, spec.ratio, spec.seed)
    pods = [prepared.table.pods[i] for i in order.tolist()]
    upper, status = lp_bound(state, pods)
    placed = offline_greedy(state, prepared.table, pods)
    scale = 100.0 / state.capacity_milli
    return BoundResult(
        trace=prepared.name,
        seed=spec.seed,
        lp_pct=round(upper * scale, 4),
        offline_pct=round(placed * scale, 4),
        lp_status=status,
    )
