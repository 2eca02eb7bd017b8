"""defrag's own check: every intermediate state and the final one pass the validator, and the targets fit."""

from __future__ import annotations

from ...validate import Assignment
from ..disrupt import problems
from .extract import DefragPlan
from .report import Step
from .world import World

__all__ = ["validate"]


def validate(world: World, plan: DefragPlan, steps: list[Step]) -> None:
    """Every intermediate state and the final one pass the validator (with cpu and memory), and the targets fit."""
    cluster = world.cluster
    pods = {m.pod: world.movers[m.pod] for m in plan.moves}
    where = {name: (pod.node, tuple(sorted(pod.gpus))) for name, pod in pods.items()}

    def state() -> list[Assignment]:
        return [Assignment(name, pods[name].needs, node, gpus) for name, (node, gpus) in where.items() if node]

    baseline = set(problems(cluster, pods, state()))
    found: list[str] = []
    for step in steps:
        where[step.pod] = ("", ()) if step.action == "evict" else (step.node, tuple(step.gpus))
        found += [f"after {step.action} {step.pod}: {p}" for p in problems(cluster, pods, state()) if p not in baseline]
    shape = world.shape
    targets = [Assignment(t.pod, shape.needs, t.node, tuple(t.gpus)) for t in plan.targets]
    found += [f"with the targets: {p}" for p in problems(cluster, pods, state() + targets) if p not in baseline]
    if any(not node for node, _ in where.values()):
        found.append("a pod evicted but never re-created")
    if shape.pods is not None and len(targets) < shape.pods:
        found.append(f"{len(targets)} of {shape.pods} target pods placed")
    if found:
        raise RuntimeError("internal error: a defrag plan failed validation: " + "; ".join(found))
