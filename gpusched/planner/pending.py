"""The pending work every planner takes: pods and gangs, as one list of jobs (a lone pod is a gang of one)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError, LimitError
from ..models.workload import GpuNeeds, Job, Pod

__all__ = ["MAX_OBJECTIVE", "PendingJob", "pending_jobs", "weight_of"]


@dataclass(frozen=True)
class PendingJob:
    """A gang of `pods` identical pods of `gpus` GPUs each (a lone pod is a gang of one)."""

    name: str
    pods: int
    gpus: int
    needs: GpuNeeds
    nvlink_domain: bool = False  # all pods inside one NVLink domain (Cluster.domain_of)

    @property
    def confined(self) -> bool:
        return self.nvlink_domain and self.pods > 1

    def pod_names(self) -> list[str]:
        return [self.name] if self.pods == 1 else [f"{self.name}-{i}" for i in range(self.pods)]


def pending_jobs(pods: list[Pod], jobs: list[Job]) -> list[PendingJob]:
    found = [PendingJob(p.name, 1, p.gpus, p) for p in pods] + [
        PendingJob(j.name, j.pods, j.gpus_per_pod, j, j.nvlink_domain) for j in jobs
    ]
    names = [job.name for job in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InputError("pending pods and jobs", f"must have distinct names: {', '.join(duplicates)}")
    idle = [job.name for job in found if job.gpus < 1]
    if idle:
        raise InputError(
            ", ".join(idle), "gpus must be at least 1 to plan (a pod without GPUs needs no GPU plan)", "gpus"
        )
    lowest = min((job.needs.priority for job in found), default=0)
    objective = sum(weight_of(job.needs.priority, lowest) * job.gpus * job.pods for job in found)
    if objective > MAX_OBJECTIVE:
        raise LimitError(
            "pending pods and jobs",
            f"priorities {lowest}..{max(job.needs.priority for job in found)} weigh the plan's objective "
            f"beyond CP-SAT's exact range ({objective} > {MAX_OBJECTIVE}): use fewer distinct levels",
        )
    return found


MAX_OBJECTIVE = 2**53  # CP-SAT's objective stays exact (a double) below this; coefficients must also fit an int64


def weight_of(priority: int, lowest: int) -> int:
    """Priorities as weights: the lowest pending priority weighs 1, each step above it one more."""
    return priority - lowest + 1
