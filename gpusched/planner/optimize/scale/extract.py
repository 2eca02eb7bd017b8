"""From the model's counts to nodes and pods: launch each offering's nodes (their GPUs partitioned as counted),
pack each group's pods onto them through the scheduler's filters, and repair what the counts promised but the
packing could not hold (a job is then packed onto any launched node, else onto the cheapest offering that takes
it). Repair costs: the plan then costs more than the model's optimum, and the gap says by how much."""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from ...pending import PendingJob
from .baselines import Problem
from .model import ScaleModel
from .pack import pack_exactly
from .world import Fleet, Launched

__all__ = ["extract", "provision", "hint"]


def extract(
    built: ScaleModel, solver: cp_model.CpSolver, problem: Problem, seconds: float = 2.0, dealt: bool = False
) -> tuple[Fleet, list[str]]:
    """The plan the counts describe; `seconds` bounds the exact packings (pack.py) tried where first fit fails.
    Partitioned GPUs go to the first nodes, or (`dealt`) round the nodes: GPU 0 of each, then GPU 1, ..., which
    spreads MIG pods and their cpu and memory but leaves fewer nodes whole."""
    fleet = Fleet()
    launched: dict[int, list[Launched]] = {}
    for oi, offering in enumerate(built.offerings):
        count = solver.value(built.nodes[oi])
        if not count:
            continue
        gpus = offering.gpu.count
        cut = [p for (o, p), m in built.partitioned.items() if o == oi for _ in range(solver.value(m))]
        layout: list[str | None] = [*cut, *([None] * (count * gpus - len(cut)))]
        chunks = [layout[i::count] if dealt else layout[i * gpus : (i + 1) * gpus] for i in range(count)]
        launched[oi] = [fleet.launch(offering, chunk) for chunk in chunks]
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
    deadline = time.perf_counter() + seconds
    for oi, items in work.items():
        nodes = launched.get(oi, [])
        items.sort(key=lambda item: _size(item[1]), reverse=True)
        if _first_fit(fleet, nodes, items, {}):
            continue
        if pack_exactly(fleet, nodes, items, (deadline - time.perf_counter()) / 2):
            continue
        fleet.clear(nodes)
        missed: dict[str, PendingJob] = {}
        _first_fit(fleet, nodes, items, missed)
        if not _repack(fleet, nodes, items, missed, (deadline - time.perf_counter()) / 2):
            failed.update(missed)
    for job in failed.values():
        fleet.unbind(job)
    unplaced = [job.name for group in built.groups for job in group.jobs if job.name not in chosen]
    for job in sorted(failed.values(), key=lambda j: -j.gpus * j.pods):
        if not provision(problem, fleet, job):
            unplaced.append(job.name)
    for node in [n for n in fleet.nodes if not n.pods]:
        fleet.drop(node)
    return fleet, unplaced


NEIGHBOURHOOD = 24  # nodes repacked together around what first fit left over


def _repack(
    fleet: Fleet,
    nodes: list[Launched],
    items: list[tuple[str, PendingJob]],
    missed: dict[str, PendingJob],
    seconds: float,
) -> bool:
    """What first fit left over, packed exactly together with the pods of the emptiest nodes (a neighbourhood
    small enough to solve); only lone pods and confined gangs, whose items are whole jobs."""
    if any(job.pods > 1 and not job.confined for job in missed.values()):
        return False
    roomiest = sorted(nodes, key=lambda n: (-n.free, n.name))[:NEIGHBOURHOOD]
    by_name = dict(items)
    kept = {a.pod for n in roomiest for a in n.pods}
    if any(by_name.get(pod) is None or (by_name[pod].pods > 1 and not by_name[pod].confined) for pod in kept):
        return False
    confined = {by_name[pod].name for pod in kept if by_name[pod].confined}
    batch = [(name, job) for name, job in items if job.name in missed or name in kept or job.name in confined]
    batch = list(dict((job.name if job.confined else name, (name, job)) for name, job in batch).values())
    before = [(n, list(n.pods)) for n in roomiest]
    if pack_exactly(fleet, roomiest, batch, seconds):
        return True
    fleet.clear(roomiest)
    for node, pods in before:  # as first fit left them
        for a in pods:
            node.state.occupy(a.pod, a.needs, a.gpus, a.mig)
            node.free -= len(a.mig) or len(a.gpus)
        node.pods = pods
    return False


def _first_fit(
    fleet: Fleet, nodes: list[Launched], items: list[tuple[str, PendingJob]], failed: dict[str, PendingJob]
) -> bool:
    """First fit decreasing of the items (in their order) onto the nodes; the jobs of items that did not fit are
    added to `failed`. True when every item fit."""
    whole = True
    for name, job in items:
        if job.name in failed:
            continue
        done = fleet.pack(job, nodes) if job.confined else fleet.pack_pod(name, job, nodes) is not None
        if not done:
            failed[job.name] = job
            whole = False
    return whole


def _size(job: PendingJob) -> tuple[int, int, int]:
    """First fit decreasing: larger items first (GPUs, then cpu, then memory of one packing item)."""
    pods = job.pods if job.confined else 1
    return job.gpus * pods, job.needs.cpu_milli * pods, job.needs.memory_bytes * pods


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
