"""explain for a training job: what the default scheduler does to its pods (the gang simulator, pod mode), and
whether all-or-nothing admission starts it — and when, behind which job."""

from __future__ import annotations

from ...errors import InputError
from ...models.cluster import Cluster
from ...models.workload import Job
from ..gang import GangReport, JobOutcome, simulate
from ..place import Placer
from ..scheduler.framework import Diagnosis
from ..state import ClusterState
from .edit import Edit
from .reasons import restate
from .report import Change, Cost, Explanation, GangInfo, NotHelp

__all__ = ["explain_job", "job_outcome"]


def job_outcome(cluster: Cluster, jobs: list[Job], name: str, edit: Edit | None = None) -> JobOutcome:
    """The job's outcome under the default scheduler, or under the admission an edit asks for."""
    if edit is None or edit.admission is None:
        return _outcome(simulate(cluster, jobs, "pod"), name)
    return _outcome(simulate(cluster, jobs, edit.admission, edit.timeout), name)


def _outcome(report: GangReport, name: str) -> JobOutcome:
    return next(outcome for outcome in report.jobs if outcome.job == name)


def _gang_info(job: Job, report: GangReport, outcome: JobOutcome) -> GangInfo:
    deadlock = report.deadlock
    placed = outcome.pods_placed
    if deadlock is not None and outcome.start is None:
        sizes = {o.job: o.pods for o in report.jobs}
        holders = " and ".join(
            f"{name} ({pods} of {sizes[name]} pods)" for name, pods in sorted(deadlock.held_by.items())
        )
        summary = (
            f"the default scheduler binds pods one at a time: {job.name} got {placed} of {job.pods}; at t={deadlock.time:g} "
            f"{holders} hold {deadlock.gpus_held} GPUs, every rank waits for the others, and nothing runs (deadlock)"
        )
    elif outcome.start is None:
        summary = f"{job.name} got {placed} of its {job.pods} pods and never starts"
    else:
        summary = f"{job.name} starts at t={outcome.start:g} with all {job.pods} pods"
    return GangInfo(
        pods=job.pods,
        gpus_per_pod=job.gpus_per_pod,
        placed=placed,
        starts_at=outcome.start,
        deadlock_at=deadlock.time if deadlock else None,
        gpus_held=deadlock.gpus_held if deadlock else 0,
        held_by=deadlock.held_by if deadlock else {},
        summary=summary,
    )


POD_GROUP_TIMEOUT = 300.0  # scheduleTimeoutSeconds of the PodGroup suggested (the gang command's --timeout)


def _admission(cluster: Cluster, jobs: list[Job], job: Job, timeout: float) -> Change | NotHelp:
    """All-or-nothing admission (Kueue; or a PodGroup that may hold a partial reservation for `timeout` seconds):
    does the job start, and behind which job does it wait?"""
    edit = Edit(admission="gang", timeout=timeout)
    report = simulate(cluster, jobs, "gang", timeout)
    outcome = _outcome(report, job.name)
    if timeout:
        summary = f"a coscheduling PodGroup (minMember {job.pods}, scheduleTimeoutSeconds {timeout:g})"
    else:
        summary = "admit the jobs all-or-nothing (Kueue; `gpusched gang --emit-kueue`)"
    if outcome.start is None:
        return NotHelp(change=summary, why=f"{job.name} still never starts: it does not fit even alone")
    waited = outcome.start - job.arrival
    behind = [o.job for o in report.jobs if o.finish is not None and o.finish == outcome.start]
    after = f", when {', '.join(behind)} finish{'es' if len(behind) == 1 else ''}" if behind else ""
    details = [
        f"{o.job}: {o.start:g}–{o.finish:g}" for o in report.jobs if o.start is not None and o.finish is not None
    ]
    return Change(
        kind="gang",
        summary=f"{summary}: {job.name} starts at t={outcome.start:g}{after}",
        details=[*details, f"GPU-hours held idle: {report.idle_gpu_hours:.2f}"],
        cost=Cost(wait_s=waited, edits=1),
        edit=edit,
    )


def explain_job(cluster: Cluster, jobs: list[Job], name: str) -> Explanation:
    job = next((j for j in jobs if j.name == name), None)
    if job is None:
        raise InputError(name, f"no such job (jobs: {', '.join(j.name for j in jobs) or 'none'})")
    report = simulate(cluster, jobs, "pod")
    outcome = _outcome(report, name)
    explanation = Explanation(
        target=name, kind="job", fits=outcome.start is not None, gang=_gang_info(job, report, outcome)
    )
    if outcome.never_fits:
        state = ClusterState.from_cluster(cluster)
        found = Placer(state, "gpu").best(job, job.gpus_per_pod)
        if isinstance(found, Diagnosis):
            explanation.reasons = restate(found, state, job, job.gpus_per_pod)
    if explanation.fits:
        return explanation
    for timeout in (0.0, POD_GROUP_TIMEOUT):
        admitted = _admission(cluster, jobs, job, timeout)
        if isinstance(admitted, Change):
            explanation.changes.append(admitted)
        else:
            explanation.will_not_help.append(admitted)
    if report.deadlock is not None:
        explanation.will_not_help.append(
            NotHelp(
                change="waiting",
                why=f"nothing runs and nothing finishes: {report.deadlock.gpus_held} GPUs stay held until a job is deleted",
            )
        )
    return explanation
