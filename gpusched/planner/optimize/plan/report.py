"""plan's input and output: the pending jobs, and the pydantic report of a batch plan (its JSON is the plan file)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from ....models.workload import GpuNeeds
from ...pending import PendingJob, pending_jobs, weight_of
from ..solver import SolveReport

__all__ = [
    "HeuristicResult",
    "Metrics",
    "NotRun",
    "PendingJob",
    "PlanJob",
    "PlanReport",
    "PlannedPod",
    "WarmStart",
    "pending_jobs",
    "weight_of",
]


class PlanJob(BaseModel):
    """A pending job as the plan file records it, so that `validate` needs nothing else."""

    model_config = ConfigDict(extra="forbid")  # a plan file is read strictly: `validate` reads these back
    name: str
    pods: Annotated[int, Field(ge=1, strict=True)]
    gpus: Annotated[int, Field(ge=1, strict=True)]
    needs: GpuNeeds
    nvlink_domain: bool = False

    @classmethod
    def of(cls, job: PendingJob) -> PlanJob:
        fields = {name: getattr(job.needs, name) for name in GpuNeeds.model_fields}
        needs = GpuNeeds.model_construct(**fields)  # the fields of a validated Pod or Job: valid already
        return cls(name=job.name, pods=job.pods, gpus=job.gpus, needs=needs, nvlink_domain=job.nvlink_domain)

    def pending(self) -> PendingJob:
        return PendingJob(self.name, self.pods, self.gpus, self.needs, self.nvlink_domain)


class PlannedPod(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pod: str
    job: str
    node: str
    gpus: list[StrictInt] = Field(
        default_factory=list, description="physical GPUs (time-sliced: one replica of each; MIG: each instance's GPU)"
    )
    mig: list[tuple[StrictInt, StrictInt]] = Field(default_factory=list, description="(gpu, start) of MIG instances")
    split: StrictBool = Field(False, description="spans NVLink islands")


class Metrics(BaseModel):
    weighted_gpus: int
    gpus_placed: int  # GPUs of complete jobs
    jobs_placed: int
    gpus_held_by_partial_jobs: int = 0
    stranded: dict[int, int]  # job size -> stranded free exclusive GPUs afterwards
    islands_split: int = 0


class HeuristicResult(BaseModel):
    policy: str
    mode: str  # pod | gang
    metrics: Metrics
    seconds: float = Field(0.0, description="how long it took, inside plan's time limit")


class NotRun(BaseModel):
    """A heuristic the comparison has no row for, and why (it would not have ended within the time limit)."""

    policy: str
    mode: str  # pod | gang
    reason: str


class WarmStart(BaseModel):
    """The heuristic the solve started from: the best gang-mode one, hinted, its objective a floor."""

    policy: str
    mode: str
    hinted: bool = Field(description="every model variable was given the heuristic's value")
    metrics: Metrics


class PlanReport(BaseModel):
    jobs: list[PlanJob]
    solve: SolveReport
    largest_size: int
    node_classes: int
    pod_shapes: int
    gpu_shapes: int = Field(0, description="pod shapes as the GPUs see them (no cpu or memory): patterns use these")
    binding_nodes: int = Field(
        0,
        description="nodes whose cpu or memory may run out: checked pod by pod in disaggregation, and classes of "
        "their own with capacity rows in the full model",
    )
    patterns: int
    build_seconds: float = Field(
        0.0, description="heuristics, the cluster's state, classes, patterns and models: all but solves and checks"
    )
    seconds: float = Field(0.0, description="all of it, from when the command started (its input read) to the report")
    phases: dict[str, float] = Field(
        default_factory=dict,
        description="where the seconds went: input (reading the cluster and backlog), heuristics (all of them), "
        "model (state, classes, patterns, models), solve, check (disaggregation, validation, metrics)",
    )
    source: str = Field(
        "full",
        description="which plan is the answer: 'gpu view' (the first round's, cpu and memory left out, fitted to "
        "every node's), 'gpu view, rows for N nodes' (a later round's, cpu and memory rows on those), 'full' (rows "
        "on every node where they may run out), the heuristic's ('binpack (gang)') when no round beat it, the first "
        "heuristic's as far as it got ('binpack (gang), cut at the deadline after N jobs placed') when none ended in "
        "time, or 'nothing placed (out of time)' when not even that ran",
    )
    warm_start: WarmStart | None = Field(
        None,
        description="the best gang-mode heuristic; None when they were not asked for and the first round proved "
        "its plan (or left no time for them)",
    )
    assignments: list[PlannedPod]
    unplaced: list[str]  # jobs left out
    metrics: Metrics
    heuristics: list[HeuristicResult]
    not_run: list[NotRun] = Field(
        default_factory=list, description="the heuristics (of 3 policies × pod and gang) with no row: out of time"
    )
    ran_out: list[str] = Field(
        default_factory=list,
        description="the phases the deadline stopped ('model', 'solve (round 1)', ...): the answer is the best "
        "plan found before, never worse than the heuristic floor",
    )
