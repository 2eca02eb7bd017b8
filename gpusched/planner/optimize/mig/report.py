"""plan_mig's output: the pydantic report of a MIG repartitioning (its JSON is `mig plan --json`)."""

from __future__ import annotations

from pydantic import BaseModel

from ..solver import SolveReport
from .layouts import RepartitionOutcome

__all__ = ["GpuChange", "InstanceOut", "MigPlan", "NodeResources", "PlanRow", "TieBreak"]


class InstanceOut(BaseModel):
    profile: str
    start: int
    holder: str | None = None


class GpuChange(BaseModel):
    """One reconfigured GPU: its instances before and after (None: MIG disabled, a whole GPU)."""

    node: str
    gpu: int
    before: list[InstanceOut] | None
    after: list[InstanceOut]
    destroyed: list[InstanceOut]
    created: list[InstanceOut]
    holders: list[str]  # pods on its busy instances: kept in the plan, but drain them before mig-manager applies it


class NodeResources(BaseModel):
    """What the device plugin advertises on a relabelled node, before and after, under each MIG strategy."""

    node: str
    strategy: str  # the strategy the node's device plugin runs
    before: dict[str, int]
    mixed: dict[str, int]
    single: dict[str, int] | None  # None: the single strategy cannot describe the node (see single_problem)
    single_problem: str | None


class PlanRow(BaseModel):
    plan: str  # optimum | first-fit | all-balanced
    outcome: RepartitionOutcome


class TieBreak(BaseModel):
    status: str  # OPTIMAL | FEASIBLE: a plan among the optima was picked (the levels above stay optimal either way)
    seconds: float


class MigPlan(BaseModel):
    demand: dict[str, int]
    outcome: RepartitionOutcome
    message: str | None  # why the demand is not (or not provably) met
    solve: SolveReport
    tie_break: TieBreak | None  # the solve that picks one plan among the optima; None: not run (nothing proven)
    gpus: int  # GPUs that could change
    classes: int
    options: int  # layouts over all classes: the integer variables
    changes: list[GpuChange]
    mig_parted: dict  # the NVIDIA mig-parted file: version v1, mig-configs
    labels: dict[str, str]  # node -> nvidia.com/mig.config value
    resources: list[NodeResources]
    comparison: list[PlanRow]
