"""One entry for every `--apply`: dry run by default, carry out with `yes`, resume a journal, report one.

The dry run prints the steps with the server's answer to a dry run of each request and writes nothing, not even
the journal. With `yes` the same server-side dry run comes first, so a forbidden request stops the run before
anything is changed; then the journal's lock is taken (a second run of the same journal on this host is refused)
and the steps run. `journal_status` reads the file alone: no kubeconfig is loaded, no exec plugin runs, nothing is
contacted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import ClusterError, InputError
from ..scenarios.live import connect
from .journal import Journal, Step, default_path, load_journal, locked
from .kube import Kube, Snapshot
from .runner import RunOutcome, Settings, execute, preflight

__all__ = ["carry_out", "journal_status", "open_cluster", "resume"]

Progress = Callable[[int, Step], None]


@contextlib.contextmanager
def open_cluster(kubeconfig: str, context: str | None) -> Iterator[Kube]:
    api = connect(kubeconfig, context)
    with api:
        yield Kube(api, kubeconfig, context)


def carry_out(kube: Kube, journal: Journal, yes: bool, path: str | None, progress: Progress,
              snapshot: Snapshot | None = None) -> RunOutcome:  # fmt: skip
    """Dry-run every step on the server; with `yes`, write the journal and run them (the first check against
    `snapshot`, the one the plan and the journal were made from)."""
    preview = preflight(kube, journal)
    if not yes or not journal.steps:
        return RunOutcome(journal=None, dry_run=not yes, finished=False, steps=journal.steps, preview=preview,
                          notes=journal.notes, stopped=None if journal.steps else "nothing that can be carried out")  # fmt: skip
    target = Path(path) if path else default_path(journal.run)
    with locked(target):
        outcome = execute(kube, journal, target, Settings.of(journal), progress, snapshot)
    outcome.preview = preview
    return outcome


def resume(path: str, yes: bool, progress: Progress) -> RunOutcome:
    """Run what a journal has left (done steps are never run again) against the cluster it names. The lock is
    taken before the journal is read, so two resumes never both walk it."""
    with locked(path):
        journal = load_journal(path)
        if journal.finished:
            return RunOutcome(journal=path, dry_run=not yes, finished=True, state=journal.state, steps=journal.steps,
                              notes=journal.notes)  # fmt: skip
        try:
            with open_cluster(journal.kubeconfig, journal.context) as kube:
                if kube.server != journal.server:
                    raise InputError(path, f"the journal acts on {journal.server}, the kubeconfig's context is "
                                     f"{kube.server}")  # fmt: skip
                preview = preflight(kube, journal)
                if not yes:
                    return RunOutcome(journal=None, dry_run=True, finished=False, state=journal.state,
                                      steps=journal.steps, preview=preview, notes=journal.notes)  # fmt: skip
                outcome = execute(kube, journal, path, Settings.of(journal), progress)
        except ClusterError as error:  # before the first step: the earlier run's changes are still there
            error.touched = journal.touched
            raise
    outcome.preview = preview
    return outcome


def journal_status(path: str) -> RunOutcome:
    """What a journal says, without contacting the cluster (nor loading its kubeconfig)."""
    journal = load_journal(path)
    failed = journal.failed
    stopped = journal.stopped
    if failed and stopped is None:
        stopped = f"step {journal.steps.index(failed[0]) + 1} failed: {failed[0].error}"
    drift = any((step.error or "").startswith("not started: the cluster moved on") for step in failed)
    return RunOutcome(journal=path, dry_run=False, finished=journal.finished, state=journal.state,
                      stopped=None if journal.finished else stopped, drift=drift,
                      replan=journal.replan if failed else None, steps=journal.steps, notes=journal.notes)  # fmt: skip
