"""defrag's own check: every intermediate state and the final one pass the validator, and the targets fit."""

from __future__ import annotations

from ...validate import Assignment, Violation
from ..disrupt import Budgets, problems
from .extract import DefragPlan
from .report import Step
from .world import World

__all__ = ["defrag_violations"]


def defrag_violations(world: World, plan: DefragPlan, steps: list[Step]) -> list[Violation]:
    """Everything wrong with a defrag plan: every intermediate state and the final one pass the validator (with
    cpu and memory), every evicted pod comes back, and the targets fit."""
    cluster = world.cluster
    pods = {m.pod: world.movers[m.pod] for m in plan.moves}
    where = {name: (pod.node, tuple(sorted(pod.gpus))) for name, pod in pods.items()}

    def state() -> list[Assignment]:
        return [Assignment(name, pods[name].needs, node, gpus) for name, (node, gpus) in where.items() if node]

    baseline = {str(p) for p in problems(cluster, pods, state())}
    found: list[Violation] = []
    for step in steps:
        where[step.pod] = ("", ()) if step.action == "evict" else (step.node, tuple(step.gpus))
        found += [
            p.at(f"after {step.action} {step.pod}") for p in problems(cluster, pods, state()) if str(p) not in baseline
        ]
    shape = world.shape
    targets = [Assignment(t.pod, shape.needs, t.node, tuple(t.gpus)) for t in plan.targets]
    found += [p.at("with the targets") for p in problems(cluster, pods, state() + targets) if str(p) not in baseline]
    if any(not node for node, _ in where.values()):
        found.append(Violation("gang", "a pod evicted but never re-created"))
    if shape.pods is not None and len(targets) < shape.pods:
        found.append(Violation("gang", f"{len(targets)} of {shape.pods} target pods placed"))
    return found + _budget_steps(world, steps)


def _budget_steps(world: World, steps: list[Step]) -> list[Violation]:
    """At no step are more pods of one disruption budget down than it allows: an evicted pod is down until it is
    re-created, and a moved pod is down while it moves (together with every pod down then)."""
    budgets = Budgets.of(world.cluster)
    down: set[str] = set()
    found = []
    for step in steps:
        now = down | {step.pod}
        for text in budgets.overdrawn(world.movers[name] for name in sorted(now)):
            found.append(Violation("budget", f"at {step.action} {step.pod}: {text}"))
        if step.action == "evict":
            down.add(step.pod)
        elif step.action == "create":
            down.discard(step.pod)
    return found
