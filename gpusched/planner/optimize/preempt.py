"""preempt: the smallest set of lower-priority pods to evict so that a pending pod or gang runs, proven by CP-SAT.

build → solve → extract → validate. A pod lives on one node, so an eviction plan is one choice per node: how many
of the gang's pods it takes and which of its pods go. Nodes identical up to pod names form one *kind*; for each
kind and each number of pods m, every minimal set of evictions that lets m pods fit is enumerated with gpusched's
own fit (`evaluate`), the victims counted per class of interchangeable pods. CP-SAT then chooses how many nodes of
each kind take each choice so that all the pods fit: exact (a superset of evictions is never better), and sized
by the kinds of node, not the number of nodes.

Objective, in order: the highest victim priority, the victims' GPUs (units: GPUs, replicas or MIG instances), the
number of victims, then the earliest nodes by name (so that runs repeat). Disruption budgets are hard limits.
Beside it, kube-scheduler's DefaultPreemption on the same input, pod by pod, in the GPU and the integer view.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from ortools.sat.python import cp_model
from pydantic import BaseModel, Field

from ...models.cluster import Cluster, RunningPod
from ...models.workload import GpuNeeds, Job, Pod
from ..fit import Option, View, evaluate
from ..framework import Code, Diagnosis, Status, fit_error
from ..place import Placer
from ..preemption import Candidate, budget_split, candidates_wanted, importance, pick, reprieve
from ..state import ClusterState, NodeState
from ..validate import Assignment
from .disrupt import (
    Budgets,
    choices_per_kind,
    out_of_time,
    problems,
    running_pods,
    running_state,
    scratch,
    solve_counts,
    spread_over_kinds,
)
from .solver import Infeasible, SolverConfig, SolveReport

__all__ = ["Alternative", "Cost", "Pending", "Placement", "PreemptReport", "Victim", "preempt"]


# --- input and output ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pending:
    """What waits: one pod, or a job's `pods` identical pods that run all together or not at all."""

    name: str
    kind: Literal["pod", "job"]
    needs: GpuNeeds
    pods: int
    gpus: int

    @classmethod
    def of(cls, item: Pod | Job) -> Pending:
        needs = GpuNeeds.model_validate(item.model_dump(include=set(GpuNeeds.model_fields)))
        if isinstance(item, Job):
            return cls(item.name, "job", needs, item.pods, item.gpus_per_pod)
        return cls(item.name, "pod", needs, 1, item.gpus)

    def pod_names(self) -> list[str]:
        return [self.name] if self.kind == "pod" else [f"{self.name}-{i}" for i in range(self.pods)]


class PendingInfo(BaseModel):
    name: str
    kind: str
    pods: int
    gpus_per_pod: int
    priority: int
    nvlink: bool
    mig_profile: str | None


class Victim(BaseModel):
    pod: str
    node: str
    priority: int
    units: int = Field(description="GPUs, replicas or MIG instances it holds")


class Placement(BaseModel):
    pod: str
    node: str
    resource: str
    gpus: list[int]
    islands: list[int]
    mig: list[tuple[int, int]] = Field(default_factory=list, description="(gpu, start) of MIG instances")


class Cost(BaseModel):
    """What an eviction plan costs, in the order the optimum minimises it."""

    highest_priority: int | None = Field(description="the highest victim priority; null when nothing is evicted")
    units: int = Field(description="victims' GPUs (replicas, MIG instances)")
    victims: int
    budget_violations: int = Field(0, description="evictions beyond what the disruption budgets allow")


class Alternative(BaseModel):
    """Another way to answer the same question (kube-scheduler's DefaultPreemption), judged by the same rules."""

    name: str
    found: bool
    victims: list[Victim] = Field(default_factory=list)
    placements: list[Placement] = Field(default_factory=list)
    cost: Cost | None = None
    valid: bool = Field(False, description="the plan passes the validator on the hardware view")
    problems: list[str] = Field(default_factory=list)
    note: str = ""


class PreemptReport(BaseModel):
    pending: PendingInfo
    feasible: bool
    reason: str | None = Field(None, description="why there is no plan (exit 1)")
    victims: list[Victim] = Field(default_factory=list)
    placements: list[Placement] = Field(default_factory=list)
    cost: Cost | None = None
    solve: SolveReport | None = None
    kinds: int = Field(0, description="kinds of node the model was built on (identical nodes aggregated)")
    comparison: list[Alternative] = Field(default_factory=list)


# --- build: kinds of node and their eviction choices -------------------------------------------------------------


@dataclass(frozen=True)
class _Choice:
    """One way to make room on one node: m of the gang's pods, with so many victims of each class gone."""

    pods: int
    evict: tuple[int, ...]  # per victim class of the kind
    top: int | None
    units: int
    victims: int
    budgets: tuple[int, ...]  # evictions counted against each budget


@dataclass
class _Kind:
    nodes: list[str]
    classes: list[tuple]  # victim class keys: (priority, GPUs held, MIG profiles, cpu, memory, budgets)
    members: dict[str, list[list[RunningPod]]] = field(default_factory=dict)  # node -> members per class
    choices: list[_Choice] = field(default_factory=list)


def _units(pod: RunningPod) -> int:
    return len(pod.gpus) + len(pod.mig)


def _class_key(pod: RunningPod, node: NodeState, budgets: Budgets, binds: tuple[bool, bool]) -> tuple:
    """Pods with equal keys are interchangeable victims on this node: same priority, budgets, GPUs that are alike
    (the same island counts; exact GPUs and declared memory when time-sliced), and requests where they can bind."""
    if node.time_sliced:
        held = tuple(sorted((g, mem) for g in set(pod.gpus) for name, mem in node.gpus[g].holders if name == pod.name))
    else:
        held = tuple(sorted(Counter(node.gpus[g].island for g in pod.gpus).items()))
    profiles = tuple(sorted(s.profile for g, start in pod.mig for s in node.gpus[g].mig if s.start == start))
    cpu = pod.needs.cpu_milli if binds[0] else 0
    memory = pod.needs.memory_bytes if binds[1] else 0
    return (pod.needs.priority, held, profiles, cpu, memory, budgets.selecting(pod))


def _signature(node: NodeState, tags: dict[str, tuple], binds: tuple[bool, bool]) -> tuple:
    """Nodes with equal signatures are the same up to the names of interchangeable pods: exclusive GPUs by
    island and holder class, time-sliced and MIG GPUs one by one; cpu and memory only where they can bind."""
    spec = node.spec.model_dump_json(
        exclude={"name": True, "gpu": {"busy": True, "mig": True}, "cpu": not binds[0], "memory": not binds[1]}
    )

    def tag(name: str | None) -> tuple:
        return () if name is None else tags.get(name, ("keep",))

    exact = []
    islands: dict[int, Counter] = {}
    for gpu in node.gpus:
        if node.time_sliced or gpu.mig:
            mig = tuple((s.profile, s.start, tag(s.holder)) for s in gpu.mig)
            exact.append((gpu.index, mig, tuple(sorted((tag(h), mem) for h, mem in gpu.holders))))
        else:
            islands.setdefault(gpu.island, Counter())[tag(gpu.holders[0][0]) if gpu.holders else ("free",)] += 1
    whole = tuple((island, tuple(sorted(held.items()))) for island, held in sorted(islands.items()))
    return (spec, tuple(exact), whole, node.cpu_requested if binds[0] else 0, node.memory_requested if binds[1] else 0)


def _place(
    node: NodeState, gone: Sequence[RunningPod], pending: Pending, pods: int, view: View = "gpu"
) -> tuple[list[Option], Status | None]:
    """Place up to `pods` pending pods, one after another, on a copy of the node without `gone`: where they land,
    and the Status that stopped the next one (None when all fit)."""
    copy, placer = scratch(node)
    for pod in gone:
        placer.release(pod.name, pod.needs, copy)
    placed: list[Option] = []
    for index in range(pods):
        found = evaluate(pending.needs, pending.gpus, copy, view)
        if isinstance(found, Status):
            return placed, found
        placer.bind(f"\0pending-{index}", pending.needs, found)
        placed.append(found)
    return placed, None


def _minimal(limits: Sequence[int], ok: Callable[[tuple[int, ...]], bool]) -> list[tuple[int, ...]]:
    """Every minimal vector v <= limits with ok(v), for an `ok` that more evictions never make false."""
    cache: dict[tuple[int, ...], bool] = {}

    def test(vector: tuple[int, ...]) -> bool:
        if vector not in cache:
            cache[vector] = ok(vector)
        return cache[vector]

    found: list[tuple[int, ...]] = []

    def visit(prefix: tuple[int, ...]) -> None:
        index = len(prefix)
        rest = len(limits) - index - 1
        for count in range(limits[index] + 1):
            vector = (*prefix, count)
            if not test(vector + tuple(limits[index + 1 :])):
                continue  # not even with every later class gone
            if test(vector + (0,) * rest):
                found.append(vector + (0,) * rest)
                break  # more of this class would not be minimal
            if rest:
                visit(vector)

    if limits:
        visit(())
    elif ok(()):
        found.append(())
    return [v for v in found if not any(o != v and all(a <= b for a, b in zip(o, v, strict=True)) for o in found)]


def _choices(kind: _Kind, node: NodeState, pending: Pending, budgets: Budgets) -> list[_Choice] | Status:
    """Every minimal eviction per number of pods on the kind's first node; a Status when nothing helps."""
    members = kind.members[kind.nodes[0]]
    limits = tuple(len(group) for group in members)
    room: dict[tuple[int, ...], int] = {}

    def capacity(vector: tuple[int, ...]) -> int:
        if vector not in room:
            gone = [pod for group, count in zip(members, vector, strict=True) for pod in group[:count]]
            room[vector] = len(_place(node, gone, pending, pending.pods)[0])
        return room[vector]

    placed, stopped = _place(node, [pod for group in members for pod in group], pending, pending.pods)
    if not placed:
        assert stopped is not None
        return stopped
    room[limits] = len(placed)
    return [
        _describe(members, pods, vector, budgets)
        for pods in range(1, capacity(limits) + 1)
        for vector in _minimal(limits, lambda v, pods=pods: capacity(v) >= pods)
    ]


def _describe(members: list[list[RunningPod]], pods: int, vector: tuple[int, ...], budgets: Budgets) -> _Choice:
    """A choice's cost, read off the first members of each class (all members of a class cost the same)."""
    gone = [group[0] for group, count in zip(members, vector, strict=True) for _ in range(count)]
    used = Counter(i for pod in gone for i in budgets.selecting(pod))
    return _Choice(
        pods=pods,
        evict=vector,
        top=max((pod.needs.priority for pod in gone), default=None),
        units=sum(_units(pod) for pod in gone),
        victims=len(gone),
        budgets=tuple(used[i] for i in range(len(budgets.allowed))),
    )


def _binds(state: ClusterState, pending: Pending) -> tuple[bool, bool]:
    """Whether cpu, memory can stop the pending pods anywhere: if every node holds them all beside everything
    that runs now, evictions never matter for them and they are left out of classes and kinds, exactly."""

    def short(have: int | None, used: int, need: int) -> bool:
        return have is not None and used + need * pending.pods > have

    return (
        any(short(n.spec.cpu_milli, n.cpu_requested, pending.needs.cpu_milli) for n in state.nodes),
        any(short(n.spec.memory_bytes, n.memory_requested, pending.needs.memory_bytes) for n in state.nodes),
    )


def _kinds(state: ClusterState, cluster: Cluster, pending: Pending, budgets: Budgets) -> list[_Kind]:
    """Group nodes into kinds, victim classes per node (candidates: strictly lower priority, not pinned)."""
    binds = _binds(state, pending)
    by_node: dict[str, list[RunningPod]] = {}
    for pod in running_pods(cluster):
        if pod.needs.priority < pending.needs.priority and not budgets.pinned(pod):
            by_node.setdefault(pod.node, []).append(pod)
    kinds: dict[tuple, _Kind] = {}
    for node in state.nodes:
        keyed: dict[tuple, list[RunningPod]] = {}
        for pod in by_node.get(node.name, []):
            keyed.setdefault(_class_key(pod, node, budgets, binds), []).append(pod)
        classes = sorted(keyed)
        tags = {pod.name: ("victim", classes.index(key)) for key, pods in keyed.items() for pod in pods}
        signature = (_signature(node, tags, binds), tuple(classes))
        kind = kinds.setdefault(signature, _Kind([], classes))
        kind.nodes.append(node.name)
        kind.members[node.name] = [sorted(keyed[key], key=lambda p: (p.gpus, p.mig, p.name)) for key in classes]
    return sorted(kinds.values(), key=lambda k: k.nodes[0])


# --- solve, extract, validate ------------------------------------------------------------------------------------


def _solve(
    kinds: list[_Kind], pending: Pending, budgets: Budgets, config: SolverConfig
) -> tuple[list[list[int]] | None, SolveReport]:
    """How many nodes of each kind take each choice; None when the time ran out before any plan was found."""
    model = cp_model.CpModel()
    take, flat = choices_per_kind(model, [k.nodes for k in kinds], [k.choices for k in kinds])
    model.add(sum(choice.pods * var for choice, var in flat) >= pending.pods)
    for index, allowed in enumerate(budgets.allowed):
        model.add(sum(choice.budgets[index] * var for choice, var in flat) <= allowed)
    # the highest victim priority, as steps: allow[q] says victims of priority q (and below) may go
    tops = sorted({choice.top for choice, _ in flat if choice.top is not None})
    allow = {q: model.new_bool_var(f"allow_{q}") for q in tops}
    for lower, higher in zip(tops, tops[1:], strict=False):
        model.add_implication(allow[higher], allow[lower])
    for (choice, var), kind_size in zip(flat, (len(k.nodes) for k in kinds for _ in k.choices), strict=True):
        if choice.top is not None:
            model.add(var <= kind_size * allow[choice.top])
    nobody = tops[0] - 1 if tops else 0  # the "highest victim priority" of evicting nobody
    top = nobody + sum((q - p) * allow[q] for p, q in zip([nobody, *tops], tops, strict=False))
    levels = [
        ("highest victim priority", "minimize", top),
        ("victims' GPUs", "minimize", sum(choice.units * var for choice, var in flat)),
        ("victims", "minimize", sum(choice.victims * var for choice, var in flat)),
    ]
    return solve_counts(model, take, flat, levels, config)


def _placement(name: str, option: Option) -> Placement:
    return Placement(
        pod=name,
        node=option.node.name,
        resource=option.resource,
        gpus=list(option.gpus),
        islands=option.islands,
        mig=list(option.mig),
    )


def _victim(pod: RunningPod) -> Victim:
    return Victim(pod=pod.name, node=pod.node, priority=pod.needs.priority, units=_units(pod))


def _extract(
    kinds: list[_Kind], counts: list[list[int]], state: ClusterState, pending: Pending
) -> tuple[list[RunningPod], list[tuple[str, Option]]]:
    """Concrete victims (the first members of each class) and where each pending pod lands."""
    names = pending.pod_names()
    victims: list[RunningPod] = []
    placed: list[tuple[str, Option]] = []
    for kind_index, node, option in spread_over_kinds([k.nodes for k in kinds], counts):
        kind = kinds[kind_index]
        choice = kind.choices[option]
        wanted = min(choice.pods, len(names) - len(placed))  # the model may make room for more pods than wait
        if not wanted:
            continue
        gone = [pod for group, count in zip(kind.members[node], choice.evict, strict=True) for pod in group[:count]]
        found, stopped = _place(state.node(node), gone, pending, wanted)
        if stopped is not None:
            raise RuntimeError(f"internal error: node {node} does not behave like the first node of its kind")
        victims += gone
        placed += [(names[len(placed) + i], spot) for i, spot in enumerate(found)]
    return victims, placed


def _assignments(pending: Pending, placed: list[tuple[str, Option]]) -> list[Assignment]:
    return [Assignment(name, pending.needs, option.node.name, option.gpus, option.mig) for name, option in placed]


def _validate(
    cluster: Cluster, pending: Pending, victims: list[RunningPod], placed: list[Assignment], budgets: Budgets
) -> None:
    """Every plan passes checks that share no code with the model: a failure is a gpusched bug, never the user's."""
    found = [
        f"{v.name} has priority {v.needs.priority}, not below {pending.needs.priority}"
        for v in victims
        if v.needs.priority >= pending.needs.priority
    ]
    found += budgets.overdrawn(victims)
    if len(placed) != pending.pods:
        found.append(f"{len(placed)} of {pending.pods} pods placed")
    found += problems(cluster, [v.name for v in victims], placed)
    if found:
        raise RuntimeError("internal error: a preemption plan failed validation: " + "; ".join(found))


def _cost(victims: Sequence[RunningPod], budgets: Budgets) -> Cost:
    used = Counter(i for pod in victims for i in budgets.selecting(pod))
    return Cost(
        highest_priority=max((v.needs.priority for v in victims), default=None),
        units=sum(_units(v) for v in victims),
        victims=len(victims),
        budget_violations=sum(max(0, n - budgets.allowed[i]) for i, n in used.items()),
    )


# --- kube-scheduler's answer --------------------------------------------------------------------------------------


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
        return _place(node, [e.pod for e in gone], pending, 1, view)[1] is None

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


def _default_preemption(cluster: Cluster, pending: Pending, budgets: Budgets, view: View) -> Alternative:
    """DefaultPreemption pod by pod (the scheduler knows no gangs); ties go to the first node."""
    label = f"kube, {view} view"
    state = running_state(cluster)
    placer = Placer(state, view, "binpack")
    alive: dict[str, list[RunningPod]] = {node.name: [] for node in state.nodes}
    for pod in running_pods(cluster):
        alive[pod.node].append(pod)
    left = list(budgets.allowed)
    victims: list[RunningPod] = []
    placed: list[tuple[str, Option]] = []
    for name in pending.pod_names():
        found = placer.best(pending.needs, pending.gpus)
        if isinstance(found, Diagnosis):
            candidates = _dry_run(state, found, alive, pending, budgets, left, view)
            if not candidates:
                return Alternative(
                    name=label,
                    found=False,
                    victims=[_victim(v) for v in victims],
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
            found = evaluate(pending.needs, pending.gpus, node, view)
            if isinstance(found, Status):
                raise RuntimeError(f"internal error: {name} does not fit on {node.name} after preemption")
        placer.bind(name, pending.needs, found)
        placed.append((name, found))
    issues = problems(cluster, [v.name for v in victims], _assignments(pending, placed))
    return Alternative(
        name=label,
        found=True,
        victims=[_victim(v) for v in victims],
        placements=[_placement(n, o) for n, o in placed],
        cost=_cost(victims, budgets),
        valid=not issues,
        problems=issues,
        note="" if victims else f"no preemption: it fits as the {view} view counts",
    )


# --- the planner -------------------------------------------------------------------------------------------------


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


def _no_room(pending: Pending, kinds: list[_Kind], statuses: dict[str, Status], total: int) -> str | None:
    """Why no eviction can help, when even every evictable lower-priority pod gone is not enough."""
    room = sum(len(kind.nodes) * max(choice.pods for choice in kind.choices) for kind in kinds)
    if room == 0:
        why = fit_error(total, statuses.values())
        return f"{pending.name} cannot run even with every evictable lower-priority pod gone: {why}"
    if room < pending.pods:
        return f"even with every evictable lower-priority pod gone there is room for {room} of its {pending.pods} pods"
    return None


def preempt(cluster: Cluster, item: Pod | Job, config: SolverConfig | None = None) -> PreemptReport:
    """The optimal eviction set for a pending pod or job, validated, beside kube-scheduler's DefaultPreemption."""
    config = config or SolverConfig()
    pending = Pending.of(item)
    running = {pod.name: pod.node for pod in running_pods(cluster)}
    for name in pending.pod_names():
        if name in running:
            raise ValueError(f"{name} is already running on {running[name]}: preempt plans for a pending pod")
    budgets = Budgets.of(cluster)
    state = running_state(cluster)
    kinds, statuses = [], {}
    for kind in _kinds(state, cluster, pending, budgets):
        found = _choices(kind, state.node(kind.nodes[0]), pending, budgets)
        if isinstance(found, Status):
            statuses.update({node: found for node in kind.nodes})
        else:
            kind.choices = found
            kinds.append(kind)
    report = PreemptReport(
        pending=_info(pending),
        feasible=False,
        kinds=len(kinds),
        comparison=[_default_preemption(cluster, pending, budgets, view) for view in ("gpu", "extended")],
    )
    reason = _no_room(pending, kinds, statuses, len(state.nodes))
    if reason:
        return report.model_copy(update={"reason": reason})
    try:
        counts, solve = _solve(kinds, pending, budgets, config)
    except Infeasible:
        names = sorted({budgets.names[i] for kind in kinds for c in kind.choices for i, n in enumerate(c.budgets) if n})
        return report.model_copy(
            update={"reason": f"the evictions it needs would break disruption budgets: {', '.join(names)}"}
        )
    if counts is None:
        return out_of_time(report, solve, config)
    victims, placed = _extract(kinds, counts, state, pending)
    assignments = _assignments(pending, placed)
    _validate(cluster, pending, victims, assignments, budgets)
    return report.model_copy(
        update={
            "feasible": True,
            "victims": [_victim(v) for v in victims],
            "placements": [_placement(n, o) for n, o in placed],
            "cost": _cost(victims, budgets),
            "solve": solve,
        }
    )
