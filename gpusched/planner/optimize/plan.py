"""`plan`: the best placement of a batch of pending pods and gangs onto the cluster as it is (busy GPUs stay).

Objective, lexicographic: (1) priority-weighted GPUs placed, (2) jobs placed, (3) fewest stranded GPUs for the
largest pod size pending, (4) fewest pods split across NVLink islands. A job is all of its pods or none; a pod of
a pods file is a job of one. The model counts, per node class, how many nodes take each pattern (classes.py), so
its size follows the kinds of node and pod, not their numbers; the plan is then disaggregated to concrete GPUs
and checked by the independent validator.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ortools.sat.python import cp_model
from pydantic import BaseModel, Field

from ...models.cluster import Cluster
from ...models.workload import GpuNeeds, Job, Pod
from ..frag import FragRow, fragmentation
from ..framework import Diagnosis
from ..place import Placer, needs_key
from ..state import ClusterState, NodeState
from ..validate import Assignment, violations
from .classes import Arrangement, NodeClass, Shape, canonical_free, compatible, node_classes, patterns, room_of
from .solver import Infeasible, SolveReport, SolverConfig, solve_lexicographic

__all__ = ["PendingJob", "pending_jobs", "PlanJob", "PlannedPod", "check_plan", "HeuristicResult", "PlanReport", "plan", "weight_of", "greedy", "Metrics"]


@dataclass(frozen=True)
class PendingJob:
    """A gang of `pods` identical pods of `gpus` GPUs each (a lone pod is a gang of one)."""

    name: str
    pods: int
    gpus: int
    needs: GpuNeeds
    nvlink_domain: bool = False  # all pods inside one NVLink domain (Cluster.domain_of)

    @property
    def confined(self) -> bool:
        return self.nvlink_domain and self.pods > 1

    def pod_names(self) -> list[str]:
        return [self.name] if self.pods == 1 else [f"{self.name}-{i}" for i in range(self.pods)]


def pending_jobs(pods: list[Pod], jobs: list[Job]) -> list[PendingJob]:
    found = [PendingJob(p.name, 1, p.gpus, p) for p in pods] + [
        PendingJob(j.name, j.pods, j.gpus_per_pod, j, j.nvlink_domain) for j in jobs
    ]
    names = [job.name for job in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"pending pods and jobs must have distinct names: {', '.join(duplicates)}")
    idle = [job.name for job in found if job.gpus < 1]
    if idle:
        raise ValueError(f"{', '.join(idle)}: gpus must be at least 1 to plan (a pod without GPUs needs no GPU plan)")
    lowest = min((job.needs.priority for job in found), default=0)
    objective = sum(weight_of(job.needs.priority, lowest) * job.gpus * job.pods for job in found)
    if objective > MAX_OBJECTIVE:
        raise ValueError(f"priorities {lowest}..{max(job.needs.priority for job in found)} weigh the plan's objective "
                         f"beyond CP-SAT's exact range ({objective} > {MAX_OBJECTIVE}): use fewer distinct levels")
    return found


MAX_OBJECTIVE = 2**53  # CP-SAT's objective stays exact (a double) below this; coefficients must also fit an int64


def weight_of(priority: int, lowest: int) -> int:
    """Priorities as weights: the lowest pending priority weighs 1, each step above it one more."""
    return priority - lowest + 1


class PlanJob(BaseModel):
    """A pending job as the plan file records it, so that `validate` needs nothing else."""

    name: str
    pods: int
    gpus: int
    needs: GpuNeeds
    nvlink_domain: bool = False

    @classmethod
    def of(cls, job: PendingJob) -> PlanJob:
        needs = GpuNeeds.model_validate(job.needs.model_dump(include=set(GpuNeeds.model_fields)))
        return cls(name=job.name, pods=job.pods, gpus=job.gpus, needs=needs, nvlink_domain=job.nvlink_domain)

    def pending(self) -> PendingJob:
        return PendingJob(self.name, self.pods, self.gpus, self.needs, self.nvlink_domain)


class PlannedPod(BaseModel):
    pod: str
    job: str
    node: str
    gpus: list[int] = Field(default_factory=list, description="physical GPUs (time-sliced: one replica of each)")
    mig: list[tuple[int, int]] = Field(default_factory=list, description="(gpu, start) of MIG instances")
    split: bool = Field(False, description="spans NVLink islands")


class Metrics(BaseModel):
    weighted_gpus: int
    gpus_placed: int  # GPUs of complete jobs
    jobs_placed: int
    gpus_held_by_partial_jobs: int = 0
    stranded: dict[int, int]  # job size -> stranded free exclusive GPUs afterwards
    islands_split: int = 0


class HeuristicResult(BaseModel):
    policy: str
    mode: str  # pod | gang
    metrics: Metrics


class PlanReport(BaseModel):
    jobs: list[PlanJob]
    solve: SolveReport
    largest_size: int
    node_classes: int
    pod_shapes: int
    patterns: int
    assignments: list[PlannedPod]
    unplaced: list[str]  # jobs left out
    metrics: Metrics
    heuristics: list[HeuristicResult]


# --- the model -----------------------------------------------------------------------------------------------


@dataclass
class _JobType:
    jobs: list[PendingJob]
    shape: Shape
    weight: int
    classes: list[int]  # indices of compatible node classes
    confined: bool = False  # its jobs' pods share one NVLink domain

    @property
    def sample(self) -> PendingJob:
        return self.jobs[0]


def _job_types(jobs: list[PendingJob], classes: list[NodeClass], tags: list[str | None]) -> list[_JobType]:
    lowest = min((job.needs.priority for job in jobs), default=0)
    grouped: dict[tuple, list[PendingJob]] = defaultdict(list)
    for job in jobs:
        key = (job.pods, job.gpus, job.needs.priority, needs_key(job.needs), job.confined)
        grouped[key].append(job)
    types = []
    for members in grouped.values():
        sample = members[0]
        usable = [
            i for i, c in enumerate(classes)
            if compatible(sample.needs, sample.gpus, c.representative) and not (sample.confined and tags[i] is None)
        ]
        shape = Shape.of(sample.needs, sample.gpus)
        types.append(_JobType(members, shape, weight_of(sample.needs.priority, lowest), usable, sample.confined))
    return types


@dataclass
class _Model:
    model: cp_model.CpModel
    counts: dict[tuple[int, int], cp_model.IntVar]  # (class, pattern) -> nodes taking it
    groups: dict[tuple, list[int]]  # (shape, usable classes, confined type or None) -> job types
    supply: dict[tuple[tuple, int], cp_model.IntVar]  # (group, class) -> its pods there, where groups share a class
    placed: list[cp_model.IntVar]  # per job type: jobs placed
    placed_in: dict[tuple[int, str], cp_model.IntVar]  # (confined job type, NVLink domain) -> its jobs there
    tags: list[str | None]  # per class: its NVLink domain, where a pending job is confined to one
    class_patterns: list[list[tuple[tuple[Shape, ...], Arrangement]]]


def _link_supply(model, classes, types, class_patterns, shapes_by_class, counts, placed) -> tuple[dict, dict]:
    """Pods of each shape placed = pods of that shape the chosen patterns offer.

    Job types of one shape that may use the same node classes form a group, and a group needs no per-class
    split; only when groups of one shape overlap on a class does a variable say how the class is shared. A job
    type confined to one NVLink domain is a group of its own and always gets the per-class split.
    """
    groups: dict[tuple, list[int]] = defaultdict(list)
    for j, t in enumerate(types):
        groups[(t.shape, tuple(t.classes), j if t.confined else None)].append(j)
    supply: dict[tuple[tuple, int], cp_model.IntVar] = {}
    for shape in {t.shape for t in types}:
        shape_groups = {key: members for key, members in groups.items() if key[0] == shape}
        offered = {
            c: sum(counts[(c, k)] * pattern.count(shape) for k, (pattern, _) in enumerate(class_patterns[c]) if shape in pattern)
            for c in {c for key in shape_groups for c in key[1]}
        }
        if len(shape_groups) == 1 and next(iter(shape_groups))[2] is None:
            (key, members), = shape_groups.items()
            model.add(sum(types[j].sample.pods * placed[j] for j in members) == sum(offered.values()))
            continue
        for key, members in shape_groups.items():
            for c in key[1]:
                supply[(key, c)] = model.new_int_var(0, len(classes[c].nodes) * 64, "z")
            model.add(sum(supply[(key, c)] for c in key[1]) == sum(types[j].sample.pods * placed[j] for j in members))
        for c, total in offered.items():
            model.add(sum(v for (key, cls), v in supply.items() if key[0] == shape and cls == c) == total)
    return groups, supply


def _confine(model, classes, types, tags, groups, supply, placed) -> dict:
    """A confined job type's jobs, counted per NVLink domain: each job's pods all come from one domain's classes."""
    placed_in: dict[tuple[int, str], cp_model.IntVar] = {}
    for key, (j,) in ((key, members) for key, members in groups.items() if key[2] is not None):
        t = types[j]
        for domain in dict.fromkeys(tags[c] for c in t.classes):
            placed_in[(j, domain)] = var = model.new_int_var(0, len(t.jobs), f"n{j}_{domain}")
            model.add(sum(supply[(key, c)] for c in t.classes if tags[c] == domain) == t.sample.pods * var)
        model.add(sum(v for (i, _), v in placed_in.items() if i == j) == placed[j])
    return placed_in


def _build(classes: list[NodeClass], types: list[_JobType], largest: int, tags: list[str | None]) -> tuple[_Model, list]:
    model = cp_model.CpModel()
    shapes_by_class: dict[int, list[Shape]] = defaultdict(list)
    for t in types:
        for c in t.classes:
            if t.shape not in shapes_by_class[c]:
                shapes_by_class[c].append(t.shape)
    class_patterns = [patterns(room_of(c.representative), shapes_by_class[i]) for i, c in enumerate(classes)]
    counts = {}
    for c, found in enumerate(class_patterns):
        size = len(classes[c].nodes)
        row = [model.new_int_var(0, size, f"y{c}_{k}") for k in range(len(found))]
        model.add(sum(row) == size)
        counts.update({(c, k): var for k, var in enumerate(row)})
    placed = [model.new_int_var(0, len(t.jobs), f"n{j}") for j, t in enumerate(types)]
    groups, supply = _link_supply(model, classes, types, class_patterns, shapes_by_class, counts, placed)
    placed_in = _confine(model, classes, types, tags, groups, supply, placed)
    levels = [
        ("priority-weighted GPUs placed", "maximize",
         sum(t.weight * t.sample.pods * t.sample.gpus * placed[j] for j, t in enumerate(types))),
        ("jobs placed", "maximize", sum(placed)),
        (f"stranded GPUs for {largest}-GPU pods", "minimize",
         sum(counts[(c, k)] * (a.free_whole % largest) for c, found in enumerate(class_patterns)
             for k, (_, a) in enumerate(found))),
        ("pods split across NVLink islands", "minimize",
         sum(counts[(c, k)] * a.splits for c, found in enumerate(class_patterns) for k, (_, a) in enumerate(found))),
    ]
    return _Model(model, counts, groups, supply, placed, placed_in, tags, class_patterns), levels


# --- disaggregation ------------------------------------------------------------------------------------------


def _gpus_of(node: NodeState, shape: Shape, slots: tuple[int, ...]) -> tuple[list[int], list[tuple[int, int]]]:
    whole, shared, mig = canonical_free(node)
    if shape.mig_profile:
        return sorted({mig[s][0] for s in slots}), [mig[s] for s in slots]
    if shape.shared_gib is not None:
        return [shared[s] for s in slots], []
    flat = [index for island in whole for index in island]
    return [flat[s] for s in slots], []


def _quota(solver: cp_model.CpSolver, built: _Model, key: tuple, c: int, slots: list) -> list:
    """The group's share of a class's slots: all of them, unless groups of the same shape share the class."""
    if (key, c) not in built.supply:
        return slots
    share = solver.value(built.supply[(key, c)])
    taken, slots[:] = slots[:share], slots[share:]
    return taken


def _extract(solver: cp_model.CpSolver, built: _Model, classes: list[NodeClass], types: list[_JobType]) -> tuple[list[PlannedPod], list[str]]:
    """Pattern counts -> concrete nodes and GPUs -> concrete pods of concrete jobs."""
    slots: dict[tuple[int, Shape], list[tuple[NodeState, list[int], list[tuple[int, int]], bool]]] = defaultdict(list)
    for c, found in enumerate(built.class_patterns):
        nodes = iter(classes[c].nodes)
        for k, (_, arrangement) in enumerate(found):
            for _ in range(solver.value(built.counts[(c, k)])):
                node = next(nodes)
                for item in arrangement.items:
                    gpus, mig = _gpus_of(node, item.shape, item.slots)
                    slots[(c, item.shape)].append((node, gpus, mig, item.split))
    assignments: list[PlannedPod] = []
    unplaced: list[str] = []
    for key, members in built.groups.items():
        shape, usable, confined = key
        quotas = {c: _quota(solver, built, key, c, slots[(c, shape)]) for c in usable}
        if confined is None:
            pods = []
            for j in members:
                chosen = types[j].jobs[: solver.value(built.placed[j])]
                unplaced += [job.name for job in types[j].jobs[len(chosen):]]
                pods += [(job, name) for job in chosen for name in job.pod_names()]
            portions = [(pods, [slot for c in usable for slot in quotas[c]])]
        else:  # each domain's jobs take that domain's slots
            waiting = list(types[confined].jobs)
            portions = []
            for (j, domain), var in built.placed_in.items():
                if j == confined:
                    chosen, waiting = waiting[: solver.value(var)], waiting[solver.value(var):]
                    free = [slot for c in usable if built.tags[c] == domain for slot in quotas[c]]
                    portions.append(([(job, name) for job in chosen for name in job.pod_names()], free))
            unplaced += [job.name for job in waiting]
        for pods, free in portions:
            for (job, name), (node, gpus, mig, split) in zip(pods, free, strict=False):
                assignments.append(PlannedPod(pod=name, job=job.name, node=node.name, gpus=gpus, mig=mig, split=split))
    return assignments, unplaced


# --- heuristics and metrics ----------------------------------------------------------------------------------


def _stranded(state: ClusterState, sizes: tuple[int, ...]) -> dict[int, int]:
    rows: list[FragRow] = fragmentation(state, sizes).rows
    return {row.size: row.stranded for row in rows}


def greedy(cluster: Cluster, jobs: list[PendingJob], policy: str, mode: str, sizes: tuple[int, ...]) -> Metrics:
    """kube-scheduler-style placement, job by job: pod mode keeps partial jobs' pods, gang mode gives them back."""
    state = ClusterState.from_cluster(cluster)
    placer = Placer(state, "gpu", policy)  # type: ignore[arg-type]
    lowest = min((job.needs.priority for job in jobs), default=0)
    complete: list[PendingJob] = []
    partial_gpus = 0
    domain_of = cluster.domain_of()
    for job in jobs:
        bound = []
        for name in job.pod_names():
            within = None  # a confined job's pods follow its first pod's domain, as pod affinity would
            if job.confined and bound:
                first = domain_of[bound[0][1].node.name]
                within = {node for node, domain in domain_of.items() if domain == first}
            option = placer.best(job.needs, job.gpus, within)
            if isinstance(option, Diagnosis):
                break
            placer.bind(name, job.needs, option)
            bound.append((name, option))
        if len(bound) == job.pods:
            complete.append(job)
        elif mode == "gang":
            for name, option in bound:
                placer.release(name, job.needs, option.node)
        else:
            partial_gpus += len(bound) * job.gpus
    return Metrics(
        weighted_gpus=sum(weight_of(j.needs.priority, lowest) * j.pods * j.gpus for j in complete),
        gpus_placed=sum(j.pods * j.gpus for j in complete),
        jobs_placed=len(complete),
        gpus_held_by_partial_jobs=partial_gpus,
        stranded=_stranded(state, sizes),
    )


def _plan_metrics(cluster: Cluster, jobs: list[PendingJob], assignments: list[PlannedPod], sizes: tuple[int, ...]) -> Metrics:
    state = ClusterState.from_cluster(cluster)
    needs = {job.name: job for job in jobs}
    for a in assignments:
        state.node(a.node).occupy(a.pod, needs[a.job].needs, a.gpus, a.mig)
    placed = {a.job for a in assignments}
    lowest = min((job.needs.priority for job in jobs), default=0)
    return Metrics(
        weighted_gpus=sum(weight_of(j.needs.priority, lowest) * j.pods * j.gpus for j in jobs if j.name in placed),
        gpus_placed=sum(j.pods * j.gpus for j in jobs if j.name in placed),
        jobs_placed=len(placed),
        stranded=_stranded(state, sizes),
        islands_split=sum(a.split for a in assignments),
    )


def check_plan(cluster: Cluster, jobs: list[PendingJob], assignments: list[PlannedPod]) -> list[str]:
    """The independent validator, plus what only a batch plan can get wrong: gangs all or nothing."""
    needs = {job.name: job for job in jobs}
    problems = violations(
        cluster,
        [Assignment(a.pod, needs[a.job].needs, a.node, tuple(a.gpus), tuple(a.mig), needs[a.job].gpus)
         for a in assignments],
    )
    bound: dict[str, int] = defaultdict(int)
    for a in assignments:
        bound[a.job] += 1
    problems += [f"job {name}: {n} of {needs[name].pods} pods placed" for name, n in bound.items() if n != needs[name].pods]
    domain_of = cluster.domain_of()
    domains: dict[str, set[str]] = defaultdict(set)
    for a in assignments:
        if needs[a.job].confined:
            domains[a.job].add(domain_of.get(a.node, a.node))
    problems += [
        f"job {name}: pods span NVLink domains {', '.join(sorted(found))}, but it needs one (nvlink_domain)"
        for name, found in domains.items() if len(found) > 1
    ]
    return problems


# --- entry point ---------------------------------------------------------------------------------------------


def _units(node: NodeState) -> int:
    """Every GPU unit the node has, free or not: replicas of whole GPUs and MIG instances."""
    return sum(len(gpu.mig) if gpu.mig else gpu.replicas for gpu in node.gpus)


def _by_domain(
    classes: list[NodeClass], domain_of: dict[str, str], racks: set[str], smallest: int
) -> tuple[list[NodeClass], list[str | None]]:
    """Split classes so that each lies in one NVLink domain. A node in no rack-scale domain is a domain of its own,
    so a class of its own, but only if it could hold a whole confined job (`smallest` units); the others stay
    aggregated, untagged, and no confined job may use them."""
    split: dict[tuple, NodeClass] = {}
    for c in classes:
        for node in c.nodes:
            tag = domain_of.get(node.name)
            if node.name not in racks and _units(node) < smallest:
                tag = None
            split.setdefault((c.key, tag), NodeClass(c.key + (tag,))).nodes.append(node)
    return list(split.values()), [tag for _, tag in split]


def plan(
    cluster: Cluster,
    jobs: list[PendingJob],
    config: SolverConfig | None = None,
    sizes: tuple[int, ...] = (1, 2, 4, 8),
    heuristics: bool = True,
) -> PlanReport:
    config = config or SolverConfig()
    state = ClusterState.from_cluster(cluster)
    classes = node_classes(state.nodes, frozenset(key for job in jobs for key in job.needs.node_selector))
    tags: list[str | None] = [None] * len(classes)
    confined = [job.pods * job.gpus for job in jobs if job.confined]
    if confined:
        racks = {name for domain in cluster.nvlink_domains for name in domain.nodes}
        classes, tags = _by_domain(classes, cluster.domain_of(), racks, min(confined))
    types = _job_types(jobs, classes, tags)
    largest = max((job.gpus for job in jobs if not job.needs.mig_profile and not job.needs.shared), default=1) or 1
    built, levels = _build(classes, types, largest, tags)
    solver, report = solve_lexicographic(built.model, levels, config)
    if report.levels[0].objective is None:
        raise Infeasible(f"no plan found within the time limit of {config.time_limit:g} s; give more time")
    assignments, unplaced = _extract(solver, built, classes, types)
    problems = check_plan(cluster, jobs, assignments)
    if problems:
        raise RuntimeError("internal error: the optimal plan failed validation: " + "; ".join(problems[:5]))
    all_sizes = tuple(sorted(set(sizes) | {largest}))
    compared = [
        HeuristicResult(policy=policy, mode=mode, metrics=greedy(cluster, jobs, policy, mode, all_sizes))
        for policy in ("binpack", "spread", "topology")
        for mode in ("pod", "gang")
    ] if heuristics else []
    return PlanReport(
        jobs=[PlanJob.of(job) for job in jobs],
        solve=report,
        largest_size=largest,
        node_classes=len(classes),
        pod_shapes=len({t.shape for t in types}),
        patterns=sum(len(found) for found in built.class_patterns),
        assignments=assignments,
        unplaced=unplaced,
        metrics=_plan_metrics(cluster, jobs, assignments, all_sizes),
        heuristics=compared,
    )
