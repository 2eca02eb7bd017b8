"""The journal of an apply run: every step, written before it starts and again when it ends, so that a run cut
short (Ctrl-C, a crash, a lost connection) can be resumed or reported, and a step already done is never done again.

One JSON file per run, rewritten whole and atomically (gpusched.files) at every change of state. Its default home is
the user's state folder: `$XDG_STATE_HOME/gpusched`, else `~/.local/state/gpusched`.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .. import folders
from ..errors import InputError
from ..files import make_folder, read_text, write_files
from ..models.workload import GpuNeeds
from ..planner.optimize.mig.report import GpuChange

__all__ = [
    "Journal", "Placement", "Step", "StepKind", "StepState", "default_path", "load_journal", "save_journal",
    "state_dir",
]  # fmt: skip

StepKind = Literal["cordon", "uncordon", "evict", "replacement", "label", "mig-state", "bind", "delete", "scheduled"]
StepState = Literal["pending", "running", "done", "failed", "skipped"]


class Step(BaseModel):
    """One request (or one wait) against the cluster; `cleanup` steps run whatever happened before them."""

    kind: StepKind
    target: str = Field(description="a node name, or NAMESPACE/NAME of a pod")
    uid: str | None = Field(None, description="the pod's uid at planning time: a pod of the same name is another pod")
    node: str | None = Field(None, description="evict: where the pod runs; bind, replacement: where it must land")
    owner: str | None = Field(None, description="replacement: the controller's uid; bind: the gang")
    labels: dict[str, str] = Field(default_factory=dict, description="label: the labels to set")
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
            "cordon": f"cordon {self.target}",
            "uncordon": f"uncordon {self.target} (if gpusched cordoned it)",
            "evict": f"evict {self.target} from {self.node} (Eviction API: PodDisruptionBudgets apply)",
            "replacement": f"wait for the owner's replacement of {self.target} on {self.node}",
            "label": f"label node {self.target} {labels}",
            "mig-state": f"wait for {self.target} nvidia.com/mig.config.state=success",
            "bind": f"bind {self.target} to {self.node}",
            "delete": f"delete {self.target} (rollback of an incomplete gang)",
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

    version: Literal[1] = 1
    run: str = Field(description="this run's id: the value of the cordon annotation it sets")
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

    @property
    def finished(self) -> bool:
        return all(step.state in ("done", "skipped") for step in self.steps)

    @property
    def failed(self) -> list[Step]:
        return [step for step in self.steps if step.state == "failed"]


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


def load_journal(path: str | Path) -> Journal:
    text = read_text(str(path))
    try:
        return Journal.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InputError(str(path), f"not a gpusched journal: {first['msg']}", field) from None
