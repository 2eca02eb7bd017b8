"""What every CP-SAT planner shares: solver settings, the solve itself, and the report of how good the answer is.

Lexicographic objectives are solved one level at a time: optimise, fix the level at its optimum, hint the next
solve with the last solution. A level is OPTIMAL only when CP-SAT proved it; otherwise the gap is reported.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ortools.sat.python import cp_model
from pydantic import BaseModel, Field

from ...errors import Infeasible

__all__ = [
    "SolverConfig", "LevelReport", "SolveReport", "solve_lexicographic", "Infeasible", "collector_paused", "cp_solver",
]  # fmt: skip


class SolverConfig(BaseModel):
    time_limit: float = Field(10.0, gt=0, description="seconds for the whole solve, shared by its levels")
    workers: int = Field(2, ge=1, description="CP-SAT search workers")
    seed: int = Field(0, description="CP-SAT random seed, for repeatable runs")


class LevelReport(BaseModel):
    name: str
    sense: str  # maximize | minimize
    status: str  # OPTIMAL | FEASIBLE | INFEASIBLE | UNKNOWN
    objective: float | None
    best_bound: float | None
    gap: float | None  # |objective - bound| / max(1, |objective|); 0 when proven optimal
    seconds: float


class SolveReport(BaseModel):
    status: str  # the weakest level's status: OPTIMAL only when every level was proven optimal
    levels: list[LevelReport]
    seconds: float
    time_limit: float
    workers: int
    seed: int

    @property
    def optimal(self) -> bool:
        return self.status == "OPTIMAL"


Level = tuple[str, str, cp_model.LinearExprT]  # (name, "maximize" | "minimize", expression)


def cp_solver() -> cp_model.CpSolver:
    """A CP-SAT solver that leaves the process's signal handlers alone. By default (catch_sigint_signal) a solve
    installs its own SIGINT handler and, once it ends, resets SIGINT to the system default rather than to the
    handler it found: a later Ctrl-C would kill the process outright, skipping an `--apply` run's cleanup. A
    SIGINT during a solve now waits for the solve to end (its time limit bounds it) and reaches Python then."""
    solver = cp_model.CpSolver()
    solver.parameters.catch_sigint_signal = False
    return solver


def _integral(value: float) -> float:
    """The objectives are integer sums; CP-SAT may hand them back with float noise (6.999999999999999)."""
    nearest = round(value)
    return float(nearest) if abs(value - nearest) < 1e-6 else value


def _gap(objective: float, bound: float) -> float:
    return abs(objective - bound) / max(1.0, abs(objective))


def solve_lexicographic(
    model: cp_model.CpModel, levels: Sequence[Level], config: SolverConfig
) -> tuple[cp_model.CpSolver, SolveReport]:
    """Solve level by level; returns the solver holding the last level's solution, and the report."""
    began = time.perf_counter()
    reports: list[LevelReport] = []
    solver = best = cp_solver()  # best: the last solver that found a solution (a level may find none in time)
    for name, sense, expression in levels:
        remaining = config.time_limit - (time.perf_counter() - began)
        solver = cp_solver()
        solver.parameters.max_time_in_seconds = max(remaining, 0.01)
        solver.parameters.num_search_workers = config.workers
        solver.parameters.random_seed = config.seed
        if sense == "maximize":
            model.maximize(expression)
        else:
            model.minimize(expression)
        invalid = model.validate()  # coefficients or bounds past CP-SAT's int64 range: the input's numbers, say so
        if invalid:
            raise ValueError(f"{name}: the numbers are beyond what CP-SAT can solve ({invalid.splitlines()[0]})")
        level_began = time.perf_counter()
        status = solver.solve(model)
        elapsed = time.perf_counter() - level_began
        status_name = solver.status_name(status)
        if status == cp_model.INFEASIBLE:
            raise Infeasible(f"{name}: {status_name}")
        if status == cp_model.UNKNOWN:
            bound = solver.best_objective_bound  # what the search proved without a solution (infinite if nothing)
            reports.append(
                LevelReport(
                    name=name,
                    sense=sense,
                    status=status_name,
                    objective=None,
                    best_bound=_integral(bound) if math.isfinite(bound) else None,
                    gap=None,
                    seconds=elapsed,
                )
            )
            break
        best = solver
        objective, bound = _integral(solver.objective_value), _integral(solver.best_objective_bound)
        reports.append(
            LevelReport(
                name=name,
                sense=sense,
                status=status_name,
                objective=objective,
                best_bound=bound,
                gap=0.0 if status == cp_model.OPTIMAL else _gap(objective, bound),
                seconds=elapsed,
            )
        )
        _fix_and_hint(model, solver, expression, objective, status == cp_model.OPTIMAL, sense)
    statuses = [r.status for r in reports]
    overall = (
        "OPTIMAL"
        if statuses and all(s == "OPTIMAL" for s in statuses) and len(reports) == len(levels)
        else ("FEASIBLE" if any(r.objective is not None for r in reports) else "UNKNOWN")
    )
    return best, SolveReport(
        status=overall,
        levels=reports,
        seconds=time.perf_counter() - began,
        time_limit=config.time_limit,
        workers=config.workers,
        seed=config.seed,
    )


def _fix_and_hint(
    model: cp_model.CpModel, solver: cp_model.CpSolver, expression, objective: float, proven: bool, sense: str
) -> None:
    """Keep this level at its value for the next one (== when proven, else no worse), and hint the solution."""
    value = round(objective)
    if proven:
        model.add(expression == value)
    elif sense == "maximize":
        model.add(expression >= value)
    else:
        model.add(expression <= value)
    model.clear_hints()
    for index in range(len(model.proto.variables)):
        variable = model.get_int_var_from_proto_index(index)
        model.add_hint(variable, solver.value(variable))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for a planner's run, back on after. Building the state, patterns and plans of
    a large cluster allocates hundreds of thousands of objects while the cluster model's own lie live; each time
    they grow by a quarter the collector walks all of them (0.3-0.5 s at 10,000 nodes, most of the state's build
    time). Reference counting still frees everything acyclic at once; cycles wait until the run ends."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
