"""What asks for GPUs: pods (placed one after another) and training jobs (N identical pods, all or nothing)."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..limits import INT32_MAX, INT32_MIN, MAX_MEMORY_GIB, MAX_POD_GPUS, MAX_PODS, at_most
from .quantity import Quantity, milli, to_int
from .scheduling import Toleration

__all__ = ["GpuNeeds", "Pod", "PodList", "Job", "JobList"]

Positive = Annotated[int, Field(ge=1, strict=True)]


class GpuNeeds(BaseModel):
    """What one pod needs from the hardware, beyond the count the scheduler sees."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str | None = Field(None, description="GPU model required, e.g. A100-SXM4-80GB")
    memory_gib: float | None = Field(None, gt=0, le=MAX_MEMORY_GIB, description="GPU memory needed per GPU")
    nvlink: bool = Field(False, description="all GPUs inside one NVLink island")
    shared: bool = Field(False, description="accepts a time-sliced replica")
    mig_profile: str | None = Field(None, description="needs MIG instances of this profile, e.g. 3g.40gb")
    cpu: Quantity | None = Field(None, description="cpu request, a quantity (4, 500m)")
    memory: Quantity | None = Field(None, description="host memory request, a quantity (64Gi)")
    priority: int = Field(0, ge=INT32_MIN, le=INT32_MAX, description="as a pod's spec.priority: an int32")
    tolerations: list[Toleration] = Field(default_factory=list, description="as a pod's spec.tolerations")
    node_selector: dict[str, str] = Field(default_factory=dict, description="as a pod's spec.nodeSelector")
    labels: dict[str, str] = Field(
        default_factory=dict, description="the pod's labels (disruption budgets select by them)"
    )

    @property
    def cpu_milli(self) -> int:
        return 0 if self.cpu is None else milli(self.cpu)

    @property
    def memory_bytes(self) -> int:
        return 0 if self.memory is None else to_int(self.memory)


class Pod(GpuNeeds):
    name: str = Field(min_length=1, description="NAMESPACE/NAME (a bare NAME is in default)")
    gpus: Annotated[int, at_most(MAX_POD_GPUS, "GPUSCHED_MAX_GPUS_PER_NODE or GPUSCHED_MAX_REPLICAS")] = Field(
        1, ge=0, strict=True, description="GPUs (or MIG instances, or replicas when shared)"
    )


def _unique(items: list, what: str) -> list:
    duplicates = [name for name, n in Counter(item.name for item in items).items() if n > 1]
    if duplicates:
        raise ValueError(f"{what} names must be unique: {', '.join(duplicates)} appear more than once")
    return items


class PodList(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    pods: Annotated[list[Pod], at_most(MAX_PODS, "GPUSCHED_MAX_PODS")]

    @field_validator("pods")
    @classmethod
    def _unique_names(cls, pods: list[Pod]) -> list[Pod]:
        return _unique(pods, "pod")


class Job(GpuNeeds):
    """A distributed training job: `pods` pods of `gpus_per_pod` GPUs that run `duration` seconds together."""

    name: str = Field(min_length=1, description="NAMESPACE/NAME (a bare NAME is in default)")
    pods: Annotated[Positive, at_most(MAX_PODS, "GPUSCHED_MAX_PODS")] = Field(
        description="its pods, all placed or none"
    )
    gpus_per_pod: Annotated[Positive, at_most(MAX_POD_GPUS, "GPUSCHED_MAX_GPUS_PER_NODE or GPUSCHED_MAX_REPLICAS")] = (
        Field(description="GPUs of each pod")
    )
    duration: float | None = Field(
        None, gt=0, description="seconds from start to finish: only where a clock runs (gang, explain of a job)"
    )
    arrival: float = Field(0.0, ge=0, description="seconds after the simulation starts")
    nvlink_domain: bool = Field(
        False,
        description="all pods inside one NVLink domain of the cluster's nvlink_domains (a node in no domain is a "
        "domain of its own): the gang's traffic never crosses the network",
    )


class JobList(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    jobs: Annotated[list[Job], at_most(MAX_PODS, "GPUSCHED_MAX_PODS")]

    @field_validator("jobs")
    @classmethod
    def _unique_names(cls, jobs: list[Job]) -> list[Job]:
        return _unique(jobs, "job")
