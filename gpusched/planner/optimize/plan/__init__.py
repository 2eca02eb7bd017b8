"""`plan`: the best placement of a batch of pending pods and gangs onto the cluster as it is (busy GPUs stay).

build (model.py) → solve → extract (extract.py) → validate (validate.py). A job is all of its pods or none; a pod
of a pods file is a job of one. The model counts, per node class, how many nodes take each pattern (classes.py);
the plan is then disaggregated to concrete GPUs and checked by the independent validator, and compared with
kube-scheduler-style placement under each policy (baselines.py).

The solve goes in rounds. The first model leaves cpu and memory out (classes are what the GPUs see, jobs that
differ only in cpu or memory one type): a relaxation, so its optimum bounds every plan's, level by level. Its plan is
fitted to every node's cpu and memory (extract.py); when nothing had to be left out it reaches the bound on every
level and is proven optimal. Otherwise the nodes that turned a pod away get cpu and memory rows (classes of their
own) and the next round, still a relaxation and still a bound, starts from the best plan so far (the fitted one, or
the best gang-mode heuristic's): hinted, its value a floor, the best bound a ceiling. Rows on every node where cpu
or memory may run out are the full model, the last resort.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from ....models.cluster import Cluster
from ...deadline import Deadline
from ...state import ClusterState, NodeState
from ...validate import require_valid
from ..classes import NodeClass, PodShape, node_classes
from ..solver import LevelReport, SolverConfig, SolveReport, collector_paused, solve_lexicographic
from .baselines import greedy, greedy_cut, greedy_plan
from .extract import extract, plan_metrics
from .model import JobType, OutOfTime, PlanModel, binding_nodes, build, hint, job_types
from .report import (
    HeuristicResult,
    Metrics,
    NotRun,
    PendingJob,
    PlanJob,
    PlannedPod,
    PlanReport,
    WarmStart,
    pending_jobs,
    weight_of,
)
from .validate import check_plan

__all__ = [
    "POLICIES",
    "HeuristicResult",
    "Metrics",
    "NotRun",
    "PendingJob",
    "PlanJob",
    "PlanReport",
    "PlannedPod",
    "WarmStart",
    "check_plan",
    "greedy",
    "pending_jobs",
    "plan",
    "weight_of",
]


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


POLICIES = ("binpack", "spread", "topology")  # the heuristics plan is compared with, and starts from
FIRST = 0.25  # seconds the first heuristic may always take, even once reading the input has spent the limit: on
# a small cluster it takes milliseconds, and it is the floor every time-limited answer keeps


@dataclass
class _Heuristics:
    """The heuristics run so far: gang mode (complete jobs only, so each a feasible plan, the best one the warm
    start) and pod mode (only compared), and how long each gang-mode one took (its pod-mode twin's estimate)."""

    tried: bool = False  # the gang-mode ones were given their time (once)
    gang: list[HeuristicResult] = field(default_factory=list)
    pod: list[HeuristicResult] = field(default_factory=list)
    took: dict[str, float] = field(default_factory=dict)
    start: list[PlannedPod] = field(default_factory=list)
    cut: tuple[str, Metrics, list[PlannedPod]] | None = None  # the first, stopped at its deadline: a floor still

    def best(self) -> HeuristicResult | None:
        return max(self.gang, key=lambda h: _rank(h.metrics), default=None)

    def run_gang(
        self, cluster: Cluster, jobs: list[PendingJob], sizes: tuple[int, ...], deadline: float, last: float
    ) -> None:
        """Each gang-mode policy that ends in time (perf_counter): the first by `last` (it is the floor every
        answer keeps: without it a time-limited plan could be anything), the others by `deadline`, one not started
        unless it would end by then, taking as long as the one before. The best one's pods are the warm start."""
        self.tried = True
        found: list[tuple[HeuristicResult, list[PlannedPod]]] = []
        took = 0.0
        for policy in POLICIES:
            began = time.perf_counter()
            if found and began + took > deadline:
                break
            if found:
                result = greedy_plan(cluster, jobs, policy, "gang", sizes, deadline)
            else:  # the first: cut at `last`, what it placed by then is still the floor (every job whole)
                metrics, pods, finished = greedy_cut(cluster, jobs, policy, "gang", sizes, max(deadline, last))
                result = (metrics, pods) if finished else None
                if not finished:
                    self.cut = (policy, metrics, pods)
            if result is None:
                break
            took = self.took[policy] = time.perf_counter() - began
            found.append((HeuristicResult(policy=policy, mode="gang", metrics=result[0], seconds=took), result[1]))
        self.gang = [result for result, _ in found]
        if found:
            self.start = [*max(found, key=lambda item: _rank(item[0].metrics))[1]]

    def run_pod(self, cluster: Cluster, jobs: list[PendingJob], sizes: tuple[int, ...], deadline: float) -> None:
        """Each pod-mode policy whose gang-mode twin ran, if it would end by `deadline` taking as long as it."""
        for policy, took in self.took.items():
            began = time.perf_counter()
            if began + took > deadline:
                continue
            result = greedy_plan(cluster, jobs, policy, "pod", sizes, deadline)
            if result is not None:
                seconds = time.perf_counter() - began
                self.pod.append(HeuristicResult(policy=policy, mode="pod", metrics=result[0], seconds=seconds))

    def compared(self) -> tuple[list[HeuristicResult], list[NotRun]]:
        """Pod and gang mode of each policy, in POLICIES order, and those that did not run."""
        ran = {(h.policy, h.mode): h for h in [*self.pod, *self.gang]}
        keys = [(policy, mode) for policy in POLICIES for mode in ("pod", "gang")]
        return [ran[key] for key in keys if key in ran], [
            NotRun(policy=policy, mode=mode, reason="out of time") for policy, mode in keys if (policy, mode) not in ran
        ]

    def answers(self, jobs: list[PendingJob]) -> list[_Answer]:
        """The best gang-mode heuristic's plan, if one ran; else the first one's, as far as it got."""
        best = self.best()
        if best is None and self.cut is not None:
            policy, metrics, pods = self.cut
            placed = {a.job for a in pods}
            left_out = [job.name for job in jobs if job.name not in placed]
            source = f"{policy} (gang), cut at the deadline after {metrics.jobs_placed} jobs placed"
            return [_Answer(list(pods), left_out, metrics, None, source)]
        if best is None:
            return []
        placed = {a.job for a in self.start}
        left_out = [job.name for job in jobs if job.name not in placed]
        return [_Answer(self.start, left_out, best.metrics, None, f"{best.policy} ({best.mode})")]


def _rank(metrics: Metrics) -> tuple[int, int]:
    """The first two objective levels, which decide whether one plan beats another."""
    return metrics.weighted_gpus, metrics.jobs_placed


@dataclass
class _Stage:
    """One round's model of the batch: its classes, job types, model and objective levels."""

    classes: list[NodeClass]
    types: list[JobType]
    built: PlanModel
    levels: list
    largest: int  # the pod size whose stranded GPUs the third level counts

    def values(self, metrics: Metrics) -> list[float]:
        """A plan's value on each objective level, in build's order."""
        return [
            metrics.weighted_gpus,
            metrics.jobs_placed,
            metrics.stranded.get(self.largest, 0),
            metrics.islands_split,
        ]


@dataclass
class _Answer:
    """A valid plan, its metrics, and the report of the solve it came from (None: a heuristic's plan)."""

    assignments: list[PlannedPod]
    unplaced: list[str]
    metrics: Metrics
    report: SolveReport | None
    source: str
    reached: bool = False  # the plan has the report's value on every level it reports


def _split(classes: list[NodeClass], binding: frozenset[str]) -> list[NodeClass]:
    """The classes with each binding node a class of its own, for its cpu and memory rows."""
    found = []
    for c in classes:
        rest = [node for node in c.nodes if node.name not in binding]
        if rest:
            found.append(NodeClass(c.key, rest))
        found += [NodeClass(c.key + (node.name,), [node]) for node in c.nodes if node.name in binding]
    return found


def _stage(
    cluster: Cluster,
    classes: list[NodeClass],
    jobs: list[PendingJob],
    largest: int,
    binding: frozenset[str],
    deadline: float | None = None,
) -> _Stage:
    tags: list[str | None] = [None] * len(classes)
    confined = [job.pods * job.gpus for job in jobs if job.confined]
    if confined:
        racks = {name for domain in cluster.nvlink_domains for name in domain.nodes}
        classes, tags = _by_domain(classes, cluster.domain_of(), racks, min(confined))
    types = job_types(jobs, classes, tags, binding, deadline)
    built, levels = build(classes, types, largest, tags, binding, deadline)
    return _Stage(classes, types, built, levels, largest)


def _solve(
    stage: _Stage,
    config: SolverConfig,
    seconds: float,
    start: _Answer | None,
    ceiling: float | None,
) -> tuple[cp_model.CpSolver, SolveReport, bool]:
    """Solve a round's model from the best plan so far (hinted, its value a floor) under the best proven bound
    (a ceiling); whether that plan could be hinted."""
    hinted = (
        start is not None
        and bool(start.assignments)
        and hint(stage.built, stage.classes, stage.types, start.assignments)
    )
    first = stage.levels[0][2]
    if start is not None:
        stage.built.model.add(first >= start.metrics.weighted_gpus)
    if ceiling is not None:
        stage.built.model.add(first <= round(ceiling))
    limited = config.model_copy(update={"time_limit": max(seconds, 0.05)})
    solver, report = solve_lexicographic(stage.built.model, stage.levels, limited)
    return solver, report, hinted


def _first_level(report: SolveReport, metrics: Metrics, ceiling: float | None) -> LevelReport:
    """The first level of a report for this plan: its value, and the tightest proven bound (the solve's, or the
    best ceiling a round proved); a bound below the value is none (that search stopped before it proved one)."""
    first = report.levels[0] if report.levels else None
    objective = float(metrics.weighted_gpus)
    found = first.best_bound if first is not None and first.objective is not None else None
    bounds = [b for b in (ceiling, found) if b is not None and b >= objective]
    bound = min(bounds, default=None)
    return LevelReport(
        name=first.name if first is not None else "priority-weighted GPUs placed",
        sense="maximize",
        status="OPTIMAL" if bound == objective else "FEASIBLE",
        objective=objective,
        best_bound=bound,
        gap=None if bound is None else abs(bound - objective) / max(1.0, objective),
        seconds=first.seconds if first is not None else 0.0,
    )


def _judged(answer: _Answer, last: SolveReport, ceiling: float | None, count: int) -> SolveReport:
    """How good the chosen plan is. The last solve's own answer keeps its report, its first bound no looser than
    the ceiling; another (an earlier round's fitted plan, a heuristic's) is FEASIBLE with its first level only.
    OPTIMAL only when every one of the `count` levels was proven."""
    first = _first_level(last, answer.metrics, ceiling)
    if answer.report is last and answer.reached:
        levels = [first, *last.levels[1:]]
        proven = len(levels) == count and all(level.status == "OPTIMAL" for level in levels)
        return last.model_copy(update={"levels": levels, "status": "OPTIMAL" if proven else "FEASIBLE"})
    return last.model_copy(update={"status": "FEASIBLE", "levels": [first]})


def plan(
    cluster: Cluster,
    jobs: list[PendingJob],
    config: SolverConfig | None = None,
    sizes: tuple[int, ...] = (1, 2, 4, 8),
    heuristics: bool = True,
    began: float | None = None,
    deadline: Deadline | None = None,
) -> PlanReport:
    """The optimal plan for the batch, validated, beside kube-scheduler-style placement under each policy.

    The time limit covers all of it, from `began` (perf_counter; default now: a command passes when it started, so
    that reading its input counts too): heuristics, every round's model and solve, disaggregation, validation.
    Each heuristic runs once: the gang-mode ones are the warm start and the comparison; a heuristic that would
    not end in time is not run, and the report says so. A plan not proven optimal is never worse than the best
    gang-mode heuristic, which the solve starts from (or which is the answer). With `heuristics` False they are
    not compared and run only when the first round did not prove its plan and time is left for another round.
    `deadline` (default: the time limit from `began`) is the one every phase keeps; what ran out is reported."""
    config = config or SolverConfig()
    deadline = deadline or Deadline.start(config.time_limit, began)
    with collector_paused():
        return _plan(cluster, jobs, config, sizes, heuristics, _Clock(deadline))


def _plan(
    cluster: Cluster,
    jobs: list[PendingJob],
    config: SolverConfig,
    sizes: tuple[int, ...],
    heuristics: bool,
    clock: _Clock,
) -> PlanReport:
    clock.phases["input"] = time.perf_counter() - clock.began
    largest = max((job.gpus for job in jobs if not job.needs.mig_profile and not job.needs.shared), default=1) or 1
    all_sizes = tuple(sorted(set(sizes) | {largest}))
    ran = _Heuristics()
    answers: list[_Answer] = []
    if heuristics:  # a third of the time left at most, the first until the limit (or FIRST, if later)
        with clock.phase("heuristics"):
            now = time.perf_counter()
            check = 0.05 + 1e-4 * len(cluster.nodes)  # validating its plan, the answer if nothing beats it
            ran.run_gang(cluster, jobs, all_sizes, now + clock.left() / 3, max(clock.deadline - check, now + FIRST))
        # kept for their pod-mode twins, which take about as long: a quarter of what is left at most (the answer
        # comes first; a twin with no time is named as not run)
        clock.compare = min(sum(ran.took.values()), max(clock.left(), 0.0) / 4)
        answers += ran.answers(jobs)
    late = bool(answers) and clock.deadline_.passed()  # the heuristics spent the time: their floor stands
    binding: frozenset[str] = frozenset()
    if late:
        clock.deadline_.note("model")
    else:
        with clock.phase("model"):
            state = ClusterState.from_cluster(cluster)
            binding = binding_nodes(state.nodes, jobs)
            seen = node_classes(state.nodes, frozenset(key for job in jobs for key in job.needs.node_selector))
    clock.reserve = 0.05 + 6e-5 * len(cluster.nodes)  # for disaggregation and validation, until measured
    rows: frozenset[str] = frozenset()  # the nodes whose cpu and memory this round's model counts
    lowest = min((job.needs.priority for job in jobs), default=0)
    everything = sum(weight_of(job.needs.priority, lowest) * job.pods * job.gpus for job in jobs)
    ceiling = float(everything)  # what no plan can exceed: all of it, until a round proves less
    hinted = False
    stage: _Stage | None = None
    last: SolveReport | None = None
    rounds = 0
    while not late:
        try:
            with clock.phase("model"):
                # the first round, like the first heuristic, may take FIRST past the limit (FIRST past it in all):
                # on a small cluster it takes milliseconds, and its bound is what every answer's gap is measured by
                grace = min(time.perf_counter() + FIRST, clock.deadline + FIRST - clock.reserve)
                by = clock.cutoff() if last is not None else max(clock.cutoff(), grace)
                stage = _stage(cluster, _split(seen, rows), jobs, largest, rows, by)
        except OutOfTime:
            clock.deadline_.note("model" if last is None else f"model (round {rounds + 1})")
            break  # no time for this round's model: the best plan so far (the heuristic floor) stands
        rounds += 1
        incumbent = max(answers, key=lambda a: _rank(a.metrics), default=None)
        with clock.phase("solve"):
            solver, last, round_hinted = _solve(stage, config, clock.left(), incumbent, ceiling)
        hinted = hinted or (round_hinted and incumbent is not None and incumbent.report is None)
        bound = last.levels[0].best_bound
        if bound is not None and last.levels[0].objective is not None:
            ceiling = min(ceiling, bound)
        if last.status != "OPTIMAL" and clock.left() <= 0.0:
            clock.deadline_.note(f"solve (round {rounds})")
        if last.levels[0].objective is None:
            break
        checked = time.perf_counter()
        with clock.phase("check"):
            assignments, unplaced, refused = extract(solver, stage.built, stage.classes, stage.types, jobs, binding)
            _checked(cluster, jobs, assignments, unplaced)
            metrics = plan_metrics(state, jobs, assignments, all_sizes)
        reached = stage.values(metrics)[: len(last.levels)] == [level.objective for level in last.levels]
        source = "gpu view" if not rows else ("full" if rows == binding else f"gpu view, rows for {len(rows)} nodes")
        answers.append(_Answer(assignments, unplaced, metrics, last, source, reached))
        clock.reserve = 1.2 * (time.perf_counter() - checked) + 0.05  # what the next one will take, measured
        if reached or rows == binding:
            break  # proven (the round's model bounds every plan), the full model's own answer, or out of time
        more = (refused & binding) - rows
        rows = rows | (more if more else binding)  # where the plan did not fit; failing that, every binding node
        if not ran.tried and clock.left() > 0:  # a third of what is left at most, the first until the limit
            with clock.phase("heuristics"):
                ran.run_gang(cluster, jobs, all_sizes, time.perf_counter() + clock.left() / 3, clock.cutoff())
            answers += ran.answers(jobs)
    if last is None:  # not even the first round's model was built in time: the floor, bounded by everything
        last = _unsolved(config, ceiling)
    if heuristics:
        with clock.phase("heuristics"):
            ran.run_pod(cluster, jobs, all_sizes, clock.deadline)
    if not answers:  # no heuristic ended in time and the solve found nothing: placing nothing is still a plan
        empty = plan_metrics(state, jobs, [], all_sizes)
        answers.append(_Answer([], [job.name for job in jobs], empty, None, "nothing placed (out of time)"))
    chosen = max(reversed(answers), key=lambda a: _rank(a.metrics))  # on a tie the latest round's
    if chosen.report is None:  # a heuristic's plan (the rounds' were checked as they came): checked all the same
        with clock.phase("check"):
            _checked(cluster, jobs, chosen.assignments, chosen.unplaced)
    judged = _judged(chosen, last, ceiling, len(stage.levels) if stage is not None else 4)
    return _report(jobs, stage, largest, len(binding), chosen, judged, ran, hinted, heuristics, clock)


def _unsolved(config: SolverConfig, ceiling: float) -> SolveReport:
    """The report of a solve that never started: no plan of its own, the ceiling its only bound."""
    level = LevelReport(
        name="priority-weighted GPUs placed",
        sense="maximize",
        status="UNKNOWN",
        objective=None,
        best_bound=ceiling,
        gap=None,
        seconds=0.0,
    )
    return SolveReport(
        status="UNKNOWN",
        levels=[level],
        seconds=0.0,
        time_limit=config.time_limit,
        workers=config.workers,
        seed=config.seed,
    )


def _checked(cluster: Cluster, jobs: list[PendingJob], assignments: list[PlannedPod], unplaced: list[str]) -> None:
    """The independent validator's verdict on a plan: one that fails it is a bug, never printed."""
    require_valid("the plan", check_plan(cluster, jobs, assignments, unplaced))


PHASES = ("input", "heuristics", "model", "solve", "check")


@dataclass
class _Clock:
    """The command's deadline, shared by every step: what is left for a solve once disaggregation and validation
    (and the pod-mode heuristics still to run) are reserved for, and where the time went."""

    deadline_: Deadline
    reserve: float = 0.0  # for disaggregation and validation
    compare: float = 0.0  # for the pod-mode heuristics
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] += time.perf_counter() - began

    @property
    def limit(self) -> float:
        return self.deadline_.limit

    @property
    def began(self) -> float:
        return self.deadline_.began

    @property
    def deadline(self) -> float:
        return self.deadline_.at

    def left(self) -> float:
        return self.deadline - time.perf_counter() - self.reserve - self.compare

    def cutoff(self) -> float:
        """When a model must be built by: once the time left is spent, none can be solved."""
        return self.deadline - self.reserve - self.compare


def _report(
    jobs: list[PendingJob],
    stage: _Stage | None,
    largest: int,
    binding: int,
    answer: _Answer,
    solve: SolveReport,
    ran: _Heuristics,
    hinted: bool,
    heuristics: bool,
    clock: _Clock,
) -> PlanReport:
    best = ran.best()
    compared, not_run = ran.compared() if heuristics else ([], [])
    return PlanReport(
        jobs=[PlanJob.of(job) for job in jobs],
        solve=solve.model_copy(update={"seconds": clock.phases["solve"], "time_limit": clock.limit}),
        largest_size=largest,
        node_classes=0 if stage is None else len(stage.classes),
        pod_shapes=len({PodShape.of(job.needs, job.gpus) for job in jobs}),
        gpu_shapes=len({PodShape.of(job.needs, job.gpus).gpu_view for job in jobs}),
        binding_nodes=binding,
        patterns=0 if stage is None else sum(len(found) for found in stage.built.class_patterns),
        build_seconds=clock.phases["heuristics"] + clock.phases["model"],
        seconds=time.perf_counter() - clock.began,
        phases=dict(clock.phases),
        source=answer.source,
        warm_start=None
        if best is None
        else WarmStart(policy=best.policy, mode=best.mode, hinted=hinted, metrics=best.metrics),
        assignments=answer.assignments,
        unplaced=answer.unplaced,
        metrics=answer.metrics,
        heuristics=compared,
        not_run=not_run,
        ran_out=list(clock.deadline_.ran_out),
    )
