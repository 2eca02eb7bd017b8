"""The offline bracket of an openb run: how much GPU the arrived pods could occupy at best, placed all at once.

Upper bound: a pattern LP at GPU level. A column is one GPU of a node type carrying a multiset of GPU-sharing pods
whose milli sum to at most 1000; whole-GPU pods (1, 2, 4, 8 GPUs) are direct variables per node type; rows are the
arrived pods per kind, and per node type its GPU count, total cpu and total memory. Every real placement is a
solution of it (each GPU's sharing pods are a column), so its optimum bounds the offline optimum. It is solved by
column generation with GLOP; the pricing problem (the best GPU column at the current duals) is a bounded knapsack
over milli, solved exactly by dynamic programming. The bound reported is not GLOP's objective but the dual bound
of the last duals made feasible: each node type's GPU price raised to the best column's value, which the knapsack
computes exactly; so it holds even where column generation stops early or the LP solver rounds.

Lower bound: a real placement of the same arrived pods. The LP is re-solved to prefer light pods (lightly, then
hard: the better placement counts), its columns rounded down and dealt to the nodes of their type (most GPUs and cpu
first; of three ways to pick each one's node, the one that places most), then every pod left over is placed best-fit
(gangs first, then by GPU milli). The independent check (share_check) recomputes it pod by pod; only then does its
allocated milli count.
"""

from __future__ import annotations

import copy
import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np
from ortools.linear_solver import pywraplp
from pydantic import BaseModel, Field

from ..planner.gpushare import SharePod, ShareState
from ..scenarios.openb import MILLI
from .openb import RunSpec, arrivals, prepare
from .share_check import Placed, check_share_placement

__all__ = [
    "LP_SOLVERS",
    "Bracket",
    "Kind",
    "LPFailed",
    "NodeType",
    "PatternLP",
    "best_fit_all",
    "bracket",
    "lower_placement",
    "node_types",
    "pod_kinds",
]

ROUNDS = 400  # column-generation rounds at most; the dual bound is valid after any of them
# milli per GPU's share of a node's cpu (and of its memory) charged to steer the placement's LP: lightly (most
# traces), and hard (pods confined to cpu-poor node types, as in gpuspec33)
STEERS = (0.5, 50.0)
DEALS = ("spread", "tight", "even")  # ways to deal the LP's columns to nodes (`_deal`)
TOLERANCE = 1e-6  # milli: a column better than its GPU price by less than this ends the generation


class Bracket(BaseModel):
    trace: str
    seed: int
    upper_pct: float | None = Field(
        None, description="upper bound on the allocated GPU milli, % of capacity (pattern LP dual); None: failed"
    )
    lower_pct: float | None = Field(None, description="a checked placement of the same arrived pods, % of capacity")
    gap_pp: float | None = Field(None, description="upper minus lower, points")
    lp_pct: float | None = Field(None, description="the last restricted LP's objective, % of capacity (≤ upper)")
    columns: int = Field(0, description="GPU columns generated")
    rounds: int = Field(0, description="column-generation rounds")
    converged: bool = Field(False, description="no column prices out: the LP optimum is reached")
    solver: str = Field(description="the LP solver that gave the bound (LP_SOLVERS: the first that reached optima)")
    failed: str | None = Field(None, description="what could not be computed, and why (None: the bracket is whole)")
    cpu_seconds: float = Field(description="CPU time of the bracket (steady when the machine is busy)")


@dataclass(frozen=True)
class Kind:
    """Arrived GPU pods that are alike for placement."""

    cpu: int
    memory: int
    gpus: int
    milli: int
    spec: int

    @property
    def shares(self) -> bool:
        return self.milli < MILLI


@dataclass(frozen=True)
class NodeType:
    """Nodes that are alike: GPU model and count, cpu, memory; `nodes` are their ShareState indices."""

    model: int
    gpus: int
    cpu: int
    memory: int
    nodes: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.nodes)


def node_types(state: ShareState) -> list[NodeType]:
    groups: dict[tuple[int, int, int, int], list[int]] = defaultdict(list)
    for i in range(state.size):
        if state.gpus[i]:
            key = (int(state.model[i]), int(state.gpus[i]), int(state.cpu_capacity[i]), int(state.memory_capacity[i]))
            groups[key].append(i)
    return [NodeType(*key, tuple(nodes)) for key, nodes in sorted(groups.items())]


def pod_kinds(pods: list[SharePod]) -> dict[Kind, list[int]]:
    """The arrival indices of each kind of GPU pod (CPU-only pods add nothing to the GPU allocation)."""
    kinds: dict[Kind, list[int]] = defaultdict(list)
    for index, pod in enumerate(pods):
        if pod.gpus:
            kinds[Kind(pod.cpu, pod.memory, pod.gpus, pod.milli, pod.spec)].append(index)
    return dict(kinds)


def _knapsack(weights: list[int], values: list[float], limits: list[int]) -> tuple[float, Counter[int]]:
    """The most value in one GPU: item i weighs weights[i] milli, at most limits[i] copies, total ≤ 1000. Exact
    (dynamic programming over milli, copies split in powers of two)."""
    best = np.zeros(MILLI + 1)
    chunks: list[tuple[int, int, np.ndarray]] = []  # (item, copies, taken at each capacity)
    for item, (weight, value, limit) in enumerate(zip(weights, values, limits, strict=True)):
        copies, size = limit, 1
        while copies > 0:
            take = min(size, copies)
            copies -= take
            size *= 2
            w = weight * take
            candidate = best[:-w] + value * take
            taken = np.zeros(MILLI + 1, dtype=bool)
            taken[w:] = candidate > best[w:]
            best[w:] = np.where(taken[w:], candidate, best[w:])
            chunks.append((item, take, taken))
    chosen: Counter[int] = Counter()
    room = MILLI
    for item, take, taken in reversed(chunks):
        if taken[room]:
            chosen[item] += take
            room -= weights[item] * take
    return float(best[MILLI]), chosen


# The LP solvers tried in turn when one does not reach an optimum (GLOP can end ABNORMAL on badly scaled rounds):
# (ortools solver, its parameters, the name a bracket reports). Any solver's duals give a valid bound (see solve).
LP_SOLVERS = (
    ("GLOP", "", "GLOP"),
    ("GLOP", "use_preprocessing: false use_scaling: false", "GLOP without presolve and scaling"),
    ("CLP", "", "CLP"),
    ("PDLP", "", "PDLP"),
)
STATUS_NAMES = {
    pywraplp.Solver.FEASIBLE: "FEASIBLE",
    pywraplp.Solver.INFEASIBLE: "INFEASIBLE",
    pywraplp.Solver.UNBOUNDED: "UNBOUNDED",
    pywraplp.Solver.ABNORMAL: "ABNORMAL",
    pywraplp.Solver.MODEL_INVALID: "MODEL_INVALID",
    pywraplp.Solver.NOT_SOLVED: "NOT_SOLVED",
}


class LPFailed(Exception):
    """No LP solver of LP_SOLVERS solved a round to optimality; the message lists what each one answered."""


@dataclass
class Column:
    """One LP column: `gpus` GPUs of node type `ti` carrying `content` (kind -> pods), and its variable."""

    ti: int
    content: Counter[int]
    gpus: int
    var: pywraplp.Variable

    @property
    def value(self) -> float:
        return float(self.var.solution_value())


class PatternLP:
    """The GPU-pattern LP of one arrived pod multiset on one cluster, grown by column generation."""

    def __init__(self, state: ShareState, kinds: dict[Kind, list[int]]) -> None:
        self.types = node_types(state)
        self.kinds = list(kinds)
        self.available = [len(kinds[k]) for k in self.kinds]
        self.eligible = [
            [
                k.gpus <= t.gpus and k.cpu <= t.cpu and k.memory <= t.memory and bool(state.access[k.spec, t.nodes[0]])
                for k in self.kinds
            ]
            for t in self.types
        ]
        self.penalty = 0.0
        self.backend = 0  # index into LP_SOLVERS
        self.whole: list[tuple[int, Column]] = []  # (kind, its pods on one node type)
        self.patterns: list[Column] = []  # one GPU carrying sharing pods
        self._build()
        for ti in range(len(self.types)):
            for ki, k in enumerate(self.kinds):
                if self.eligible[ti][ki] and not k.shares:
                    self.whole.append((ki, self._column(ti, Counter({ki: 1}), gpus=k.gpus)))

    @property
    def solver_name(self) -> str:
        return LP_SOLVERS[self.backend][2]

    def _build(self) -> None:
        """A fresh solver of the current backend with the rows, and every column known so far re-added."""
        name, parameters, _ = LP_SOLVERS[self.backend]
        self.solver = pywraplp.Solver.CreateSolver(name)
        if self.solver is None:
            raise LPFailed(f"{name} is not available in this ortools")
        if parameters:
            self.solver.SetSolverSpecificParametersAsString(parameters)
        infinity = self.solver.infinity()
        self.kind_rows = [self.solver.Constraint(-infinity, n) for n in self.available]
        self.gpu_rows = [self.solver.Constraint(-infinity, t.count * t.gpus) for t in self.types]
        self.cpu_rows = [self.solver.Constraint(-infinity, t.count * t.cpu) for t in self.types]
        self.memory_rows = [self.solver.Constraint(-infinity, t.count * t.memory) for t in self.types]
        self.objective = self.solver.Objective()
        self.objective.SetMaximization()
        for column in [c for _, c in self.whole] + self.patterns:
            column.var = self._variable(column.ti, column.content, column.gpus)

    def _variable(self, ti: int, content: Counter[int], gpus: int) -> pywraplp.Variable:
        var = self.solver.NumVar(0, self.solver.infinity(), "")
        kinds = [(self.kinds[ki], n) for ki, n in content.items()]
        self.objective.SetCoefficient(var, self._worth(ti, content))
        for ki, n in content.items():
            self.kind_rows[ki].SetCoefficient(var, n)
        self.gpu_rows[ti].SetCoefficient(var, gpus)
        self.cpu_rows[ti].SetCoefficient(var, sum(k.cpu * n for k, n in kinds))
        self.memory_rows[ti].SetCoefficient(var, sum(k.memory * n for k, n in kinds))
        return var

    def _column(self, ti: int, content: Counter[int], gpus: int) -> Column:
        return Column(ti, content, gpus, self._variable(ti, content, gpus))

    def _worth(self, ti: int, content: Counter[int]) -> float:
        """A column's objective: its GPU milli, less `penalty` per GPU's share of the node's cpu and memory it uses."""
        return sum(self._value(ti, ki) * n for ki, n in content.items())

    def _value(self, ti: int, ki: int) -> float:
        t, k = self.types[ti], self.kinds[ki]
        return k.gpus * k.milli - self.penalty * t.gpus * (k.cpu / t.cpu + k.memory / max(1, t.memory))

    def _price(self, ti: int, u: list[float], b: float, m: float) -> tuple[float, Counter[int]]:
        """The best sharing column of type `ti` at the duals (kind prices u, cpu price b, memory price m)."""
        items, weights, values, limits = [], [], [], []
        for ki, k in enumerate(self.kinds):
            if k.shares and self.eligible[ti][ki]:
                value = self._value(ti, ki) - u[ki] - b * k.cpu - m * k.memory
                if value > 0:
                    items.append(ki)
                    weights.append(k.milli)
                    values.append(value)
                    limits.append(min(self.available[ki], MILLI // k.milli))
        if not items:
            return 0.0, Counter()
        value, chosen = _knapsack(weights, values, limits)
        return value, Counter({items[i]: n for i, n in chosen.items()})

    def steer(self, penalty: float) -> None:
        """Charge `penalty` milli per GPU's share of cpu and memory used: among (nearly) optimal solutions, the LP
        then prefers light pods, which leaves the per-node slack that dealing its columns to nodes needs. Only the
        unsteered LP (penalty 0) is a bound."""
        self.penalty = penalty
        for column in [c for _, c in self.whole] + self.patterns:
            self.objective.SetCoefficient(column.var, self._worth(column.ti, column.content))

    def _optimal(self) -> None:
        """Solve the restricted LP to optimality: on the current backend, else on each later one in LP_SOLVERS
        (rebuilt with every column so far), which then stays; LPFailed when none gets there."""
        tried = []
        while True:
            status = self.solver.Solve()
            if status == pywraplp.Solver.OPTIMAL:
                return
            tried.append(f"{self.solver_name} {STATUS_NAMES.get(status, status)}")
            if self.backend + 1 == len(LP_SOLVERS):
                raise LPFailed("no LP solver reached an optimum: " + ", ".join(tried))
            self.backend += 1
            self._build()

    def solve(self) -> tuple[float, float, int, bool]:
        """Generate columns until none prices out (or ROUNDS); (dual bound, LP objective, rounds, converged). The
        dual bound bounds the objective at the current penalty: it is the value of the last duals (clipped at 0)
        made feasible by raising each node type's GPU price to its best column, so it holds for any solver's duals,
        however exact, and however the generation ended."""
        bound, rounds, converged = math.inf, 0, False
        while rounds < ROUNDS:
            rounds += 1
            self._optimal()
            u = [max(0.0, row.dual_value()) for row in self.kind_rows]
            b = [max(0.0, row.dual_value()) for row in self.cpu_rows]
            m = [max(0.0, row.dual_value()) for row in self.memory_rows]
            a = [max(0.0, row.dual_value()) for row in self.gpu_rows]
            added = 0
            total = sum(n * price for n, price in zip(self.available, u, strict=True))
            for ti, t in enumerate(self.types):
                value, content = self._price(ti, u, b[ti], m[ti])
                price = max(a[ti], value)
                for ki, column in self.whole:
                    if column.ti == ti:
                        k = self.kinds[ki]
                        price = max(price, (self._value(ti, ki) - u[ki] - b[ti] * k.cpu - m[ti] * k.memory) / k.gpus)
                total += t.count * (t.gpus * price + t.cpu * b[ti] + t.memory * m[ti])
                if value > a[ti] + TOLERANCE:
                    self.patterns.append(self._column(ti, content, gpus=1))
                    added += 1
            bound = min(bound, total)
            if not added:
                converged = True
                break
        if not converged:  # the last round added columns: solve once more, so the solution read is of this model
            self._optimal()
        return bound, self.objective.Value(), rounds, converged


Unit = tuple[int, int, int, list[int]]  # GPUs, cpu, memory, arrivals that share those GPUs (one GPU) or own them


def _deal(
    state: ShareState, pods: list[SharePod], t: NodeType, units: list[Unit], how: str
) -> tuple[list[Placed], list[int]]:
    """Give each unit, most GPUs and cpu first, a node of type t with that many free GPUs, the cpu and the memory:
    `spread` the node with the most cpu per free GPU (cpu-heavy units spread out), `tight` the node with the least
    cpu left (best fit), `even` the node left with the cpu per free GPU closest to what the units still to come
    need. Returns what was placed and the arrivals of the units that found no node."""
    nodes = np.array(t.nodes)
    placed: list[Placed] = []
    left = []
    cpu_to_come = sum(unit[1] for unit in units)
    gpus_to_come = sum(unit[0] for unit in units)
    for gpus, cpu, memory, members in sorted(units, key=lambda unit: (-unit[0], -unit[1], -unit[2])):
        free = state.gpu_free_whole[nodes]
        cpu_left = state.cpu_left[nodes]
        ok = (free >= gpus) & (cpu_left >= cpu) & (state.memory_left[nodes] >= memory)
        if not ok.any():
            left.extend(members)
            continue
        if how == "spread":
            pick = np.argmax(np.where(ok, cpu_left / np.maximum(free, 1), -1.0))
        elif how == "tight":
            pick = np.argmin(np.where(ok, cpu_left, np.iinfo(np.int64).max))
        else:  # "even": leave each node as much cpu per free GPU as the units still to come need
            cpu_to_come -= cpu
            gpus_to_come -= gpus
            need = cpu_to_come / max(1, gpus_to_come)
            after = (cpu_left - cpu) / np.maximum(free - gpus, 1)
            pick = np.argmin(np.where(ok, np.where(free > gpus, np.abs(after - need), 0.0), np.inf))
        node = int(nodes[int(pick)])
        gpu_ids = state.whole_gpus(node, gpus)
        for index in members:
            state.bind(pods[index], node, gpu_ids)
            placed.append((index, state.names[node], gpu_ids))
    return placed, left


def _deal_best(
    state: ShareState, pods: list[SharePod], t: NodeType, units: list[Unit], placed: list[Placed]
) -> list[int]:
    """`_deal` every way on a copy, then the way that placed the most GPU milli for real; returns the arrivals left."""
    tries = []
    for how in DEALS:
        trial = copy.deepcopy(state)
        done, left = _deal(trial, pods, t, units, how)
        tries.append((sum(pods[index].total_milli for index, _, _ in done), how))
    done, left = _deal(state, pods, t, units, max(tries)[1])
    placed.extend(done)
    return left


def _best_fit(state: ShareState, pod: SharePod) -> tuple[int, tuple[int, ...]] | None:
    """The tightest place for a pod: fewest free GPUs left (whole-GPU pods), least milli left (sharing pods)."""
    ok = np.flatnonzero(state.feasible(pod))
    if not ok.size:
        return None
    if not pod.shares:
        node = int(ok[np.argmin(state.gpu_free_whole[ok])])
        return node, state.whole_gpus(node, pod.gpus)
    rows = state.gpu_left[ok]
    leftover = np.where(rows >= pod.milli, rows - pod.milli, MILLI + 1)
    flat = int(np.argmin(leftover))
    return int(ok[flat // rows.shape[1]]), (flat % rows.shape[1],)


def lower_placement(
    state: ShareState, lp: PatternLP, kinds: dict[Kind, list[int]], pods: list[SharePod]
) -> list[Placed]:
    """A real placement: the LP's columns rounded down and dealt to nodes, then the rest best-fit."""
    pool = {k: list(reversed(indices)) for k, indices in kinds.items()}
    units: dict[int, list[Unit]] = defaultdict(list)
    for ki, column in lp.whole:
        kind = lp.kinds[ki]
        for _ in range(int(column.value + 1e-6)):
            if pool[kind]:
                units[column.ti].append((kind.gpus, kind.cpu, kind.memory, [pool[kind].pop()]))
    for column in lp.patterns:
        for _ in range(int(column.value + 1e-6)):
            members = [
                pool[lp.kinds[ki]].pop() for ki, n in column.content.items() for _ in range(n) if pool[lp.kinds[ki]]
            ]
            cpu = sum(pods[i].cpu for i in members)
            memory = sum(pods[i].memory for i in members)
            units[column.ti].append((1, cpu, memory, members))
    placed: list[Placed] = []
    rest = []
    for ti, t in enumerate(lp.types):
        rest.extend(_deal_best(state, pods, t, units[ti], placed))
    rest.extend(index for indices in pool.values() for index in indices)
    return placed + best_fit_all(state, pods, rest)


def best_fit_all(state: ShareState, pods: list[SharePod], indices: list[int]) -> list[Placed]:
    """Each of these GPU pods (gangs first, then by GPU milli) best-fit where it still fits."""
    placed: list[Placed] = []
    for index in sorted(indices, key=lambda i: (-pods[i].gpus, -pods[i].milli, pods[i].cpu, pods[i].memory)):
        if not pods[index].gpus:
            continue
        choice = _best_fit(state, pods[index])
        if choice is not None:
            state.bind(pods[index], *choice)
            placed.append((index, state.names[choice[0]], choice[1]))
    return placed


def bracket(spec: RunSpec) -> Bracket:
    """The bracket for the pods that arrive under `spec.seed` (deterministic: no time limit, only ROUNDS). Never
    raises for a solver's sake: when no LP solver bounds the LP, the bracket says so (`failed`, with the reason)
    and the runs beside it keep their results."""
    began = time.process_time()
    prepared = prepare(spec.trace, spec.nodes, spec.node_count, spec.variant)
    state = ShareState(prepared.cluster, prepared.table)
    order = arrivals(prepared.milli, state.capacity_milli, spec.ratio, spec.seed)
    pods = [prepared.table.pods[i] for i in order.tolist()]
    kinds = pod_kinds(pods)
    lp = PatternLP(state, kinds)
    scale = 100.0 / state.capacity_milli
    try:
        upper, objective, rounds, converged = lp.solve()
    except LPFailed as error:
        return Bracket(
            trace=prepared.name, seed=spec.seed, solver=lp.solver_name, failed=f"upper bound: {error}",
            columns=len(lp.patterns), cpu_seconds=round(time.process_time() - began, 2),
        )  # fmt: skip
    upper = min(upper, state.capacity_milli, sum(pod.total_milli for pod in pods))
    solver = lp.solver_name
    placed: list[Placed] = []
    for steer in STEERS:  # the placement from each steered LP; the one that places the most GPU milli
        lp.steer(steer)
        try:
            lp.solve()
        except LPFailed:  # this steer gives no placement; the bound above stands
            continue
        trial = lower_placement(copy.deepcopy(state), lp, kinds, pods)
        if sum(pods[i].total_milli for i, _, _ in trial) > sum(pods[i].total_milli for i, _, _ in placed):
            placed = trial
    if not placed:
        placed = best_fit_all(copy.deepcopy(state), pods, list(range(len(pods))))
    errors = check_share_placement(prepared.cluster, prepared.table.specs, pods, placed)
    lower = None if errors else sum(pods[index].total_milli for index, _, _ in placed)  # a broken one never counts
    return Bracket(
        trace=prepared.name,
        seed=spec.seed,
        upper_pct=round(math.ceil(upper * scale * 1e4) / 1e4, 4),
        lower_pct=None if lower is None else round(math.floor(lower * scale * 1e4) / 1e4, 4),
        gap_pp=None if lower is None else round((upper - lower) * scale, 4),
        lp_pct=round(objective * scale, 4),
        columns=len(lp.patterns),
        rounds=rounds,
        converged=converged,
        solver=solver,
        failed=f"lower bound: the offline placement breaks the rules: {errors[0]}" if errors else None,
        cpu_seconds=round(time.process_time() - began, 2),
    )
