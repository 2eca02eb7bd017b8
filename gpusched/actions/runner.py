"""Carry out a journal's steps one at a time, and stop the same way whatever goes wrong.

- Before anything, every remaining write (and the run's node leases) is dry-run on the server (`preflight`): a
  request the user may not make (RBAC 403), a server that refuses or does not answer, stops everything before
  anything is changed (a ClusterError: exit 2).
- Then the run leases its nodes (gpusched.actions.lease: no other run touches them meanwhile).
- Before each step the cluster is read again, in one snapshot (the first step checks against the snapshot the plan
  was made from), and the rest of the plan re-validated (gpusched.actions.revalidate). If the cluster moved on, the
  step is journalled as failed (not started, with what changed) and the run stops, offering a re-plan.
- Each step is journalled as running before it starts and as done (or failed, with the API server's words) after;
  steps already done are never run again, and every step first checks whether its effect already holds, so a step
  cut short is safe to run again.

One boundary around all of it: a step that fails, a read that fails (an HTTP error status, a lost connection, an
answer that is not JSON), a journal that cannot be written (a full disk), SIGINT, SIGTERM or SIGHUP — each stops the
run the same way. With further signals held back, the cleanup runs: the run's cordons are removed (and re-armed
for a resume), a gang that is bound in part is rolled back (journalled before it acts), the leases are released,
and the journal is saved, or the outcome says why it could not be. A signal then raises RunInterrupted (exit
128 + its number); any other stop returns an outcome that says `stopped: ...` (exit 1).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from ..errors import ClusterError, GpuschedError, InputError, Interrupted
from .journal import Journal, Step, save_journal
from .kube import CORDON_TAINT, Kube, Refused, Snapshot
from .lease import Busy, Leases
from .revalidate import moved_on
from .signals import Signalled, handled, held
from .steps import ACTIONS, MIG_CONFIG, MIG_STATE, Settings, StepFailed, budget_words, incomplete_gangs

__all__ = [
    "MIG_CONFIG", "MIG_STATE", "DryRunLine", "RunInterrupted", "RunOutcome", "Settings", "StepFailed", "execute",
    "preflight",
]  # fmt: skip

WRITES = ("cordon", "uncordon", "evict", "label", "bind", "delete", "place")
CLEANUP_TRIES = 3  # a cleanup step that fails on the cluster is tried this often, a second apart


class DryRunLine(BaseModel):
    number: int
    step: str
    server: str = Field(description="the server's answer to the dry run, or what the step waits for")


class RunOutcome(BaseModel):
    journal: str | None = Field(description="the journal file (None: a dry run writes none)")
    dry_run: bool
    finished: bool
    state: str = Field("new", description="the journal's run state: running, done, stopped, interrupted")
    stopped: str | None = Field(None, description="why the run stopped before its end")
    drift: bool = Field(False, description="it stopped because the cluster moved on: re-plan")
    replan: str | None = None
    cleanup: list[str] = Field(default_factory=list, description="what the cleanup could not do, in words")
    unsaved: str | None = Field(None, description="why the journal file could not be brought up to date")
    steps: list[Step] = Field(default_factory=list)
    preview: list[DryRunLine] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class RunInterrupted(Interrupted):
    """A signal stopped the run, after its cleanup: `outcome` says where it is."""

    def __init__(self, signum: int, outcome: RunOutcome) -> None:
        self.outcome = outcome
        super().__init__(signum, f"interrupted by {signal.Signals(signum).name}; the cleanup ran"
                         + (f": {'; '.join(outcome.cleanup)}" if outcome.cleanup else ""))  # fmt: skip

    def __reduce__(self) -> tuple[type[Interrupted], tuple[int, str]]:
        return Interrupted, (self.signum, str(self))


# --- the server-side dry run -------------------------------------------------------------------------------------


def _dry_request(kube: Kube, journal: Journal, step: Step) -> None:
    if step.kind in ("cordon", "uncordon", "label"):
        kube.update_node(step.target, lambda node: {"metadata": {"labels": step.labels}} if step.labels else {},
                         dry_run=True)  # fmt: skip
    elif step.kind == "evict":
        kube.evict(step.target, step.uid, dry_run=True)
    elif step.kind in ("bind", "place"):
        kube.bind(step.target, step.uid, step.node or "", dry_run=True)
    elif step.kind == "delete":
        kube.delete(step.target, step.uid, dry_run=True)
        if step.manifest is not None:  # its re-creation: authorised first, so 409 (it exists now) means allowed
            try:
                kube.create_pod(step.manifest, dry_run=True)
            except Refused as error:
                if error.status != 409:
                    raise


def _waits(step: Step, settings: Settings) -> str:
    seconds = settings.mig_timeout if step.kind == "mig-state" else settings.wait_timeout
    return f"waits up to {seconds:g} s" + ("; `failed` stops the run" if step.kind == "mig-state" else "")


def preflight(kube: Kube, journal: Journal) -> list[DryRunLine]:
    """The leases' write and every remaining step's, dry-run on the server, in order. A refusal other than a
    budget's 429, or no answer, is a ClusterError naming the step and the server's words: nothing was changed."""
    settings = Settings.of(journal)
    try:
        Leases(kube, journal).dry_run()
    except Busy:
        raise
    except ClusterError as error:
        raise ClusterError(kube.server, error.request, f"the run's lease on its nodes: {error.message}; nothing was "
                           "changed", touched=journal.touched) from None  # fmt: skip
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
        except Refused as error:
            if error.status == 429 and step.kind == "evict":
                answer = f"refused now, retried for up to {settings.pdb_timeout:g} s: {budget_words(error)}"
            elif error.status == 404 and (step.cleanup or step.kind == "evict"):
                answer = "gone already" + (": nothing to undo" if step.cleanup else "")
            elif error.status == 409 and step.kind in ("bind", "place"):
                answer = "bound already (the step checks where)"
            else:
                what = "forbidden" if error.status == 403 else "refused"
                raise ClusterError(kube.server, error.request, f"step {number} ({step.describe()}) {what} by the "
                                   f"server: {error.message}; nothing was changed", touched=journal.touched) from None  # fmt: skip
        except ClusterError as error:
            raise ClusterError(kube.server, error.request, f"step {number} ({step.describe()}): {error.message}; "
                               "nothing was changed", touched=journal.touched) from None  # fmt: skip
        lines.append(DryRunLine(number=number, step=step.describe(), server=answer))
    return lines


# --- the run -----------------------------------------------------------------------------------------------------


class _Unwritable(Exception):
    """The journal could not be saved: the run stops (its cleanup still runs)."""


class _Untouched(Exception):  # noqa: N818 - not an error of its own: it carries one out of the run
    """The run ends before its first step changed anything: `error` is what the caller raises."""

    def __init__(self, error: GpuschedError) -> None:
        self.error = error


class _Run:
    def __init__(self, kube: Kube, journal: Journal, path: Path, settings: Settings,
                 progress: Callable[[int, Step], None]) -> None:  # fmt: skip
        self.kube, self.journal, self.path, self.settings, self.progress = kube, journal, path, settings, progress
        self.leases = Leases(kube, journal)
        settings.renew = self.leases.renew
        self.stop: StepFailed | None = None
        self.signum: int | None = None
        self.unsaved: str | None = None
        self.cleanup_failed: list[str] = []

    def save(self, strict: bool = True) -> None:
        try:
            save_journal(self.journal, self.path)
            self.unsaved = None
        except InputError as error:  # gpusched.files names the path and the system's words (a full disk)
            self.unsaved = error.message
            if strict:
                raise _Unwritable(f"cannot write the journal {self.path}: {error.message}") from None

    def go(self, snapshot: Snapshot | None) -> RunOutcome:
        with handled():
            try:
                self.leases.take()  # before anything: on failure this run has done nothing
            except ClusterError as error:
                error.touched = self.journal.touched
                raise
            bug: Exception | None = None
            try:
                self._steps(snapshot)
            except Signalled as signalled:
                self.signum = signalled.signum
            except KeyboardInterrupt:  # SIGINT where gpusched's handler is not installed (a library caller's)
                self.signum = signal.SIGINT
            except _Unwritable as error:
                self.stop = self.stop or StepFailed(str(error))
            except _Untouched as untouched:
                raise untouched.error from None
            except GpuschedError as error:  # any other of gpusched's errors stops the run like a failed step
                self.stop = StepFailed(str(error))
            except Exception as error:  # a gpusched bug: clean up all the same, then let it be reported
                bug = error
                self.stop = StepFailed(f"an internal error: {type(error).__name__}: {error}")
            with held() as late:
                self._finish()
        if bug is not None:
            raise bug
        outcome = self._outcome()
        signum = self.signum or (None if outcome.finished else late.signum)
        if signum is not None:
            raise RunInterrupted(signum, outcome)
        return outcome

    def _rearm_lost_cordons(self, snapshot: Snapshot | None) -> None:
        """A cordon the journal has done, whose uncordon is still to come, must still be there: a cleanup whose
        journal could not be saved (a full disk) or someone else may have removed the taint. Then it runs again."""
        undone = {s.target for s in self.journal.steps if s.kind == "uncordon" and s.state not in ("done", "skipped")}
        for step in self.journal.steps:
            if step.kind != "cordon" or step.state != "done" or step.target not in undone:
                continue
            node = snapshot.node(step.target) if snapshot else self.kube.node(step.target)
            taints = ((node or {}).get("spec") or {}).get("taints") or []
            if not any(t.get("key") == CORDON_TAINT and t.get("value") == self.journal.run for t in taints):
                step.state, step.result = "pending", "its taint is gone (removed since): cordons again"

    def _steps(self, snapshot: Snapshot | None) -> None:
        journal = self.journal
        try:
            self._rearm_lost_cordons(snapshot)
        except ClusterError as error:
            self.stop = StepFailed(f"before the first step: {error}")
            return
        for number, step in enumerate(journal.steps, 1):
            if step.state in ("done", "skipped"):
                continue
            if not step.cleanup:
                self.stop = self._check(number, snapshot)
                snapshot = None  # the plan's own snapshot serves the first check only
                if self.stop is not None:
                    return
            fresh = not journal.touched
            step.state, step.started, step.error = "running", time.time(), None
            journal.state = "running"
            try:
                self.save()
            except _Unwritable as error:
                step.state, step.started = "pending", None  # it never began
                if fresh:  # not a thing has changed yet: bad input, as any unwritable output is
                    self.leases.release()
                    raise _Untouched(InputError(str(self.path), f"{error}; nothing was changed")) from None
                raise
            self.stop = self._act(number, step)
            self.save()
            self.progress(number, step)
            if self.stop is not None:
                return

    def _check(self, number: int, snapshot: Snapshot | None) -> StepFailed | None:
        """Read the cluster again and re-check the rest of the plan; what moved on fails the step before it starts.
        A read that fails stops the run too (resumable): the step is left as it was."""
        try:
            found = snapshot or self.kube.snapshot()
        except ClusterError as error:
            return StepFailed(f"before step {number}: {error}")
        moved = moved_on(self.journal, number - 1, found.pods, found.cluster)
        if not moved:
            return None
        failure = StepFailed("the cluster moved on: " + "; ".join(moved), drift=True)
        step = self.journal.steps[number - 1]
        step.state, step.error, step.finished = "failed", f"not started: {failure}", time.time()
        self.save()
        return failure

    def _act(self, number: int, step: Step) -> StepFailed | None:
        """One step; its outcome in the journal (in memory: the caller saves it)."""
        failure = None
        try:
            result = ACTIONS[step.kind](self.kube, self.journal, step, self.settings)
            step.state, step.result = ("done", result) if result is not None else ("skipped", "nothing to do")
        except StepFailed as failed:
            step.state, step.error, failure = "failed", str(failed), failed
        except ClusterError as error:
            step.state, step.error = "failed", str(error)
            failure = StepFailed(f"step {number} failed: {error}")
        step.finished = time.time()
        return failure

    def _finish(self) -> None:
        """After the last step, or after a stop: the cleanup, the leases released, the journal saved."""
        journal = self.journal
        if self.signum is not None:
            for step in journal.steps:
                if step.state == "running":
                    step.state = "interrupted"
                    step.error = (f"interrupted by {signal.Signals(self.signum).name} while running: it may have "
                                  "taken effect; a resume checks first")  # fmt: skip
        if self.stop is None and self.signum is None and journal.rolled_back and journal.walked:
            self.stop = StepFailed(f"rolled back, not bound: {', '.join(journal.rolled_back)} (all or nothing); a "
                                   "re-plan binds them again", drift=True)  # fmt: skip
            journal.state, journal.stopped = "stopped", str(self.stop)
        elif self.stop is None and self.signum is None:
            journal.state = "done" if journal.finished else "stopped"
        else:
            self._cleanup()
            journal.state = "interrupted" if self.signum is not None else "stopped"
            journal.stopped = (f"interrupted by {signal.Signals(self.signum).name}" if self.signum is not None
                               else str(self.stop))  # fmt: skip
        self.cleanup_failed += self.leases.release()
        self.save(strict=False)

    def _cleanup(self) -> None:
        """Roll back incomplete gangs (journalled first), run the cleanup steps, re-arm the cordons they undid."""
        journal = self.journal
        gangs = incomplete_gangs(journal)
        if gangs:
            journal.rolled_back += gangs
            self.save(strict=False)  # the rollback is on record before it acts
        for number, step in enumerate(journal.steps, 1):
            if step.kind == "bind" and step.owner in journal.rolled_back and step.state != "done":
                step.state, step.result, step.error = "skipped", "its gang was rolled back", step.error
            if not step.cleanup or step.state in ("done", "skipped"):
                continue
            if step.kind == "delete" and step.owner not in journal.rolled_back:
                continue  # its gang is complete or not begun: its rollback stays armed for a resume
            self._clean(number, step)
        _rearm(journal)

    def _clean(self, number: int, step: Step) -> None:
        """A cleanup step, tried again on a cluster error (the server may be briefly away); its failure is said."""
        for attempt in range(CLEANUP_TRIES):
            step.state, step.started = "running", step.started or time.time()
            self.save(strict=False)
            if self._act(number, step) is None:
                break
            if attempt < CLEANUP_TRIES - 1:
                time.sleep(1.0)
        if step.state == "failed":
            self.cleanup_failed.append(f"step {number} ({step.describe()}) failed: {step.error}")
        self.save(strict=False)

    def _outcome(self) -> RunOutcome:
        journal, stop = self.journal, self.stop
        stopped = None if stop is None else str(stop)
        if self.signum is not None:
            stopped = journal.stopped
        return RunOutcome(
            journal=str(self.path), dry_run=False, finished=journal.finished, state=journal.state, stopped=stopped,
            drift=bool(stop and stop.drift), replan=journal.replan if stop is not None else None,
            cleanup=self.cleanup_failed, unsaved=self.unsaved, steps=journal.steps, notes=journal.notes,
        )  # fmt: skip


def _rearm(journal: Journal) -> None:
    """A stopped run's uncordon undid its cordon: both become pending again, so a resume cordons first again."""
    for step in journal.steps:
        if step.kind == "uncordon" and step.state == "done":
            for undone in journal.steps:
                if undone.kind == "cordon" and undone.target == step.target and undone.state == "done":
                    undone.state, undone.result = "pending", "undone when the run stopped; cordons again on resume"
            step.state, step.result = "pending", f"{step.result}; runs again at the end of a resumed run"


def execute(
    kube: Kube, journal: Journal, path: str | Path, settings: Settings, progress: Callable[[int, Step], None],
    snapshot: Snapshot | None = None,
) -> RunOutcome:  # fmt: skip
    """Run the journal's remaining steps (the first check against `snapshot`, when the plan was just made from it);
    the journal file is rewritten before and after each. A signal ends it in RunInterrupted, after the cleanup."""
    return _Run(kube, journal, Path(path), settings, progress).go(snapshot)
