"""Plan files, checked: any plan (`gpusched plan --json`, `gpusched mig plan --json`, or hand-written) against a
cluster, before trusting it.

The file is read strictly (a key the planner never writes, a GPU given as `true`, a job named twice: bad input,
exit 2), then checked by the planner's independent validator: for a placement plan names, capacity, islands, MIG
geometry, constraints, gangs complete and the jobs left out; for a MIG plan each GPU's new layout, the busy
instances kept, the single strategy, the mig-parted config and labels, and the outcome it claims.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator

from ..errors import InputError
from ..models.cluster import Cluster
from ..scenarios import read_document, validate
from .optimize.mig.layouts import RepartitionOutcome
from .optimize.mig.report import MigPlan
from .optimize.mig.validate import mig_plan_violations
from .optimize.plan import PlanJob, PlannedPod, PlanReport, check_plan
from .validate import Violation

__all__ = ["MigPlanFile", "PlanFile", "PlanValidation", "check_plan_file", "load_plan"]


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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Instance(_Strict):
    profile: str
    start: Annotated[int, Field(ge=0, strict=True)]
    holder: str | None = None


class _Change(_Strict):
    """One GPU of a MIG plan: its instances after (none: MIG disabled); the report's other fields read past."""

    model_config = ConfigDict(extra="ignore")
    node: str
    gpu: Annotated[int, Field(ge=0, strict=True)]
    after: list[_Instance]


class _Entry(_Strict):
    """One entry of a mig-parted config, as `mig plan` writes it (devices listed by index)."""

    devices: list[Annotated[int, Field(ge=0, strict=True)]]
    mig_enabled: StrictBool = Field(alias="mig-enabled")
    mig_devices: dict[str, StrictInt] = Field(default_factory=dict, alias="mig-devices")


class _MigParted(_Strict):
    version: Literal["v1"]
    mig_configs: dict[str, list[_Entry]] = Field(alias="mig-configs")


class MigPlanFile(BaseModel):
    """What a MIG plan check reads from `mig plan --json`: the demand, the new layouts, the config and labels,
    and the outcome the plan claims."""

    model_config = ConfigDict(extra="ignore")
    demand: dict[str, Annotated[int, Field(ge=0, strict=True)]]
    outcome: RepartitionOutcome
    changes: list[_Change]
    mig_parted: _MigParted
    labels: dict[str, str]


class PlanValidation(BaseModel):
    valid: bool
    violations: list[Violation] = Field(description="each rule the plan breaks: its kind and, in words, where")

    @classmethod
    def of(cls, found: list[Violation]) -> PlanValidation:
        return cls(valid=not found, violations=found)


def load_plan(source: str) -> PlanFile | MigPlanFile:
    """A plan file, validated (an InputError naming the file and field otherwise): a MIG plan when it has
    `changes` and `mig_parted`, else a placement plan."""
    data = read_document(source)
    mig = isinstance(data, dict) and "changes" in data and "mig_parted" in data
    kind: type[PlanFile | MigPlanFile] = MigPlanFile if mig else PlanFile
    report: type[BaseModel] = MigPlan if mig else PlanReport
    if isinstance(data, dict):
        unknown = sorted(str(key) for key in data if key not in report.model_fields)
        if unknown:
            command = "mig plan" if mig else "plan"
            raise InputError(
                source, f"unknown field (a plan has the keys `gpusched {command} -o json` writes)", unknown[0]
            )
    return validate(source, data, kind)


def check_plan_file(cluster: Cluster, plan: PlanFile | MigPlanFile) -> PlanValidation:
    """Every violation of `plan` on `cluster`; valid when there is none."""
    if isinstance(plan, MigPlanFile):
        return PlanValidation.of(_mig_violations(cluster, plan))
    return PlanValidation.of(check_plan(cluster, [job.pending() for job in plan.jobs], plan.assignments, plan.unplaced))


def _mig_violations(cluster: Cluster, plan: MigPlanFile) -> list[Violation]:
    after = {(c.node, c.gpu): [(i.profile, i.start, i.holder) for i in c.after] or None for c in plan.changes}
    twice = [f"{node}/{gpu}" for (node, gpu), n in Counter((c.node, c.gpu) for c in plan.changes).items() if n > 1]
    claimed = (plan.outcome.served, plan.outcome.reconfigured, plan.outcome.unused_slices)
    configs: dict[str, list[dict[str, Any]]] = {
        name: [entry.model_dump(by_alias=True) for entry in entries]
        for name, entries in plan.mig_parted.mig_configs.items()
    }
    found = [Violation("unknown", f"{name}: changed twice") for name in twice]
    return found + mig_plan_violations(cluster, plan.demand, after, claimed, configs, plan.labels)
