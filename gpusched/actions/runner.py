"""Carry out a journal's steps one at a time, safely.

- Before any step the whole run is dry-run on the server (`preflight`): a request the user may not make (RBAC 403)
  or the server refuses stops everything before anything is changed (InputError: exit 2). A 429 there only means a
  budget blocks the eviction now; the real run waits for it.
- Before each step the cluster is read again with the live loader and the rest of the plan re-validated
  (gpusched.actions.revalidate): the pods it acts on, and the independent validator on where it puts pods. If the
  cluster moved on, the step is journalled as failed (not started, with what changed), the cleanup steps run, and
  the run stops and offers a re-plan.
- Each step is written to the journal as running before it starts and as done (or failed, with the API server's
  error) after; steps already done are never run again, and every step checks first whether its effect already
  holds, so a step interrupted while running is safe to run again.
- Cleanup steps (uncordon, a gang's rollback) run after a failure too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from ..errors import InputError
from ..scenarios.live import RestError
from .journal import Journal, Step, save_journal
from .kube import CORDON_ANNOTATION, Kube, Unreachable, controller_uid
from .revalidate import alive, moved_on, pod_key

__all__ = ["MIG_CONFIG", "MIG_STATE", "DryRunLine", "RunOutcome", "StepFailed", "execute", "preflight"]

MIG_CONFIG, MIG_STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"
WRITES = ("cordon", "uncordon", "evict", "label", "bind", "delete")
POLL = 0.2  # seconds between reads while waiting
BACKOFF_MAX = 10.0  # the longest pause between two eviction attempts a budget refused


class StepFailed(Exception):
    """A step that cannot complete: a budget that never allowed, a timeout, mig-manager's `failed`, or drift."""

    def __init__(self, message: str, drift: bool = False) -> None:
        self.drift = drift
        super().__init__(message)


class DryRunLine(BaseModel):
    number: int
    step: str
    server: str = Field(description="the server's answer to the dry run, or what the step waits for")


class RunOutcome(BaseModel):
    journal: str | None = Field(description="the journal file (None: a dry run writes none)")
    dry_run: bool
    finished: bool
    stopped: str | None = Field(None, description="why the run stopped before its end")
    drift: bool = Field(False, description="it stopped because the cluster moved on: re-plan")
    replan: str | None = None
    steps: list[Step] = Field(default_factory=list)
    preview: list[DryRunLine] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


@dataclass
class Settings:
    pdb_timeout: float = 300.0  # how long an eviction a budget refuses is retried
    wait_timeout: float = 300.0  # how long a pod may take to go, to be replaced or scheduled
    mig_timeout: float = 900.0  # how long mig-manager may take to apply a config (it may reboot the node)
    rollback: bool = False
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    @classmethod
    def of(cls, journal: Journal) -> Settings:
        options = journal.options
        return cls(
            pdb_timeout=float(options.get("pdb_timeout", cls.pdb_timeout)),
            wait_timeout=float(options.get("wait_timeout", cls.wait_timeout)),
            mig_timeout=float(options.get("mig_timeout", cls.mig_timeout)),
            rollback=bool(options.get("rollback", False)),
        )


# --- the server-side dry run -------------------------------------------------------------------------------------


def _dry_request(kube: Kube, journal: Journal, step: Step) -> None:
    if step.kind == "cordon":
        kube.patch_node(step.target, {"spec": {"unschedulable": True}}, dry_run=True)
    elif step.kind == "uncordon":
        kube.patch_node(step.target, {"spec": {"unschedulable": False}}, dry_run=True)
    elif step.kind == "label":
        kube.patch_node(step.target, {"metadata": {"labels": step.labels}}, dry_run=True)
    elif step.kind == "evict":
        kube.evict(step.target, step.uid, dry_run=True)
    elif step.kind == "bind":
        kube.bind(step.target, step.uid, step.node or "", dry_run=True)
    elif step.kind == "delete":
        kube.delete(step.target, step.uid, dry_run=True)


def _waits(step: Step, settings: Settings) -> str:
    seconds = settings.mig_timeout if step.kind == "mig-state" else settings.wait_timeout
    return f"waits up to {seconds:g} s" + ("; `failed` stops the run" if step.kind == "mig-state" else "")


def preflight(kube: Kube, journal: Journal) -> list[DryRunLine]:
    """Every remaining write dry-run on the server, in order. A refusal other than a budget's 429 is an InputError
    naming the step and the server's words: nothing has been changed."""
    settings = Settings.of(journal)
    lines = []
    for number, step in enumerate(journal.steps, 1):
        if step.state in ("done", "skipped"):
            lines.append(DryRunLine(number=number, step=step.describe(), server=f"{step.state} already"))
            continue
        if step.kind not in WRITES:
            lines.append(DryRunLine(number=number, step=step.describe(), server=_waits(step, settings)))
            continue
        try:
            _dry_request(kube, journal, step)
            answer = "accepted (dry run)"
        except RestError as error:
            if error.status == 429:
                answer = f"refused now, retried for up to {settings.pdb_timeout:g} s: {_budget(error)}"
            elif error.status == 404 and step.cleanup:
                answer = "gone already: nothing to undo"
            elif error.status == 404 and step.kind in ("evict", "delete"):
                answer = "gone already"
            elif error.status == 409 and step.kind == "bind" and _bound_to(kube, step) == step.node:
                answer = "bound there already"
            else:
                what = "forbidden" if error.status == 403 else "refused"
                raise InputError(
                    kube.server, f"step {number} ({step.describe()}) {what} by the server: {error}; nothing was changed"
                ) from None
        lines.append(DryRunLine(number=number, step=step.describe(), server=answer))
    return lines


def _bound_to(kube: Kube, step: Step) -> str | None:
    return ((kube.pod(step.target) or {}).get("spec") or {}).get("nodeName")


def _budget(error: RestError) -> str:
    return "; ".join(error.causes) or error.message


# --- the steps ---------------------------------------------------------------------------------------------------


def _wait(probe: Callable[[], str | None], seconds: float, settings: Settings) -> str | None:
    """Poll until `probe` says something; None after `seconds`."""
    deadline = settings.clock() + seconds
    while True:
        found = probe()
        if found is not None or settings.clock() > deadline:
            return found
        settings.sleep(POLL)


def _cordon(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    node = kube.node(step.target)
    if node is None:
        raise StepFailed(f"node {step.target} is gone", drift=True)
    annotations = node["metadata"].get("annotations") or {}
    if annotations.get(CORDON_ANNOTATION) == journal.run:
        return "cordoned (by this run, earlier)"
    if node["spec"].get("unschedulable"):
        return "already cordoned by someone else: left as it is, and not uncordoned"
    kube.patch_node(step.target, {"metadata": {"annotations": {CORDON_ANNOTATION: journal.run}},
                                  "spec": {"unschedulable": True}})  # fmt: skip
    return "cordoned"


def _uncordon(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    node = kube.node(step.target)
    if node is None:
        return "node gone: nothing to undo"
    if (node["metadata"].get("annotations") or {}).get(CORDON_ANNOTATION) != journal.run:
        return "not cordoned by this run: left as it is"
    kube.patch_node(step.target, {"metadata": {"annotations": {CORDON_ANNOTATION: None}},
                                  "spec": {"unschedulable": False}})  # fmt: skip
    return "uncordoned"


def _same(kube: Kube, step: Step) -> dict | None:
    """The planned pod as it is now; None once it is gone (a pod of the same name with another uid is another)."""
    pod = kube.pod(step.target)
    return None if pod is None or (step.uid is not None and pod["metadata"]["uid"] != step.uid) else pod


def _evict(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    """Evict, retrying a budget's 429 with a growing pause until the deadline; then wait until the pod is gone."""
    deadline = settings.clock() + settings.pdb_timeout
    pause, tries = 1.0, 0
    pod = _same(kube, step)
    while pod is not None and not pod["metadata"].get("deletionTimestamp"):  # terminating: evicted already
        try:
            tries += 1
            kube.evict(step.target, step.uid)
            break
        except RestError as error:
            if error.status == 404:
                break
            if error.status != 429:
                raise
            if settings.clock() + pause > deadline:
                raise StepFailed(
                    f"blocked by a PodDisruptionBudget for {settings.pdb_timeout:g} s ({tries} tries): "
                    f"{_budget(error)}; nothing more was evicted"
                ) from None
            settings.sleep(pause)
            pause = min(pause * 2, BACKOFF_MAX)
        pod = _same(kube, step)
    if pod is None:
        return "gone already"
    if _wait(lambda: None if _same(kube, step) else "gone", settings.wait_timeout, settings) is None:
        raise StepFailed(f"evicted, but still terminating after {settings.wait_timeout:g} s")
    return "evicted" + (f" after {tries} tries" if tries > 1 else "")


def _replacement(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    """The owner's new pod, bound: where the plan said, or the cluster moved on."""

    def bound() -> str | None:
        for pod in kube.pods():
            if controller_uid(pod) == step.owner and pod["metadata"]["uid"] != step.uid and alive(pod):
                node = pod["spec"].get("nodeName")
                if node and not any(s.result and s.result.startswith(pod_key(pod) + " ") for s in journal.steps):
                    return f"{pod_key(pod)} {node}"
        return None

    found = _wait(bound, settings.wait_timeout, settings)
    if found is None:
        raise StepFailed(f"no replacement of {step.target} was scheduled in {settings.wait_timeout:g} s")
    name, node = found.split(" ")
    if node != step.node:
        raise StepFailed(f"the replacement {name} landed on {node}, the plan said {step.node}", drift=True)
    return f"{name} on {node}"


def _label(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    node = kube.node(step.target)
    if node is None:
        raise StepFailed(f"node {step.target} is gone", drift=True)
    labels = node["metadata"].get("labels") or {}
    if all(labels.get(key) == value for key, value in step.labels.items()):
        return "labelled already"
    # the same patch marks the state pending, so a `success` read afterwards answers this config, not the last one
    kube.patch_node(step.target, {"metadata": {"labels": {**step.labels, MIG_STATE: "pending"}}})
    return "labelled"


def _mig_state(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    def state() -> str | None:
        node = kube.node(step.target)
        found = ((node or {}).get("metadata", {}).get("labels") or {}).get(MIG_STATE)
        return found if found in ("success", "failed") else None

    found = _wait(state, settings.mig_timeout, settings)
    if found is None:
        raise StepFailed(f"{MIG_STATE} not success after {settings.mig_timeout:g} s")
    if found == "failed":
        raise StepFailed(f"mig-manager reported {MIG_STATE}=failed on {step.target} (see its logs on the node)")
    return "success"


def _bind(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    pod = kube.pod(step.target)
    if pod is None:
        raise StepFailed(f"{step.target} is gone", drift=True)
    bound = pod["spec"].get("nodeName")
    if bound == step.node:
        return f"bound to {bound}"
    if bound:
        raise StepFailed(f"{step.target} is bound to {bound} already", drift=True)
    kube.bind(step.target, step.uid, step.node or "")
    return f"bound to {step.node}"


def _rollback(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str | None:
    """Delete a pod this run bound, when its gang could not be completed; None: nothing to do (skipped)."""
    binds = [s for s in journal.steps if s.kind == "bind" and s.owner == step.owner]
    if all(s.state == "done" for s in binds):
        return None
    if not any(s.target == step.target and s.state == "done" for s in binds):
        return None
    try:
        kube.delete(step.target, step.uid)
    except RestError as error:
        if error.status != 404:
            raise
    return "deleted (its gang was incomplete)"


def _scheduled(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    def bound() -> str | None:
        pod = kube.pod(step.target)
        return (pod or {}).get("spec", {}).get("nodeName") or None

    node = _wait(bound, settings.wait_timeout, settings)
    if node is None:
        raise StepFailed(f"{step.target} was not scheduled in {settings.wait_timeout:g} s")
    return f"scheduled on {node}" + ("" if node == step.node else f" (the plan said {step.node})")


def _run_step(
    kube: Kube, journal: Journal, path: str | Path, settings: Settings, number: int, step: Step
) -> StepFailed | None:
    """One step, journalled as running before and as done, skipped or failed (with the server's words) after."""
    step.state, step.started, step.error = "running", time.time(), None
    save_journal(journal, path)
    failure = None
    try:
        result = ACTIONS[step.kind](kube, journal, step, settings)
        step.state, step.result = ("done", result) if result is not None else ("skipped", "nothing to do")
    except StepFailed as failed:
        step.state, step.error, failure = "failed", str(failed), failed
    except RestError as error:
        step.state, step.error = "failed", f"the API server answered {error}"
        failure = StepFailed(f"step {number} failed: {step.error}")
    except Unreachable as error:  # a lost connection: resumable from the journal
        step.state, step.error = "failed", str(error)
        failure = StepFailed(f"step {number} failed: {step.error}")
    step.finished = time.time()
    save_journal(journal, path)
    return failure


def _rearm(journal: Journal) -> None:
    """A stopped run's uncordon undid its cordon: both become pending again, so a resume cordons first again."""
    for step in journal.steps:
        if step.kind == "uncordon" and step.state == "done":
            for undone in journal.steps:
                if undone.kind == "cordon" and undone.target == step.target and undone.state == "done":
                    undone.state, undone.result = "pending", "undone when the run stopped; cordons again on resume"
            step.state, step.result = "pending", f"{step.result}; runs again at the end of a resumed run"


def _undo_on_interrupt(kube: Kube, journal: Journal, path: str | Path, settings: Settings) -> None:
    """Run the cleanup steps now, then re-arm the cordons they undid."""
    for number, step in enumerate(journal.steps, 1):
        if step.cleanup and step.state not in ("done", "skipped"):
            _run_step(kube, journal, path, settings, number, step)
    _rearm(journal)
    save_journal(journal, path)


ACTIONS: dict[str, Callable[[Kube, Journal, Step, Settings], str | None]] = {
    "cordon": _cordon,
    "uncordon": _uncordon,
    "evict": _evict,
    "replacement": _replacement,
    "label": _label,
    "mig-state": _mig_state,
    "bind": _bind,
    "delete": _rollback,
    "scheduled": _scheduled,
}


def _revalidate(kube: Kube, journal: Journal, path: str | Path, number: int) -> StepFailed | None:
    """Read the cluster again and re-check the rest of the plan; what moved on fails the step before it starts."""
    try:
        moved = moved_on(journal, number - 1, kube.pods(), kube.imported().cluster)
    except InputError as error:  # a lost connection (Unreachable) or a cluster the loader cannot read: resumable
        return StepFailed(str(error))
    if not moved:
        return None
    failure = StepFailed("the cluster moved on: " + "; ".join(moved), drift=True)
    step = journal.steps[number - 1]
    step.state, step.error, step.finished = "failed", f"not started: {failure}", time.time()
    save_journal(journal, path)
    return failure


def execute(
    kube: Kube, journal: Journal, path: str | Path, settings: Settings, progress: Callable[[int, Step], None]
) -> RunOutcome:
    """Run the journal's remaining steps; the journal file is rewritten before and after each. Interrupted
    (Ctrl-C), the cleanup steps still run and the steps they undo are set pending again, for a resume to redo."""
    stopped: StepFailed | None = None
    try:
        for number, step in enumerate(journal.steps, 1):
            if step.state in ("done", "skipped") or (stopped is not None and not step.cleanup):
                continue
            if stopped is None and not step.cleanup:
                stopped = _revalidate(kube, journal, path, number)
                if stopped is not None:
                    continue
            failure = _run_step(kube, journal, path, settings, number, step)
            stopped = stopped or failure
            progress(number, step)
    except KeyboardInterrupt:
        _undo_on_interrupt(kube, journal, path, settings)
        raise
    if stopped is not None:
        _rearm(journal)
        save_journal(journal, path)
    return RunOutcome(
        journal=str(path),
        dry_run=False,
        finished=journal.finished,
        stopped=None if stopped is None else str(stopped),
        drift=bool(stopped and stopped.drift),
        replan=journal.replan if stopped is not None else None,
        steps=journal.steps,
        notes=journal.notes,
    )
