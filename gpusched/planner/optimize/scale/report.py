"""What `gpusched scale up` and `scale down` report: the nodes to add (or remove), the cost, how good the answer is
(status, objective, bound, gap), and the autoscalers' own answers beside it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..solver import SolveReport

__all__ = ["NewNode", "PodPlacement", "Outcome", "ScaleUpReport", "Removal", "DownOutcome", "ScaleDownReport"]


class PodPlacement(BaseModel):
    pod: str
    node: str
    gpus: list[int] = Field(default_factory=list)
    mig: list[tuple[int, int]] = Field(default_factory=list, description="(gpu, start) of MIG instances")
    new: bool = Field(description="on a node the plan adds")


class NewNode(BaseModel):
    name: str
    offering: str = Field(description="INSTANCE-TYPE/CAPACITY-TYPE/ZONE")
    instance_type: str
    capacity_type: str
    zone: str
    per_hour: float
    mig: dict[str, int] = Field(default_factory=dict, description="MIG profile -> GPUs partitioned into it")
    pods: list[str] = Field(default_factory=list)


class Outcome(BaseModel):
    """One way of answering: gpusched's plan or an autoscaler's rule."""

    name: str
    cost_per_hour: float
    nodes: int
    by_offering: dict[str, int] = Field(default_factory=dict, description="offering -> nodes launched")
    unplaced: list[str] = Field(default_factory=list, description="jobs (or pods) left pending")
    seconds: float = Field(0.0, description="CPU seconds it took")


class ScaleUpReport(BaseModel):
    nodepool: str
    status: str = Field(description="OPTIMAL (proven), FEASIBLE (bounded: see gap), or INFEASIBLE (nothing placed)")
    cost_per_hour: float
    bound_per_hour: float | None = Field(description="no plan placing as much costs less than this")
    gap: float | None = Field(description="(cost - bound) / cost; 0 when proven optimal")
    kept: str = Field(description="which plan was kept: cp-sat, or the heuristic floor when CP-SAT did no better")
    solve: SolveReport | None = Field(description="the CP-SAT levels (placed, cost, nodes)")
    pending_pods: int
    shapes: int = Field(description="pending groups as the GPUs see them (needs, GPUs per pod, pods, priority)")
    offerings: int
    existing: list[PodPlacement] = Field(description="pods the existing free capacity takes first")
    new_nodes: list[NewNode]
    placements: list[PodPlacement] = Field(description="pods on the new nodes")
    unplaced: list[str] = Field(description="jobs no offering (or limit) lets run")
    baselines: list[Outcome]
    cpu_seconds: float = Field(description="CPU seconds of gpusched's plan: the floor, the model, its solve, packing")


class Removal(BaseModel):
    node: str
    action: str = Field(description="delete, or replace (by `replacement`)")
    replacement: str | None = Field(None, description="the cheaper offering that takes its pods")
    saves_per_hour: float
    evicted: list[str] = Field(default_factory=list, description="pods evicted (they move to the nodes kept)")


class DownOutcome(BaseModel):
    name: str
    removed: list[str]
    saves_per_hour: float
    evictions: int
    seconds: float = 0.0


class ScaleDownReport(BaseModel):
    status: str
    saves_per_hour: float
    bound_per_hour: float | None
    gap: float | None
    solve: SolveReport | None
    removals: list[Removal]
    moves: list[PodPlacement] = Field(description="where each evicted pod goes")
    kept_by_rule: dict[str, str] = Field(description="node -> why it cannot go (do-not-disrupt, budget, unmovable)")
    baselines: list[DownOutcome]
    kept: str = Field(description="whose order the answer is: gpusched-order, or an autoscaler rule that did better")
    cpu_seconds: float
