"""The autoscalers' own rules for the same backlog, reported beside the optimum (and the best of them is the floor
CP-SAT starts from).

- Karpenter's provisioning (its scheduler's Solve, as documented and in pkg/controllers/provisioning/scheduling):
  pods sorted by cpu then memory requests, descending; each pod onto the first in-flight NodeClaim that can still
  hold it — a NodeClaim keeps every instance type that fits all its pods, and adding a pod narrows that set —
  else onto a new NodeClaim of every compatible instance type within the NodePool's limits; at launch each
  NodeClaim takes the cheapest offering left.
- Cluster Autoscaler's scale-up: each node group (one offering) estimates, by first-fit decreasing onto new nodes
  of its template, which pending pods it would help and with how many nodes; the expander picks one option, it is
  applied, and the loop repeats on the pods still pending. Expanders: `least-waste` (least unused cpu + memory
  fraction of the new nodes), `price` (the cheapest per GPU the option places: CA's node price over pod value,
  without its preferred-node-size term), `random` (seeded).

All of them keep a gang's pods together (a job is placed whole or not at all) and a confined gang on one node:
that favours the autoscalers, which know neither.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ...pending import PendingJob
from .report import Outcome
from .world import PRICE_SCALE, Capacity, Fleet, Group, Launched, Offering

__all__ = ["EXPANDERS", "karpenter", "cluster_autoscaler", "outcome", "Problem"]

EXPANDERS = ("least-waste", "price", "random")


@dataclass
class Problem:
    """The backlog left for new nodes, and what may be launched for it."""

    groups: list[Group]
    offerings: list[Offering]
    compatible: dict[tuple[int, int], str | None]  # (group, offering) -> None (whole GPUs) or the MIG profile
    capacity: Capacity
    _by_job: dict[str, int] = field(default_factory=dict)
    _where: dict[int, dict[int, str | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_job = {job.name: gi for gi, g in enumerate(self.groups) for job in g.jobs}
        for (gi, oi), profile in self.compatible.items():
            self._where.setdefault(gi, {})[oi] = profile

    def jobs(self) -> list[PendingJob]:
        return [job for g in self.groups for job in g.jobs]

    def where(self, job: PendingJob) -> dict[int, str | None]:
        """The offerings (by index) one fresh node of which fits the job, and how (whole GPUs or a profile)."""
        return self._where.get(self._by_job[job.name], {})

    def partitions(self, job: PendingJob, oi: int) -> list[str | None]:
        profile = self.where(job).get(oi)
        return [profile] * self.offerings[oi].gpu.count if profile else []


def outcome(name: str, fleet: Fleet, unplaced: Sequence[str], began: float) -> Outcome:
    counts: dict[str, int] = {}
    for node in fleet.nodes:
        counts[node.offering.key] = counts.get(node.offering.key, 0) + 1
    return Outcome(
        name=name,
        cost_per_hour=fleet.cost() / PRICE_SCALE,
        nodes=len(fleet.nodes),
        by_offering=dict(sorted(counts.items())),
        unplaced=sorted(unplaced),
        seconds=time.process_time() - began,
    )


# --- Karpenter ---------------------------------------------------------------------------------------------------


@dataclass
class _Claim:
    """An in-flight NodeClaim: one trial node per instance type offering still able to hold all its pods."""

    options: dict[int, Launched]
    units: int = 0  # GPUs (replicas, MIG instances) of its pods: a quick test before trying each option
    room: int = 0  # the most units any option has
    largest: Offering | None = None  # the costliest option: what the NodePool's limits count it as

    def narrowed(self) -> None:
        nodes = list(self.options.values())
        self.room = max(n.offering.gpu.count * n.offering.gpu.replicas for n in nodes)
        self.largest = max((n.offering for n in nodes), key=lambda o: o.cost)


def karpenter(problem: Problem) -> tuple[Fleet, list[str]]:
    """Karpenter's provisioning; returns the nodes launched (the cheapest offering of each NodeClaim) and the jobs
    left pending (a gang with a pod no NodeClaim could take: its other pods' nodes are launched all the same)."""
    items = [(item, job) for job in problem.jobs() for item in _items(job)]
    items.sort(key=lambda pair: (-pair[0].needs.cpu_milli, -pair[0].needs.memory_bytes))  # stable: input order
    scratch = Fleet("claim")
    claims: list[_Claim] = []
    unplaced: set[str] = set()
    for item, job in items:
        units = item.gpus * item.pods
        claim = next((c for c in claims if c.units + units <= c.room and _narrow(scratch, c, item)), None)
        if claim is None:
            claim = _new_claim(problem, scratch, claims, item, job)
            if claim is None:
                unplaced.add(job.name)
                continue
            claims.append(claim)
        claim.units += units
    fleet = Fleet()
    for claim in claims:
        cheapest = min(claim.options, key=lambda oi: (problem.offerings[oi].cost, problem.offerings[oi].key))
        _copy(fleet, claim.options[cheapest])
    for job in problem.jobs():
        if job.name in unplaced:
            fleet.unbind(job)
    return fleet, sorted(unplaced)


def _items(job: PendingJob) -> list[PendingJob]:
    """What the autoscalers provision for one at a time: each pod, or a confined gang whole."""
    if job.confined:
        return [job]
    return [PendingJob(name, 1, job.gpus, job.needs) for name in job.pod_names()]


def _copy(fleet: Fleet, trial: Launched) -> Launched:
    """Launch a trial node for real, with the pods packed onto it."""
    node = fleet.launch(trial.offering, _layout(trial))
    for assignment in trial.pods:
        node.state.occupy(assignment.pod, assignment.needs, assignment.gpus, assignment.mig)
        node.pods.append(replace(assignment, node=node.name))
    return node


def _layout(trial: Launched) -> list[str | None]:
    """The MIG profile of each GPU of a trial node (None: whole)."""
    return [gpu.mig[0].profile if gpu.mig else None for gpu in trial.state.gpus]


def _narrow(scratch: Fleet, claim: _Claim, job: PendingJob) -> bool:
    """Add the job to the claim if some option still holds it; the options that cannot are dropped."""
    kept = {oi: node for oi, node in claim.options.items() if scratch.pack(job, [node])}
    if not kept:
        return False
    for oi, node in claim.options.items():
        if oi not in kept:
            scratch.drop(node)
    claim.options = kept
    claim.narrowed()
    return True


def _new_claim(
    problem: Problem, scratch: Fleet, claims: list[_Claim], item: PendingJob, job: PendingJob
) -> _Claim | None:
    """A NodeClaim of every offering that fits the job within the limits, given the claims so far at their
    largest option (Karpenter subtracts in-flight claims from the NodePool's remaining resources)."""
    launched = [c.largest for c in claims if c.largest is not None]
    options: dict[int, Launched] = {}
    for oi in problem.where(job):
        offering = problem.offerings[oi]
        if not problem.capacity.allows(launched, offering):
            continue
        node = scratch.launch(offering, problem.partitions(job, oi))
        if scratch.pack(item, [node]):
            options[oi] = node
        else:
            scratch.drop(node)
    if not options:
        return None
    claim = _Claim(options)
    claim.narrowed()
    return claim


# --- Cluster Autoscaler --------------------------------------------------------------------------------------------


@dataclass
class _Option:
    offering: int
    nodes: list[Launched]
    helped: list[PendingJob]


def cluster_autoscaler(problem: Problem, expander: str, seed: int = 0) -> tuple[Fleet, list[str]]:
    if expander not in EXPANDERS:
        raise ValueError(f"unknown expander {expander!r} (known: {', '.join(EXPANDERS)})")
    choices: dict[str, Callable[[list[_Option]], _Option]] = {
        "least-waste": _least_waste,
        "price": _cheapest_per_gpu,
        "random": random.Random(seed).choice,
    }
    pick = choices[expander]
    fleet = Fleet()
    pending = problem.jobs()
    while pending:
        options = [o for oi in range(len(problem.offerings)) if (o := _estimate(problem, fleet, oi, pending))]
        if not options:
            break
        chosen = pick(options)
        for trial in chosen.nodes:
            _copy(fleet, trial)
        helped = {job.name for job in chosen.helped}
        pending = [job for job in pending if job.name not in helped]
    return fleet, [job.name for job in pending]


def _estimate(problem: Problem, fleet: Fleet, oi: int, pending: list[PendingJob]) -> _Option | None:
    """CA's binpacking estimator for one node group: the pending pods it fits, first fit decreasing onto new
    nodes of the group (larger pods first), within the group's and the pool's limits."""
    offering = problem.offerings[oi]
    fits = [job for job in pending if oi in problem.where(job)]
    fits.sort(key=lambda j: (-j.gpus * j.pods, -j.needs.cpu_milli, -j.needs.memory_bytes))
    scratch = Fleet("estimate")
    launched = [node.offering for node in fleet.nodes]
    helped = []
    for job in fits:
        if scratch.pack(job, scratch.nodes):
            helped.append(job)
            continue
        opened: list[Launched] = []
        while problem.capacity.allows(launched + [n.offering for n in scratch.nodes], offering) and len(opened) < (
            job.pods if not job.confined else 1
        ):
            opened.append(scratch.launch(offering, problem.partitions(job, oi)))
            if scratch.pack(job, scratch.nodes):
                helped.append(job)
                break
        else:
            for node in opened:
                scratch.drop(node)
    return _Option(oi, scratch.nodes, helped) if helped else None


def _least_waste(options: list[_Option]) -> _Option:
    def waste(option: _Option) -> float:
        kind = option.nodes[0].offering.kind
        count = len(option.nodes)
        cpu = sum(a.needs.cpu_milli for n in option.nodes for a in n.pods)
        memory = sum(a.needs.memory_bytes for n in option.nodes for a in n.pods)
        return (1 - cpu / (kind.cpu_milli * count)) + (1 - memory / (kind.memory_bytes * count))

    return min(options, key=waste)


def _cheapest_per_gpu(options: list[_Option]) -> _Option:
    def price(option: _Option) -> float:
        gpus = sum(job.gpus * job.pods for job in option.helped)
        return sum(n.offering.cost for n in option.nodes) / max(1, gpus)

    return min(options, key=price)
