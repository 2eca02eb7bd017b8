"""What `gpusched explain` answers, as pydantic models: the same shape for a pod, a job (gang) and a claim."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..frag import FragRow
from .edit import Edit

__all__ = ["Capacity", "Change", "ClaimInfo", "Cost", "Explanation", "GangInfo", "NotHelp", "Reason", "SchedulerView"]


class Reason(BaseModel):
    """One reason of the FitError histogram (gpusched's hardware view), restated in hardware terms."""

    reason: str = Field(description="the reason string as the scheduler words it")
    nodes: list[str]
    hardware: str = Field(description="what it means for the GPUs")


class SchedulerView(BaseModel):
    """What kube-scheduler does with the pod's integers: bind (and what then goes wrong) or its FitError."""

    node: str | None = Field(None, description="where kube-scheduler would bind it (extended resources)")
    message: str | None = Field(None, description="the FitError when it stays Pending")
    warnings: list[str] = Field(default_factory=list, description="what goes wrong at runtime on that node")
    fix: str | None = Field(None, description="the configuration that stops it binding there, and what it does then")


class Capacity(BaseModel):
    """Are the GPUs gone, or only in the wrong places? Counted on the nodes whose hardware suits the pod."""

    verdict: Literal["fits", "fragmented", "gone", "unsuitable"]
    needed: int = Field(description="GPUs (or MIG instances) per pod")
    suitable_nodes: int = Field(description="nodes whose model, memory, sharing, taints and labels suit the pod")
    free: int = Field(description="free units on those nodes")
    largest_node: int
    largest_island: int
    sizes: list[FragRow] = Field(default_factory=list, description="free GPUs per job size on the suitable nodes")
    moves: int | None = Field(None, description="pod moves that make room (the defrag planner), when it found some")
    summary: str


class GangInfo(BaseModel):
    """A job's pods: how many the default scheduler bound, and whether jobs deadlock holding GPUs."""

    pods: int
    gpus_per_pod: int
    placed: int = Field(description="pods bound by the default scheduler (pod by pod)")
    starts_at: float | None = Field(None, description="when all its pods are bound, under the default scheduler")
    deadlock_at: float | None = None
    gpus_held: int = Field(0, description="GPUs held idle by partial jobs at the deadlock")
    held_by: dict[str, int] = Field(default_factory=dict, description="job -> pods bound at the deadlock")
    summary: str


class ClaimInfo(BaseModel):
    """A ResourceClaim for the pod's needs, allocated by gpusched's DRA allocator: where, or what ruled devices out."""

    claim: str
    allocated: bool
    node: str | None = None
    devices: list[str] = Field(default_factory=list, description="pool/device")
    reason: str | None = None
    diagnosis: str | None = None


class Cost(BaseModel):
    """What a change costs, compared in this order: the pod's own speed, others' pods stopped, then moved, time
    waited, GPUs repartitioned, and edits to specs or nodes."""

    slowdown: float = Field(1.0, description="all-reduce time relative to one NVLink island (1: no slower)")
    evicted: int = 0
    moved: int = 0
    wait_s: float = 0.0
    repartitioned: int = Field(0, description="MIG GPUs reconfigured")
    edits: int = Field(0, description="fields of the pod spec or nodes changed")

    def key(self) -> tuple:
        return (round(self.slowdown, 3), self.evicted, self.moved, self.wait_s, self.repartitioned, self.edits)


class Change(BaseModel):
    """One change that schedules the target, verified by applying it to the model and placing again."""

    kind: Literal[
        "toleration",
        "selector",
        "uncordon",
        "model",
        "mig",
        "shared",
        "nvlink",
        "move",
        "evict",
        "priority",
        "gang",
        "claim",
    ]
    summary: str
    details: list[str] = Field(default_factory=list)
    cost: Cost
    lands_on: str | None = Field(None, description="where the target goes once the change is made")
    edit: Edit = Field(description="the change as data: apply it with gpusched.planner.explain.apply_edit")


class NotHelp(BaseModel):
    change: str
    why: str


class Explanation(BaseModel):
    target: str
    kind: Literal["pod", "job", "claim"]
    fits: bool = Field(description="it schedules on suitable hardware as the cluster is now")
    running: bool = Field(False, description="it already holds GPUs on `node`: nothing is Pending")
    node: str | None = Field(None, description="where it would go (gpusched's hardware view)")
    scheduler: SchedulerView | None = None
    reasons: list[Reason] = Field(default_factory=list)
    capacity: Capacity | None = None
    gang: GangInfo | None = None
    claim: ClaimInfo | None = None
    changes: list[Change] = Field(default_factory=list, description="ranked by cost; the first is the one change")
    will_not_help: list[NotHelp] = Field(default_factory=list)
