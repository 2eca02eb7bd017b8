"""defrag: the fewest pod moves that make room for a target shape, as an ordered sequence of valid states.

build (world.py, model.py) → solve → extract (extract.py) → validate (validate.py). Only exclusive whole GPUs
matter (a time-sliced replica or a MIG instance is never room for the shape), so the planner works on NVLink
islands: inside one, GPUs are interchangeable. Nodes identical up to pod names form one node class.

Objective: fewest moves, then fewest GPUs moved, then the earliest nodes by name (so that runs repeat); with
`xmax`, first the most target pods within --max-moves. Beside it, a descheduler-style greedy (baselines.py).
"""

from __future__ import annotations

from ....errors import InputError
from ....models.cluster import Cluster
from ...deadline import Deadline
from ...validate import require_valid
from ..disrupt import Budgets, out_of_time
from ..solver import Infeasible, SolverConfig
from .baselines import descheduler
from .extract import DefragPlan, Unorderable, commands_for, extract, schedule
from .model import move_options, node_classes, solve_moves
from .report import (
    DefragReport,
    Greedy,
    Move,
    ShapeInfo,
    Step,
    TargetPlacement,
    TargetShape,
    parse_shape,
    shape_like,
)
from .validate import defrag_violations
from .why import why_no_plan
from .world import World, build_world, room_for

__all__ = [
    "DefragReport",
    "Greedy",
    "Move",
    "Step",
    "TargetPlacement",
    "TargetShape",
    "defrag",
    "parse_shape",
    "shape_like",
]


def _check_shape(world: World) -> None:
    """A shape no node could ever hold is bad input (exit 2), not an infeasible plan."""
    shape = world.shape
    if shape.island and shape.gpus > 1:
        largest = max((len(island) for islands in world.islands.values() for island in islands), default=0)
        if largest < shape.gpus:
            raise InputError(
                "--for", f"no node has {shape.gpus} GPUs in one NVLink island (the largest island has {largest})"
            )
    else:
        largest = max((sum(len(i) for i in islands) for islands in world.islands.values()), default=0)
        if largest < shape.gpus:
            raise InputError("--for", f"no node has {shape.gpus} exclusive whole GPUs (the largest has {largest})")


def _unorderable(world: World, plan: DefragPlan, why: str) -> str:
    """The best plan's moves form a cycle its disruption budgets will not let any pod break."""
    budgets = Budgets.of(world.cluster)
    names = sorted({budgets.names[i] for m in plan.moves for i in budgets.selecting(world.movers[m.pod])})
    return (
        f"the fewest moves ({len(plan.moves)}) form a cycle that disruption budget(s) {', '.join(names)} will not "
        f"let any pod break: {why} (a plan of more moves was not searched)"
    )


def _ran_out(deadline: Deadline, floor: Greedy) -> str:
    """What the deadline stopped, and the descheduler's row (the floor) as the plan to fall back on."""
    if floor.fits and floor.valid:
        fallback = f"the descheduler's plan fits the shape with {len(floor.moves)} moves (not proven fewest)"
    else:
        fallback = "the descheduler finds no plan either"
    return f"out of time: {', '.join(deadline.ran_out)}; {fallback}"


def defrag(
    cluster: Cluster,
    shape: TargetShape,
    max_moves: int | None = None,
    config: SolverConfig | None = None,
    deadline: Deadline | None = None,
) -> DefragReport:
    """The fewest moves that make room for the shape, ordered and validated, beside the descheduler's greedy
    (the floor, worked out first). One `deadline` (default: the time limit from now) covers every phase; past
    it, the answer says what ran out and whether the descheduler's plan fits."""
    config = config or SolverConfig()
    if max_moves is not None and max_moves < 0:
        raise ValueError(f"--max-moves: must be 0 or more, got {max_moves}")
    if shape.pods is None and max_moves is None:
        raise ValueError("--for GPUSxmax asks for as many as the moves allow: give --max-moves")
    deadline = deadline or Deadline.start(config.time_limit)
    budgets = Budgets.of(cluster)
    world = build_world(cluster, shape, budgets)
    _check_shape(world)
    floor = descheduler(world, max_moves)  # the floor, first: what the answer is compared with
    classes = node_classes(world)
    report = DefragReport(
        shape=ShapeInfo(gpus=shape.gpus, pods=shape.pods, island=shape.island, text=shape.describe()),
        max_moves=max_moves,
        feasible=False,
        before=room_for(world, world.nodes),
        kinds=len(classes),
        comparison=[floor],
    )
    reserve = 0.05 + 2e-5 * len(world.nodes)  # extraction, ordering and validation
    for node_class in classes:
        if deadline.passed(reserve):
            deadline.note("model")
            never = f"no plan found within the time limit of {config.time_limit:g} s (not proven impossible either)"
            return report.model_copy(update={"reason": f"{never}; {_ran_out(deadline, floor)}"})
        node_class.options = move_options(world, node_class, shape.pods)
    limited = config.model_copy(update={"time_limit": deadline.solve_seconds(reserve)})
    try:
        counts, solve = solve_moves(world, classes, limited, max_moves)
    except Infeasible:
        return report.model_copy(update={"reason": why_no_plan(world, budgets, max_moves)})
    if counts is None:
        deadline.note("solve")
        timed_out = out_of_time(report, solve, config)
        return timed_out.model_copy(update={"reason": f"{timed_out.reason}; {_ran_out(deadline, floor)}"})
    plan = extract(world, classes, counts)
    try:
        moves, steps = schedule(plan.moves, world, plan.targets)
    except Unorderable as error:
        return report.model_copy(update={"reason": _unorderable(world, plan, str(error)), "solve": solve})
    plan = DefragPlan(moves, plan.targets)
    require_valid("a defrag plan", defrag_violations(world, plan, steps))
    return report.model_copy(
        update={
            "feasible": True,
            "moves": plan.moves,
            "steps": steps,
            "targets": plan.targets,
            "gpus_moved": sum(m.gpus for m in plan.moves),
            "commands": commands_for(steps),
            "solve": solve,
        }
    )
