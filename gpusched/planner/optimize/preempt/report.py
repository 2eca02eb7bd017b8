"""preempt's input and output: what waits, and the pydantic report of an eviction plan (its JSON is the CLI's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from ....models.workload import GpuNeeds, Job, Pod
from ...validate import Violation
from ..solver import SolveReport

__all__ = ["Alternative", "EvictedPod", "EvictionCost", "Pending", "PendingInfo", "Placement", "PreemptReport"]


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


class EvictedPod(BaseModel):
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


class EvictionCost(BaseModel):
    """What an eviction plan costs, in the order the optimum minimises it."""

    highest_priority: int | None = Field(description="the highest victim priority; null when nothing is evicted")
    units: int = Field(description="victims' GPUs (replicas, MIG instances)")
    victims: int
    budget_violations: int = Field(0, description="evictions beyond what the disruption budgets allow")


class Alternative(BaseModel):
    """Another way to answer the same question (kube-scheduler's DefaultPreemption), judged by the same rules."""

    name: str
    found: bool
    victims: list[EvictedPod] = Field(default_factory=list)
    placements: list[Placement] = Field(default_factory=list)
    cost: EvictionCost | None = None
    valid: bool = Field(False, description="the plan passes the validator on the hardware view")
    problems: list[Violation] = Field(default_factory=list)
    note: str = ""


class PreemptReport(BaseModel):
    pending: PendingInfo
    feasible: bool
    reason: str | None = Field(None, description="why there is no plan (exit 1)")
    victims: list[EvictedPod] = Field(default_factory=list)
    placements: list[Placement] = Field(default_factory=list)
    cost: EvictionCost | None = None
    solve: SolveReport | None = None
    # node classes; the JSON key and its description stay as the CLI has always printed them
    kinds: int = Field(0, description="kinds of node the model was built on (identical nodes aggregated)")
    comparison: list[Alternative] = Field(default_factory=list)
