"""--apply for preempt, defrag, mig plan and plan, and `gpusched apply --resume/--status` over their journals.

Dry run by default: the steps, each request's server-side dry run, nothing written. `--yes` carries them out,
writing the journal (`--journal`, default under $XDG_STATE_HOME/gpusched) before and after every step. From the
moment an `--apply` command opens the cluster (before it plans) SIGINT, SIGTERM and SIGHUP are handled: the run
cleans up and exits 128 + the signal (130, 143, 129). Exit codes: 0 done (or a dry run that can be carried out),
1 stopped once the run had changed something (a budget, a timeout, mig-manager's failure, the cluster moved on, a
server error, a journal that cannot be written), 2 bad input or a request the server refuses or cannot answer
before anything changed.
"""

from __future__ import annotations

import shlex
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..actions.journal import Journal, Step, state_dir
from ..actions.kube import Kube, Snapshot
from ..actions.run import carry_out, journal_status, open_cluster, resume
from ..actions.runner import RunInterrupted, RunOutcome
from ..actions.signals import Signalled, handled
from ..errors import Interrupted
from ..models.cluster import Cluster
from ..scenarios import Scenario
from .common import JsonFlag, app, check_output, err, out, run, shape, show, usage

__all__ = [
    "ApplyFlag", "JournalOpt", "Live", "PdbTimeoutOpt", "WaitTimeoutOpt", "YesFlag",
    "apply_plan", "check_apply", "finish", "live_apply", "options", "progress", "replan_command",
]  # fmt: skip

ApplyFlag = Annotated[
    bool, typer.Option("--apply", help="carry the plan out on the --kubeconfig cluster (a dry run unless --yes)")
]
YesFlag = Annotated[bool, typer.Option("--yes", help="--apply: really do it (default: a dry run that changes nothing)")]
JournalOpt = Annotated[
    str | None,
    typer.Option(
        "--journal",
        metavar="FILE",
        help="--apply --yes: the journal file (default: $XDG_STATE_HOME/gpusched/apply-RUN.json)",
    ),
]
PdbTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--pdb-timeout",
        metavar="SECONDS",
        min=0,
        max=86400,
        help="seconds to retry an eviction a PodDisruptionBudget refuses",
    ),
]
WaitTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--wait-timeout",
        metavar="SECONDS",
        min=0,
        max=86400,
        help="seconds a pod may take to go, be replaced or be scheduled",
    ),
]


def check_apply(apply: bool, kubeconfig: str | None, context: str | None, yes: bool, journal: str | None) -> None:
    """--yes and --journal belong to --apply, which acts on the --kubeconfig cluster; --context to --kubeconfig."""
    if not apply:
        stray = [name for name, value in (("--yes", yes), ("--journal", journal is not None)) if value]
        if stray:
            raise usage(f"{', '.join(stray)}: only with --apply")
    elif not kubeconfig:
        raise usage("--apply needs --kubeconfig PATH: the cluster to plan from and act on")
    if context and not kubeconfig:
        raise usage("--context goes with --kubeconfig")
    if journal is not None:
        check_output("--journal", journal)


def options(pdb_timeout: float, wait_timeout: float, **more: object) -> dict:
    return {"pdb_timeout": pdb_timeout, "wait_timeout": wait_timeout, **more}


def replan_command() -> str:
    """This command line, less --yes: what plans (and dry-runs) the same again."""
    args = [arg for arg in sys.argv[1:] if arg != "--yes"]
    return "gpusched " + " ".join(shlex.quote(arg) for arg in args)


def progress(as_json: bool):  # noqa: ANN201 - a callback for the runner
    """Each step's outcome as it happens (not with --json: the report comes at the end)."""

    def say(number: int, step: Step) -> None:
        if not as_json:
            out.print(f"{number}. {step.describe()}: {_state(step)}", markup=False)

    return say


def _state(step: Step) -> str:
    if step.state in ("failed", "interrupted"):
        return f"{step.state.upper()}: {step.error}"
    return f"{step.state}" + (f" ({step.result})" if step.result else "")


def render_outcome(console: Console, outcome: RunOutcome) -> None:
    for note in outcome.notes:
        console.print(note, markup=False)
    if outcome.dry_run:
        for line in outcome.preview:
            console.print(f"{line.number}. {line.step}", markup=False)
            console.print(f"   server: {line.server}", markup=False)
        if outcome.steps:
            console.print(
                f"dry run: nothing was changed. --yes carries it out, journal in --journal or {state_dir()}",
                markup=False,
            )
    if outcome.stopped:
        console.print(f"stopped: {outcome.stopped}", markup=False)
    for failed in outcome.cleanup:
        console.print(f"cleanup failed: {failed}", markup=False)
    if outcome.unsaved:
        console.print(f"journal not saved: {outcome.unsaved}; the file shows the run as it was before that (a "
                      "resume checks each step against the cluster first)", markup=False)  # fmt: skip
    if outcome.drift and outcome.replan:
        console.print(f"re-plan: {outcome.replan}", markup=False)
    if outcome.journal and not outcome.dry_run:
        if outcome.finished:
            console.print(f"done: {len(outcome.steps)} steps; journal {outcome.journal}", markup=False)
        else:
            console.print(f"resume: gpusched apply --resume {shlex.quote(outcome.journal)} --yes", markup=False)


Target = tuple[str, str | None, str, str]  # the kubeconfig, its context, the command, and how to re-plan


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP handled in the block: a run's own cleanup happens in the runner (RunInterrupted
    carries its outcome); before the run starts a signal is Interrupted with nothing changed."""
    try:
        with handled():
            yield
    except Signalled as signalled:
        name = signal.Signals(signalled.signum).name
        raise Interrupted(signalled.signum, f"interrupted by {name}; nothing was changed") from None


@dataclass(frozen=True)
class Live:
    """An --apply command's cluster: opened once, read once. The plan, its journal and the run's first check all
    come from `snapshot`."""

    kube: Kube
    snapshot: Snapshot
    kubeconfig: str
    context: str | None

    @property
    def cluster(self) -> Cluster:
        return self.snapshot.cluster

    @property
    def scenario(self) -> Scenario:
        name = self.context or Path(self.kubeconfig).stem
        return Scenario(name, f"live cluster ({self.kubeconfig})", self.cluster, self.snapshot.imported.pending)


@contextmanager
def live_apply(apply: bool, kubeconfig: str | None, context: str | None) -> Iterator[Live | None]:
    """With --apply: signals handled from here on, the --kubeconfig cluster opened and read in one snapshot (None
    without --apply: the command loads its input as usual)."""
    if not apply:
        yield None
        return
    assert kubeconfig is not None  # check_apply refused --apply without it
    with interruptible(), open_cluster(kubeconfig, context) as kube:
        yield Live(kube, kube.snapshot(), kubeconfig, context)


def apply_plan(
    live: Live | None,
    command: str,
    steps: Callable[[Kube, Snapshot, Target], Journal],
    yes: bool,
    journal: str | None,
    as_json: bool,
) -> int:
    """Carry a plan computed from `live.snapshot` out on that cluster: `steps` turns it into a journal, dry-run
    unless `yes`; the outcome shown (an interrupted run's too); its exit code."""
    assert live is not None  # --apply opened the cluster
    target = (str(Path(live.kubeconfig).resolve()), live.context, command, replan_command())
    planned = steps(live.kube, live.snapshot, target)
    try:
        outcome = carry_out(live.kube, planned, yes, journal, progress(as_json), live.snapshot)
    except RunInterrupted as interrupted:
        show(interrupted.outcome, as_json, render_outcome)
        raise
    return finish(outcome, as_json)


def finish(outcome: RunOutcome, as_json: bool) -> int:
    show(outcome, as_json, render_outcome)
    if outcome.dry_run:
        return 0 if outcome.steps and not outcome.stopped else 1
    return 0 if outcome.finished else 1


def render_status(console: Console, outcome: RunOutcome) -> None:
    for number, step in enumerate(outcome.steps, 1):
        console.print(f"{number}. {step.describe()}: {_state(step)}", markup=False)
    render_outcome(console, outcome)


@shape(RunOutcome)
@app.command("apply")
def apply_command(
    resume_path: Annotated[
        str | None,
        typer.Option(
            "--resume", metavar="JOURNAL", help="carry on with a journal's remaining steps (dry run unless --yes)"
        ),
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", metavar="JOURNAL", help="report a journal's steps; contacts nothing")
    ] = None,
    yes: YesFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Resume an --apply run from its journal, or report one; done steps are never done again."""

    def body() -> int:
        if (resume_path is None) == (status is None):
            raise usage("give exactly one of --resume JOURNAL and --status JOURNAL")
        if status is not None:
            if yes:
                raise usage("--yes: only with --resume")
            outcome = journal_status(status)
            show(outcome, as_json, render_status)
            return 0 if outcome.finished else 1
        assert resume_path is not None
        try:
            with interruptible():
                outcome = resume(resume_path, yes, progress(as_json))
        except RunInterrupted as interrupted:
            show(interrupted.outcome, as_json, render_outcome)
            raise
        if outcome.finished and not outcome.preview and not as_json:
            err.print(f"{resume_path}: every step is done already; nothing to do", markup=False)
        return finish(outcome, as_json)

    run(body)
