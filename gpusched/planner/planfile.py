"""Plan files, checked: any plan (`gpusched plan --json` or hand-written) against a cluster, before trusting it.

Names are checked first (an unknown node or job would make the capacity check meaningless), then the plan itself
by the optimiser's independent checker: capacity, islands, MIG geometry, constraints, gangs complete.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ..models.cluster import Cluster
from ..scenarios import read_document, validate
from .optimize.plan import PlanJob, PlannedPod, check_plan

__all__ = ["PlanFile", "PlanValidation", "check_plan_file", "load_plan"]


class PlanFile(BaseModel):
    """What a plan check reads from a plan: the jobs and where their pods go (other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")
    jobs: list[PlanJob]
    assignments: list[PlannedPod]


class PlanValidation(BaseModel):
    valid: bool
    violations: list[str]


def load_plan(source: str) -> PlanFile:
    """A plan file, validated (an InputError naming the file and field otherwise)."""
    return validate(source, read_document(source), PlanFile)


def check_plan_file(cluster: Cluster, plan: PlanFile) -> PlanValidation:
    """Every violation of `plan` on `cluster`; valid when there is none."""
    names = {node.name for node in cluster.nodes}
    problems = [f"{a.pod}: unknown node {a.node}" for a in plan.assignments if a.node not in names]
    jobs = {job.name for job in plan.jobs}
    problems += [f"{a.pod}: unknown job {a.job}" for a in plan.assignments if a.job not in jobs]
    if not problems:
        problems = check_plan(cluster, [job.pending() for job in plan.jobs], plan.assignments)
    return PlanValidation(valid=not problems, violations=problems)
