"""Plan files, checked: any plan (`gpusched plan --json` or hand-written) against a cluster, before trusting it.

The file is read strictly (a key `plan --json` never writes, a GPU given as `true`, a job named twice: bad input,
exit 2), then checked by the optimiser's independent checker: names, capacity, islands, MIG geometry, constraints,
gangs complete, and the jobs left out.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import InputError
from ..models.cluster import Cluster
from ..scenarios import read_document, validate
from .optimize.plan import PlanJob, PlannedPod, PlanReport, check_plan
from .validate import Violation

__all__ = ["PlanFile", "PlanValidation", "check_plan_file", "load_plan"]


class PlanFile(BaseModel):
    """What a plan check reads from a plan: the jobs, where their pods go and (when given) the jobs left out; the
    report's other keys are read past, any other key is refused (load_plan)."""

    model_config = ConfigDict(extra="ignore")
    jobs: list[PlanJob]
    assignments: list[PlannedPod]
    unplaced: list[str] | None = None

    @field_validator("jobs")
    @classmethod
    def _unique(cls, jobs: list[PlanJob]) -> list[PlanJob]:
        twice = [name for name, n in Counter(job.name for job in jobs).items() if n > 1]
        if twice:
            raise ValueError(f"job names must be unique: {', '.join(twice)} appear more than once")
        return jobs


class PlanValidation(BaseModel):
    valid: bool
    violations: list[Violation] = Field(description="each rule the plan breaks: its kind and, in words, where")


def load_plan(source: str) -> PlanFile:
    """A plan file, validated (an InputError naming the file and field otherwise)."""
    data = read_document(source)
    if isinstance(data, dict):
        unknown = sorted(str(key) for key in data if key not in PlanReport.model_fields)
        if unknown:
            raise InputError(source, "unknown field (a plan has the keys `gpusched plan -o json` writes)", unknown[0])
    return validate(source, data, PlanFile)


def check_plan_file(cluster: Cluster, plan: PlanFile) -> PlanValidation:
    """Every violation of `plan` on `cluster`; valid when there is none."""
    problems = check_plan(cluster, [job.pending() for job in plan.jobs], plan.assignments, plan.unplaced)
    return PlanValidation(valid=not problems, violations=problems)
