"""The journal of an apply run: every step, written before it starts and again when it ends, so that a run cut
short (a signal, a crash, a lost connection, a full disk) can be resumed or reported, and a step already done is
never done again.

One JSON file per run, rewritten whole and atomically (gpusched.files) at every change of state. Its default home is
the user's state folder: `$XDG_STATE_HOME/gpusched`, else `~/.local/state/gpusched`. Reading one (`apply --status`)
contacts nothing: the file alone says where the run is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .. import folders
from ..errors import InputError
from ..files import make_folder, read_text, write_files
from ..models.workload import GpuNeeds
from ..planner.optimize.mig.report import GpuChange
from .kube import CORDON_TAINT

__all__ = [
    "VERSION", "Journal", "Placement", "Step", "StepKind", "StepState", "default_path", "load_journal", "locked",
    "save_journal", "state_dir",
]  # fmt: skip

StepKind = Literal[
    "cordon", "uncordon", "evict", "replacement", "label", "mig-state", "bind", "delete", "place", "scheduled"
]  # fmt: skip
StepState = Literal["pending", "running", "done", "failed", "skipped", "interrupted"]
RunState = Literal["new", "running", "done", "stopped", "interrupted"]
VERSION: Literal[2] = 2


class Step(BaseModel):
    """One request (or one wait) against the cluster; `cleanup` steps run whatever happened before them."""

    kind: StepKind
    target: str = Field(description="a node name, or NAMESPACE/NAME of a pod")
    uid: str | None = Field(None, description="the pod's uid at planning time: a pod of the same name is another pod")
    node: str | None = Field(None, description="evict: where the pod runs; bind, place, replacement: where it lands")
    owner: str | None = Field(None, description="replacement: the controller's uid; bind, delete: the gang")
    labels: dict[str, str] = Field(default_factory=dict, description="label, mig-state: the labels gpusched sets")
    previous: dict[str, str] = Field(default_factory=dict, description="label: the same labels before the plan")
    manifest: dict[str, Any] | None = Field(
        None, description="delete: the pod as it was planned, re-created unbound from this (a pod without an owner)"
    )
    cleanup: bool = Field(False, description="undoes an earlier step: runs also after a failure")
    state: StepState = "pending"
    result: str | None = Field(None, description="what happened, in words (a replacement's name, a bound node)")
    error: str | None = Field(None, description="the API server's error, when the step failed")
    started: float | None = None
    finished: float | None = None

    def describe(self) -> str:
        """The step as a sentence, as the plan prints it."""
        labels = ",".join(f"{key}={value}" for key, value in self.labels.items())
        return {
            "cordon": f"cordon {self.target} (taint {CORDON_TAINT}:NoSchedule, this run's)",
            "uncordon": f"uncordon {self.target} (remove this run's taint)",
            "evict": f"evict {self.target} from {self.node} (Eviction API: PodDisruptionBudgets apply)",
            "replacement": f"wait for the owner's replacement of {self.target} on {self.node}",
            "label": f"label node {self.target} {labels}",
            "mig-state": f"wait for {self.target} nvidia.com/mig.config.state=success of {labels}",
            "bind": f"bind {self.target} to {self.node}",
            "delete": f"roll back {self.target} if its gang is incomplete ("
            + (
                "delete; re-created unbound from its manifest)" if self.manifest else "delete; its owner re-creates it)"
            ),
            "place": f"bind {self.target} to {self.node} (unless kube-scheduler placed it already)",
            "scheduled": f"wait for {self.target} to be scheduled",
        }[self.kind]


class Placement(BaseModel):
    """Where the plan puts a pod: the validator re-checks it against the cluster before every step until it is
    there."""

    pod: str
    node: str
    needs: GpuNeeds
    gpus: list[int] = Field(default_factory=list, description="the plan's GPUs (the device plugin picks the real ones)")
    mig: list[tuple[int, int]] = Field(default_factory=list, description="(gpu, start) of MIG instances")
    step: int | None = Field(
        None, description="the step (0-based) that puts it there; None: room the plan makes, never filled by the run"
    )


class Journal(BaseModel):
    """A run: the command that planned it, the cluster it acts on, and its steps in order."""

    version: Literal[2] = VERSION
    run: str = Field(description="this run's id: the value of the cordon taint and of the node lease it sets")
    command: str = Field(description="what was planned, e.g. preempt gpu/train")
    replan: str = Field(description="the command line that plans it again")
    kubeconfig: str
    context: str | None = None
    server: str
    watch: dict[str, list[str]] = Field(
        default_factory=dict, description="node -> pods bound there at planning time: a pod that appears is drift"
    )
    options: dict[str, Any] = Field(default_factory=dict, description="timeouts and rollback")
    steps: list[Step]
    placements: list[Placement] = Field(
        default_factory=list, description="what the rest of the plan puts where: re-validated before each step"
    )
    mig_changes: list[GpuChange] = Field(default_factory=list, description="mig plan: the GPUs it repartitions")
    mig_demand: dict[str, int] = Field(default_factory=dict, description="mig plan: the demand it serves")
    baseline: list[str] = Field(
        default_factory=list, description="what the validator found already when the plan was made: not drift"
    )
    notes: list[str] = Field(default_factory=list, description="what the plan leaves out, and why")
    created: float = Field(default_factory=time.time)
    state: RunState = Field("new", description="the run as a whole: stopped and interrupted runs can be resumed")
    stopped: str | None = Field(None, description="why the last run stopped or was interrupted")
    rolled_back: list[str] = Field(
        default_factory=list, description="gangs whose rollback began (journalled before it acts): never bound again"
    )

    @property
    def finished(self) -> bool:
        """Every step done: the plan carried out (a rolled-back gang means it was not)."""
        return not self.rolled_back and all(step.state in ("done", "skipped") for step in self.steps)

    @property
    def walked(self) -> bool:
        """Nothing left to run: finished, or the rest undone by a rollback (a re-plan binds those gangs)."""
        return all(step.state in ("done", "skipped") for step in self.steps)

    @property
    def failed(self) -> list[Step]:
        return [step for step in self.steps if step.state in ("failed", "interrupted")]

    @property
    def touched(self) -> bool:
        """Whether a step of this journal ever started: the cluster may differ from how the plan found it."""
        return any(step.started is not None for step in self.steps)

    def nodes(self) -> list[str]:
        """Every node the run acts on, waits on or puts pods on: what its lease covers."""
        found = set(self.watch) | {p.node for p in self.placements} | {c.node for c in self.mig_changes}
        for step in self.steps:
            found |= {step.node} if step.node else set()
            found |= {step.target} if step.kind in ("cordon", "uncordon", "label", "mig-state") else set()
        return sorted(found)


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def state_dir() -> Path:
    """$XDG_STATE_HOME/gpusched, else ~/.local/state/gpusched (gpusched.folders: the system's state folder)."""
    return folders.state_dir()


def default_path(run: str) -> Path:
    return state_dir() / f"apply-{run}.json"


def save_journal(journal: Journal, path: str | Path) -> None:
    """Write the whole journal atomically: a crash leaves the previous version or this one, never half of one."""
    make_folder(Path(path).parent)
    write_files([(str(path), journal.model_dump_json(indent=2) + "\n")])


@contextlib.contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Hold the journal's advisory lock (a `.lock` file beside it, since the journal itself is replaced at every
    save) for the block: a second run of the same journal on this host is refused, naming the process that holds
    it. The lock goes with the process, so a killed run leaves none behind; a run that ends removes the file
    while it still holds it (a process that opened it meanwhile finds it gone and takes a new one)."""
    lock = Path(str(path) + ".lock")
    make_folder(lock.parent)
    while True:
        try:
            handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise InputError(str(lock), f"cannot open the journal's lock: {error.strerror or error}") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(handle, 200, 0).decode(errors="replace").strip() or "another process"
            os.close(handle)
            raise InputError(str(path), f"in use by another gpusched run ({holder}): wait for it to end") from None
        try:
            current = os.stat(lock).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle).st_ino:
            break
        os.close(handle)  # the file was removed by the run that held it: lock the one there now
    try:
        with contextlib.suppress(OSError):  # who holds it, for the message of a run refused; a full disk may refuse
            os.ftruncate(handle, 0)
            os.pwrite(handle, f"pid {os.getpid()}".encode(), 0)
        yield
    finally:
        lock.unlink(missing_ok=True)
        os.close(handle)


def load_journal(path: str | Path) -> Journal:
    text = read_text(str(path))
    try:
        version = json.loads(text).get("version")
    except (ValueError, AttributeError):
        version = None
    if isinstance(version, int) and version != VERSION:
        raise InputError(str(path), f"a journal of version {version}, written by another gpusched release; this one "
                         f"reads version {VERSION}: finish it with that release, or plan again", "version")  # fmt: skip
    try:
        return Journal.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InputError(str(path), f"not a gpusched journal: {first['msg']}", field) from None
