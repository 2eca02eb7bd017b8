"""From the model's counts to nodes and pods: launch each offering's nodes (their GPUs partitioned as counted),
pack each group's pods onto them through the scheduler's filters, and repair what the counts promised but the
packing could not hold (a job is then packed onto any launched node, else onto the cheapest offering that takes
it). Repair costs: the plan then costs more than the model's optimum, and the gap says by how much."""

from __future__ import annotations

from ortools.sat.python import cp_model

from ...pending import PendingJob
from .baselines import Problem
from .model import ScaleModel
from .world import Fleet, Launched

__all__ = ["extract", "provision", "hint"]


def extract(built: ScaleModel, solver: cp_model.CpSolver, problem: Problem) -> tuple[Fleet, list[str]]:
    fleet = Fleet()
    launched: dict[int, list[Launched]] = {}
    for oi, offering in enumerate(built.offerings):
        count = solver.value(built.nodes[oi])
        if not count:
            continue
        gpus = offering.gpu.count
        cut = [p for (o, p), m in built.partitioned.items() if o == oi for _ in range(solver.value(m))]
        layout: list[str | None] = [*cut, *([None] * (count * gpus - len(cut)))]
        launched[oi] = [fleet.launch(offering, layout[i * gpus : (i + 1) * gpus]) for i in range(count)]
    work: dict[int, list[tuple[str, PendingJob]]] = {}
    chosen: set[str] = set()
    for gi, group in enumerate(built.groups):
        jobs = group.jobs[: solver.value(built.placed[gi])]
        chosen |= {job.name for job in jobs}
        items = [(job.name, job) for job in jobs] if group.confined else [(n, j) for j in jobs for n in j.pod_names()]
        for oi in range(len(built.offerings)):
            x = built.items_of(gi, oi)
            take = solver.value(x) if x is not None else 0
            work.setdefault(oi, []).extend(items[:take])
            items = items[take:]
    failed: dict[str, PendingJob] = {}
    for oi, items in work.items():
        nodes = launched.get(oi, [])
        items.sort(key=lambda item: -item[1].gpus * (item[1].pods if item[1].confined else 1))
        for name, job in items:
            if job.name in failed:
                continue
            done = fleet.pack(job, nodes) if job.confined else fleet.pack_pod(name, job, nodes)
            if not done:
                failed[job.name] = job
    for job in failed.values():
        fleet.unbind(job)
    unplaced = [job.name for group in built.groups for job in group.jobs if job.name not in chosen]
    for job in sorted(failed.values(), key=lambda j: -j.gpus * j.pods):
        if not provision(problem, fleet, job):
            unplaced.append(job.name)
    for node in [n for n in fleet.nodes if not n.pods]:
        fleet.drop(node)
    return fleet, unplaced


def provision(problem: Problem, fleet: Fleet, job: PendingJob) -> bool:
    """The job onto the launched nodes, else onto as few new nodes of the cheapest offering that takes it as it
    needs (within the limits); False, with nothing launched, when none does."""
    if fleet.pack(job, fleet.nodes):
        return True
    for oi, _ in sorted(problem.where(job).items(), key=lambda item: problem.offerings[item[0]].cost):
        offering = problem.offerings[oi]
        opened: list[Launched] = []
        while len(opened) < (1 if job.confined else job.pods):
            if not problem.capacity.allows([n.offering for n in fleet.nodes], offering):
                break
            opened.append(fleet.launch(offering, problem.partitions(job, oi)))
            if fleet.pack(job, fleet.nodes):
                return True
        for node in opened:
            fleet.drop(node)
    return False


def hint(built: ScaleModel, problem: Problem, fleet: Fleet, unplaced: list[str]) -> None:
    """A plan (the floor) as CP-SAT's starting point: its node counts, jobs placed and items per offering."""
    model = built.model
    index = {o.key: oi for oi, o in enumerate(built.offerings)}
    counts = [0] * len(built.offerings)
    for node in fleet.nodes:
        counts[index[node.offering.key]] += 1
    for var, count in zip(built.nodes, counts, strict=True):
        model.add_hint(var, count)
    missing = set(unplaced)
    where: dict[str, int] = {a.pod: index[n.offering.key] for n in fleet.nodes for a in n.pods}
    for gi, group in enumerate(built.groups):
        placed = [job for job in group.jobs if job.name not in missing]
        model.add_hint(built.placed[gi], len(placed))
        per: dict[int, int] = {}
        for job in placed:
            first = where.get(job.pod_names()[0])
            if group.confined and first is not None:
                per[first] = per.get(first, 0) + 1
            elif not group.confined:
                for name in job.pod_names():
                    if name in where:
                        per[where[name]] = per.get(where[name], 0) + 1
        for (g, oi), var in built.items.items():
            if g == gi:
                model.add_hint(var, per.get(oi, 0))
