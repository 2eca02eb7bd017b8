"""Packing one offering's pods onto its nodes exactly, when first fit decreasing could not: a small CP-SAT bin
packing over the nodes counted (pods aggregated by group), for nodes whose GPUs any pod may take in any order
(`Offering.simple`, no MIG, no time-slicing). The model's counts then hold node by node, and the plan meets the
bound the scale-up model proved."""

from __future__ import annotations

from ortools.sat.python import cp_model

from ...pending import PendingJob
from ..solver import cp_solver
from .world import Fleet, Launched

__all__ = ["pack_exactly"]


def pack_exactly(fleet: Fleet, nodes: list[Launched], items: list[tuple[str, PendingJob]], seconds: float) -> bool:
    """Clear these nodes and pack the items onto them by CP-SAT; False (nodes cleared) when not proven packable
    in time or not a case it decides."""
    if not nodes or seconds <= 0:
        return False
    offering = nodes[0].offering
    if not offering.simple or any(job.needs.mig_profile or job.needs.shared for _, job in items):
        return False
    fleet.clear(nodes)
    kinds: dict[tuple[int, int, bool], list[tuple[str, PendingJob]]] = {}
    for name, job in items:
        kinds.setdefault((id(job.needs), job.gpus, job.confined), []).append((name, job))
    model = cp_model.CpModel()
    kind = offering.kind
    per = list(kinds.values())
    take = [[model.new_int_var(0, len(group), f"y{k},{b}") for b in range(len(nodes))] for k, group in enumerate(per)]
    for k, group in enumerate(per):
        model.add(sum(take[k]) == len(group))
    for b in range(len(nodes)):
        rows = [(group[0][1], take[k][b]) for k, group in enumerate(per)]
        model.add(sum(_pods(j) * j.gpus * y for j, y in rows) <= offering.gpu.count)
        model.add(sum(_pods(j) * j.needs.cpu_milli * y for j, y in rows) <= kind.cpu_milli)
        model.add(sum(_pods(j) * j.needs.memory_bytes * y for j, y in rows) <= kind.memory_bytes)
        model.add(sum(_pods(j) * y for j, y in rows) <= kind.pods)
    for b in range(len(nodes) - 1):  # the nodes are alike: order them by GPUs used
        used = [
            sum(_pods(group[0][1]) * group[0][1].gpus * take[k][n] for k, group in enumerate(per)) for n in (b, b + 1)
        ]
        model.add(used[0] >= used[1])
    solver = cp_solver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_search_workers = 1
    if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return False
    for k, group in enumerate(per):
        queue = list(group)
        for b, node in enumerate(nodes):
            for _ in range(solver.value(take[k][b])):
                name, job = queue.pop()
                placed = fleet.pack(job, [node]) if job.confined else fleet.pack_pod(name, job, [node]) is not None
                assert placed, "a packing CP-SAT proved fits node by node"
    return True


def _pods(job: PendingJob) -> int:
    return job.pods if job.confined else 1
