"""One entry for every `--apply`: dry run by default, carry out with `yes`, resume a journal, report one.

The dry run prints the steps with the server's answer to a dry run of each request and writes nothing, not even
the journal. With `yes` the same server-side dry run comes first, so a forbidden request stops the run before
anything is changed; then the journal is written and the steps run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import InputError
from ..scenarios.live import connect
from .journal import Journal, Step, default_path, load_journal
from .kube import Kube
from .runner import RunOutcome, Settings, execute, preflight

__all__ = ["carry_out", "journal_status", "open_cluster", "resume"]

Progress = Callable[[int, Step], None]


@contextlib.contextmanager
def open_cluster(kubeconfig: str, context: str | None) -> Iterator[Kube]:
    api = connect(kubeconfig, context)
    with api:
        yield Kube(api, kubeconfig, context)


def carry_out(kube: Kube, journal: Journal, yes: bool, path: str | None, progress: Progress) -> RunOutcome:
    """Dry-run every step on the server; with `yes`, write the journal and run them."""
    preview = preflight(kube, journal)
    if not yes or not journal.steps:
        return RunOutcome(journal=None, dry_run=not yes, finished=False, steps=journal.steps, preview=preview,
                          notes=journal.notes, stopped=None if journal.steps else "nothing that can be carried out")  # fmt: skip
    target = Path(path) if path else default_path(journal.run)
    outcome = execute(kube, journal, target, Settings.of(journal), progress)
    outcome.preview = preview
    return outcome


def resume(path: str, yes: bool, progress: Progress) -> RunOutcome:
    """Run what a journal has left (done steps are never run again) against the cluster it names."""
    journal = load_journal(path)
    with open_cluster(journal.kubeconfig, journal.context) as kube:
        if kube.server != journal.server:
            raise InputError(path, f"the journal acts on {journal.server}, the kubeconfig's context is {kube.server}")
        if journal.finished:
            return RunOutcome(journal=path, dry_run=not yes, finished=True, steps=journal.steps, notes=journal.notes)
        return carry_out(kube, journal, yes, path, progress)


def journal_status(path: str) -> RunOutcome:
    """What a journal says, without contacting the cluster."""
    journal = load_journal(path)
    failed = journal.failed
    stopped = f"step {journal.steps.index(failed[0]) + 1} failed: {failed[0].error}" if failed else None
    return RunOutcome(journal=path, dry_run=False, finished=journal.finished, stopped=stopped,
                      replan=journal.replan if failed else None, steps=journal.steps, notes=journal.notes)  # fmt: skip
