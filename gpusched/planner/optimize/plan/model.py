"""plan's model: per node class, how many nodes take each pattern (classes.py), and per job type how many jobs
are placed, so that the model's size follows the classes of node and the shapes pending, not their numbers.

Patterns are built over what the GPUs see of a pod (its GPU shape), each shape at most as often as it is pending;
pods that differ only in cpu or memory share a GPU shape. The nodes named in `binding` (the round's rows) are
classes of their own with a capacity row over the pods of each shape they take; elsewhere cpu and memory are left
out: exactly where they cannot run out (binding_nodes), as a relaxation where they might (a bound; the plan is then
fitted to them in extraction).

Objective, lexicographic: (1) priority-weighted GPUs placed, (2) jobs placed, (3) fewest stranded GPUs for the
largest pod size pending, (4) fewest pods split across NVLink islands.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from ...deadline import OutOfTime
from ...place import needs_key
from ...state import NodeState
from ..classes import Arrangement, NodeClass, PodShape, compatible, patterns, room_of
from .report import PendingJob, PlannedPod, weight_of

__all__ = [
    "JobType",
    "OutOfTime",
    "PlanModel",
    "SupplyGroup",
    "binding_nodes",
    "build",
    "hint",
    "host_fits",
    "host_room",
    "job_types",
]

Pattern = tuple[tuple[PodShape, ...], Arrangement]  # the pods a node takes together, and how they sit


@dataclass
class JobType:
    """Pending jobs the model cannot tell apart: same pods, GPUs, priority, needs and confinement."""

    jobs: list[PendingJob]
    shape: PodShape
    weight: int
    classes: list[int]  # indices of compatible node classes
    confined: bool = False  # its jobs' pods share one NVLink domain

    @property
    def sample(self) -> PendingJob:
        return self.jobs[0]


def job_types(
    jobs: list[PendingJob],
    classes: list[NodeClass],
    tags: list[str | None],
    binding: frozenset[str] = frozenset(),
    deadline: float | None = None,
) -> list[JobType]:
    """Interchangeable jobs, each type with the classes it may use. Jobs that differ only in cpu and memory share
    one verdict per class from the filters and the GPUs, and one type where none of those classes is binding (cpu
    and memory cannot refuse them there: extraction then picks which of them go, by cpu and memory); where some
    are, each cpu and memory is a type of its own, kept off the binding classes whose cpu or memory it exceeds
    (HostResourcesFit's rule, `host_fits`)."""
    lowest = min((job.needs.priority for job in jobs), default=0)
    grouped: dict[tuple, list[PendingJob]] = defaultdict(list)
    for job in jobs:
        probe = job.needs.model_copy(update={"cpu": None, "memory": None})
        grouped[(job.pods, job.gpus, job.needs.priority, needs_key(probe), job.confined)].append(job)
    rooms = {i: host_room(c.representative) for i, c in enumerate(classes) if c.representative.name in binding}
    verdicts: dict[tuple, list[int]] = {}  # the classes whose GPUs and node filters take the pod
    types = []
    for (_, gpus, _, seen, confined), members in grouped.items():
        if deadline is not None and time.perf_counter() > deadline:
            raise OutOfTime("model")
        sample = members[0]
        if (seen, gpus) not in verdicts:
            probe = sample.needs.model_copy(update={"cpu": None, "memory": None})
            verdicts[(seen, gpus)] = [i for i, c in enumerate(classes) if compatible(probe, gpus, c.representative)]
        verdict = [i for i in verdicts[(seen, gpus)] if not (confined and tags[i] is None)]
        weight = weight_of(sample.needs.priority, lowest)
        tight = [i for i in verdict if i in rooms]
        if not tight:
            types.append(JobType(members, PodShape.of(sample.needs, gpus).gpu_view, weight, verdict, confined))
            continue
        loose = [i for i in verdict if i not in rooms]
        split: dict[str, list[PendingJob]] = defaultdict(list)
        for job in members:
            split[needs_key(job.needs)].append(job)
        for alike in split.values():
            needs = alike[0].needs
            asks = (needs.cpu_milli, needs.memory_bytes)
            usable = sorted(loose + [i for i in tight if host_fits(asks, rooms[i])])
            types.append(JobType(alike, PodShape.of(needs, gpus), weight, usable, confined))
    return types


@dataclass(frozen=True)
class SupplyGroup:
    """Job types of one shape that may use the same node classes: they draw on one supply of pods."""

    shape: PodShape
    classes: tuple[int, ...]  # the node classes its job types may use
    confined: int | None  # the job type confined to one NVLink domain (a group of its own), or None


Family = tuple[PodShape, tuple[int, ...]]  # a GPU shape and the pooled classes its groups may use


@dataclass
class PlanModel:
    model: cp_model.CpModel
    counts: list[list[cp_model.IntVar]]  # per class, per pattern: nodes taking it
    groups: dict[SupplyGroup, list[int]]  # -> its job types
    supply: dict[SupplyGroup, dict[int, cp_model.IntVar]]  # -> per class of its own (binding, or confined), its pods
    pooled: dict[SupplyGroup, cp_model.IntVar]  # -> its pods on the pooled classes of its family
    families: dict[Family, list[SupplyGroup]]
    family_supply: dict[Family, dict[int, cp_model.IntVar]]  # -> per pooled class, the family's pods there
    placed: list[cp_model.IntVar]  # per job type: jobs placed
    placed_in: dict[int, dict[str, cp_model.IntVar]]  # confined job type -> per NVLink domain, its jobs there
    tags: list[str | None]  # per class: its NVLink domain, where a pending job is confined to one
    class_patterns: list[list[Pattern]]


def host_room(node: NodeState) -> tuple[int | None, int | None]:
    """The cpu (millicores) and memory (bytes) a node has left, None where it does not model them."""
    cpu, memory = node.spec.cpu_milli, node.spec.memory_bytes
    return (
        None if cpu is None else max(0, cpu - node.cpu_requested),  # over-used by running pods: none left
        None if memory is None else max(0, memory - node.memory_requested),
    )


def host_fits(asks: tuple[int, int], room: tuple[int | None, int | None]) -> bool:
    """HostResourcesFit's rule (noderesources.host_reasons) on numbers: a pod asking none of a resource fits
    whatever is left of it, one asking some needs that much left."""
    return all(ask == 0 or left is None or ask <= left for ask, left in zip(asks, room, strict=True))


def binding_nodes(nodes: list[NodeState], jobs: list[PendingJob]) -> frozenset[str]:
    """Nodes whose cpu or memory the pending pods might exhaust: the most they could ask for there (every free GPU
    unit taken at the hungriest ratio of request to units, and never more than all that is pending) exceeds what
    is free. On the others no placement the GPUs allow runs out of either."""
    if not jobs:
        return frozenset()
    ratios = [
        max(getattr(job.needs, resource) / job.gpus for job in jobs) for resource in ("cpu_milli", "memory_bytes")
    ]
    totals = [
        sum(getattr(job.needs, resource) * job.pods for job in jobs) for resource in ("cpu_milli", "memory_bytes")
    ]
    found = set()
    for node in nodes:
        units = sum(gpu.free_replicas for gpu in node.gpus) + sum(s.holder is None for g in node.gpus for s in g.mig)
        for room, ratio, total in zip(host_room(node), ratios, totals, strict=True):
            if room is not None and min(units * ratio, total) > room:
                found.add(node.name)
    return frozenset(found)


@dataclass
class _Supply:
    groups: dict[SupplyGroup, list[int]]
    supply: dict[SupplyGroup, dict[int, cp_model.IntVar]]
    pooled: dict[SupplyGroup, cp_model.IntVar]
    families: dict[Family, list[SupplyGroup]]
    family_supply: dict[Family, dict[int, cp_model.IntVar]]


def _link_supply(
    model: cp_model.CpModel,
    classes: list[NodeClass],
    types: list[JobType],
    class_patterns: list[list[Pattern]],
    counts: list[list[cp_model.IntVar]],
    placed: list[cp_model.IntVar],
    binding: frozenset[str],
) -> _Supply:
    """Pods of each GPU shape that a class's chosen patterns offer = pods drawn from it; a group's pods = its jobs
    placed times their pods; cpu and memory rows on the binding nodes.

    Job types of one shape that may use the same node classes form a group; a job type confined to one NVLink
    domain is a group of its own. On a binding node each group's pods are counted (its cpu row needs them); on
    the other classes (pooled) groups of one GPU shape that may use the same ones form a family, and only the
    family's pods per class are counted: which of its groups takes which of those places changes nothing.
    """
    groups: dict[SupplyGroup, list[int]] = defaultdict(list)
    for j, t in enumerate(types):
        groups[SupplyGroup(t.shape, tuple(t.classes), j if t.confined else None)].append(j)
    found = _Supply(groups, {}, {}, defaultdict(list), {})
    drawing: dict[tuple[int, PodShape], list[cp_model.IntVar]] = defaultdict(list)  # (class, GPU shape) -> draws
    pending: dict[SupplyGroup, int] = {}
    own_classes = {c for c, node_class in enumerate(classes) if node_class.representative.name in binding}
    asked: dict[int, list[tuple[PodShape, cp_model.IntVar]]] = defaultdict(list)  # binding class -> its draws
    for group, members in groups.items():
        view = group.shape.gpu_view
        pending[group] = sum(types[j].sample.pods * len(types[j].jobs) for j in members)
        own = group.classes if group.confined is not None else [c for c in group.classes if c in own_classes]
        shares = found.supply[group] = {c: model.new_int_var(0, pending[group], "z") for c in own}
        for c, share in shares.items():
            drawing[(c, view)].append(share)
            asked[c].append((group.shape, share))
        rest = tuple(c for c in group.classes if c not in shares)
        drawn: list[cp_model.IntVar] = list(shares.values())
        if rest:
            found.families[(view, rest)].append(group)
            found.pooled[group] = model.new_int_var(0, pending[group], "p")
            drawn.append(found.pooled[group])
        model.add(
            cp_model.LinearExpr.sum(drawn)
            == cp_model.LinearExpr.weighted_sum([placed[j] for j in members], [types[j].sample.pods for j in members])
        )
    for family, kin in found.families.items():
        shape, pooled = family
        most = sum(pending[group] for group in kin)
        spread = found.family_supply[family] = {c: model.new_int_var(0, most, "f") for c in pooled}
        for c, share in spread.items():
            drawing[(c, shape)].append(share)
        model.add(
            cp_model.LinearExpr.sum([found.pooled[group] for group in kin])
            == cp_model.LinearExpr.sum(list(spread.values()))
        )
    offers = [[Counter(pattern) for pattern, _ in found_patterns] for found_patterns in class_patterns]
    for (c, shape), draws in drawing.items():
        ks = [k for k, offer in enumerate(offers[c]) if shape in offer]
        offered = cp_model.LinearExpr.weighted_sum([counts[c][k] for k in ks], [offers[c][k][shape] for k in ks])
        model.add(cp_model.LinearExpr.sum(draws) == offered)
    for c, takers in asked.items():
        if c not in own_classes:
            continue  # a confined group's share of a class where cpu and memory cannot run out
        cpu, memory = host_room(classes[c].representative)
        drawn_here = [share for _, share in takers]
        for free, asks in ((cpu, [s.cpu for s, _ in takers]), (memory, [s.memory for s, _ in takers])):
            if free is not None and any(asks):
                model.add(cp_model.LinearExpr.weighted_sum(drawn_here, asks) <= free)
    return found


def _confine(
    model: cp_model.CpModel,
    types: list[JobType],
    tags: list[str | None],
    groups: dict[SupplyGroup, list[int]],
    supply: dict[SupplyGroup, dict[int, cp_model.IntVar]],
    placed: list[cp_model.IntVar],
) -> dict[int, dict[str, cp_model.IntVar]]:
    """A confined job type's jobs, counted per NVLink domain: each job's pods all come from one domain's classes."""
    placed_in: dict[int, dict[str, cp_model.IntVar]] = {}
    for group in groups:
        j = group.confined
        if j is None:
            continue
        t = types[j]
        by_domain = placed_in[j] = {}
        for domain in dict.fromkeys(tags[c] for c in t.classes):
            assert domain is not None  # job_types gives a confined type only classes in an NVLink domain
            by_domain[domain] = var = model.new_int_var(0, len(t.jobs), f"n{j}_{domain}")
            model.add(sum(supply[group][c] for c in t.classes if tags[c] == domain) == t.sample.pods * var)
        model.add(sum(by_domain.values()) == placed[j])
    return placed_in


def build(
    classes: list[NodeClass],
    types: list[JobType],
    largest: int,
    tags: list[str | None],
    binding: frozenset[str] = frozenset(),
    deadline: float | None = None,
) -> tuple[PlanModel, list]:
    """The model and its objective levels; OutOfTime if building it passes the `deadline` (perf_counter)."""
    model = cp_model.CpModel()
    shapes_by_class: dict[int, dict[PodShape, None]] = defaultdict(dict)  # ordered sets
    pending: dict[tuple[int, PodShape], int] = defaultdict(int)  # pods of each GPU shape that may go to a class
    for t in types:
        view, pods = t.shape.gpu_view, t.sample.pods * len(t.jobs)
        for c in t.classes:
            shapes_by_class[c][view] = None
            pending[(c, view)] += pods
    class_patterns = []
    known: dict[tuple, list[Pattern]] = {}  # classes whose GPUs look alike (binding nodes) share their patterns
    for i, node_class in enumerate(classes):
        if deadline is not None and time.perf_counter() > deadline:
            raise OutOfTime("model")
        room = replace(room_of(node_class.representative), cpu=None, memory=None)  # GPU shapes ask for neither
        bounds = {s: pending[(i, s)] for s in shapes_by_class[i]}
        key = (room, tuple(bounds.items()))
        if key not in known:
            known[key] = patterns(room, list(shapes_by_class[i]), bounds, deadline)
        class_patterns.append(known[key])
    counts = []
    for c, found in enumerate(class_patterns):
        size = len(classes[c].nodes)
        row = [model.new_int_var(0, size, f"y{c}_{k}") for k in range(len(found))]
        model.add(cp_model.LinearExpr.sum(row) == size)
        counts.append(row)
    placed = [model.new_int_var(0, len(t.jobs), f"n{j}") for j, t in enumerate(types)]
    linked = _link_supply(model, classes, types, class_patterns, counts, placed, binding)
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime("model")
    placed_in = _confine(model, types, tags, linked.groups, linked.supply, placed)
    every = [(counts[c][k], a) for c, found in enumerate(class_patterns) for k, (_, a) in enumerate(found)]
    weighted = [t.weight * t.sample.pods * t.sample.gpus for t in types]
    levels = [
        ("priority-weighted GPUs placed", "maximize", cp_model.LinearExpr.weighted_sum(placed, weighted)),
        ("jobs placed", "maximize", cp_model.LinearExpr.sum(placed)),
        (
            f"stranded GPUs for {largest}-GPU pods",
            "minimize",
            cp_model.LinearExpr.weighted_sum([y for y, _ in every], [a.free_whole % largest for _, a in every]),
        ),
        (
            "pods split across NVLink islands",
            "minimize",
            cp_model.LinearExpr.weighted_sum([y for y, _ in every], [a.splits for _, a in every]),
        ),
    ]
    built = PlanModel(
        model,
        counts,
        linked.groups,
        linked.supply,
        linked.pooled,
        dict(linked.families),
        linked.family_supply,
        placed,
        placed_in,
        tags,
        class_patterns,
    )
    return built, levels


def hint(built: PlanModel, classes: list[NodeClass], types: list[JobType], pods: list[PlannedPod]) -> bool:
    """Hint the model with a feasible plan (a heuristic's complete jobs), every variable given its value, so the
    solve starts from it. False, and no hint, if the plan has a node whose pods are no pattern of its class."""
    type_of = {job.name: j for j, t in enumerate(types) for job in t.jobs}
    class_of = {node.name: c for c, node_class in enumerate(classes) for node in node_class.nodes}
    on_node: dict[str, Counter] = defaultdict(Counter)
    jobs: dict[int, set[str]] = defaultdict(set)
    shares: Counter = Counter()  # (group, class) -> pods
    domains: Counter = Counter()  # (confined type, domain) -> pods
    group_of = {j: group for group, members in built.groups.items() for j in members}
    for pod in pods:
        j = type_of[pod.job]
        on_node[pod.node][types[j].shape.gpu_view] += 1
        jobs[j].add(pod.job)
        c = class_of[pod.node]
        shares[(group_of[j], c)] += 1
        if types[j].confined:
            domains[(j, built.tags[c])] += 1
    used: list[Counter] = [Counter() for _ in classes]
    for c, node_class in enumerate(classes):
        index = {frozenset(Counter(pattern).items()): k for k, (pattern, _) in enumerate(built.class_patterns[c])}
        for node in node_class.nodes:
            k = index.get(frozenset(on_node[node.name].items()))
            if k is None:
                return False
            used[c][k] += 1
    model = built.model
    model.clear_hints()
    for c, row in enumerate(built.counts):
        for k, variable in enumerate(row):
            model.add_hint(variable, used[c][k])
    for j, variable in enumerate(built.placed):
        model.add_hint(variable, len(jobs[j]))
    for group, by_class in built.supply.items():
        for c, variable in by_class.items():
            model.add_hint(variable, shares[(group, c)])
    for family, members in built.families.items():
        for c, variable in built.family_supply[family].items():
            model.add_hint(variable, sum(shares[(group, c)] for group in members))
        for group in members:
            model.add_hint(built.pooled[group], sum(shares[(group, c)] for c in family[1]))
    for j, by_domain in built.placed_in.items():
        for domain, variable in by_domain.items():
            model.add_hint(variable, domains[(j, domain)] // types[j].sample.pods)
    return True
