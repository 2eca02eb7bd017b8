"""What each kind of step does on the cluster. Every step first checks whether its effect already holds, so a step
cut short (a signal, a lost answer, a kill) is safe to run again; a step that finds someone else's state where it
expected its own stops the run as drift (the cluster moved on: re-plan) rather than acting on it.

- cordon / uncordon: a NoSchedule taint `gpusched.io/cordon=RUN` on the node, added and removed read-modify-write on
  the version read. Ownership is the taint itself: a run removes only its own, never a `kubectl cordon` or another
  run's. Pods that tolerate every taint (`operator: Exists` without a key) ignore it, as they ignore a cordon.
- evict: the Eviction API (budgets apply), a budget's 429 retried with a doubling pause; then wait until it is gone.
- replacement: the owner's new pod, bound where the plan said.
- label / mig-state: mig-manager's protocol, which acts on a change of `nvidia.com/mig.config` only; the state read
  counts only while the label is still the config gpusched set. A `failed` state is retried on resume by labelling
  the node back to the config it had, waiting for that, then labelling the plan's config again.
- bind, delete: a gang's members, and their rollback: all or nothing. The runner journals a gang's rollback before
  it acts; a rolled-back gang is never bound again. A member is rolled back when it is bound to the node gpusched
  bound it to (the answer to its Binding may have been lost): an owned pod is deleted and its owner re-creates it,
  a pod without an owner is deleted and re-created unbound from the manifest the journal keeps. A member someone
  else bound elsewhere is left alone.
- place: bind a preemptor to the node its victims left (unless kube-scheduler placed it already); scheduled: wait
  for kube-scheduler to place it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .journal import Journal, Step
from .kube import CORDON_TAINT, Kube, Refused, controller_uid, pod_key
from .revalidate import alive

__all__ = ["ACTIONS", "MIG_CONFIG", "MIG_STATE", "Settings", "StepFailed", "budget_words", "incomplete_gangs"]

MIG_CONFIG, MIG_STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"
POLL = 0.2  # seconds between reads while waiting
BACKOFF_MAX = 10.0  # the longest pause between two eviction attempts a budget refused


class StepFailed(Exception):
    """A step that cannot complete: a budget that never allowed, a timeout, mig-manager's `failed`, or drift."""

    def __init__(self, message: str, drift: bool = False) -> None:
        self.drift = drift
        super().__init__(message)


@dataclass
class Settings:
    pdb_timeout: float = 300.0  # how long an eviction a budget refuses is retried
    wait_timeout: float = 300.0  # how long a pod may take to go, to be replaced or scheduled
    mig_timeout: float = 900.0  # how long mig-manager may take to apply a config (it may reboot the node)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    renew: Callable[[], None] = field(default=lambda: None, repr=False)  # keeps the run's node leases alive

    @classmethod
    def of(cls, journal: Journal) -> Settings:
        options = journal.options
        return cls(
            pdb_timeout=float(options.get("pdb_timeout", cls.pdb_timeout)),
            wait_timeout=float(options.get("wait_timeout", cls.wait_timeout)),
            mig_timeout=float(options.get("mig_timeout", cls.mig_timeout)),
        )

    def wait(self, probe: Callable[[], str | None], seconds: float) -> str | None:
        """Poll until `probe` says something; None after `seconds`. The leases are renewed while it waits."""
        deadline = self.clock() + seconds
        while True:
            found = probe()
            if found is not None or self.clock() > deadline:
                return found
            self.renew()
            self.sleep(POLL)


def budget_words(error: Refused) -> str:
    return "; ".join(error.causes) or error.reason


# --- cordons -----------------------------------------------------------------------------------------------------


def _taints(node: dict) -> list[dict]:
    return list((node.get("spec") or {}).get("taints") or [])


def _cordon(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    done = []

    def add(node: dict) -> dict | None:
        taints = _taints(node)
        ours = [t for t in taints if t.get("key") == CORDON_TAINT]
        if any(t.get("value") == journal.run for t in ours):
            return None
        if ours:  # the lease keeps two runs apart; a taint left by a run that was killed is still not ours
            raise StepFailed(f"node {step.target} carries another gpusched run's taint {CORDON_TAINT}="
                             f"{ours[0].get('value')}: left as it is", drift=True)  # fmt: skip
        done.append(True)
        return {"spec": {"taints": [*taints, {"key": CORDON_TAINT, "value": journal.run, "effect": "NoSchedule"}]}}

    if kube.update_node(step.target, add) is None:
        raise StepFailed(f"node {step.target} is gone", drift=True)
    return "cordoned" if done else "cordoned already (by this run)"


def _uncordon(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    done = []

    def remove(node: dict) -> dict | None:
        taints = _taints(node)
        kept = [t for t in taints if not (t.get("key") == CORDON_TAINT and t.get("value") == journal.run)]
        if len(kept) == len(taints):
            return None
        done.append(True)
        return {"spec": {"taints": kept}}

    if kube.update_node(step.target, remove) is None:
        return "node gone: nothing to undo"
    return "uncordoned" if done else "not cordoned by this run: nothing to undo"


# --- pods ----------------------------------------------------------------------------------------------------------


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
        except Refused as error:
            if error.status == 404:
                break
            if error.status != 429:
                raise
            if settings.clock() + pause > deadline:
                raise StepFailed(
                    f"blocked by a PodDisruptionBudget for {settings.pdb_timeout:g} s ({tries} tries): "
                    f"{budget_words(error)}; nothing more was evicted"
                ) from None
            settings.renew()
            settings.sleep(pause)
            pause = min(pause * 2, BACKOFF_MAX)
        pod = _same(kube, step)
    if pod is None:
        return "gone already"
    if settings.wait(lambda: None if _same(kube, step) else "gone", settings.wait_timeout) is None:
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

    found = settings.wait(bound, settings.wait_timeout)
    if found is None:
        raise StepFailed(f"no replacement of {step.target} was scheduled in {settings.wait_timeout:g} s")
    name, node = found.split(" ")
    if node != step.node:
        raise StepFailed(f"the replacement {name} landed on {node}, the plan said {step.node}", drift=True)
    return f"{name} on {node}"


def _place(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    """Bind the preemptor where the plan makes room; kube-scheduler placing it first (anywhere) is fine too."""
    for _ in range(2):  # a Binding refused because it is bound now: read again, once
        pod = _same(kube, step)
        if pod is None:
            raise StepFailed(f"{step.target} is gone", drift=True)
        node = pod["spec"].get("nodeName")
        if node:
            return f"bound to {node}" + ("" if node == step.node else f" by someone else (the plan said {step.node})")
        try:
            kube.bind(step.target, step.uid, step.node or "")
            return f"bound to {step.node}"
        except Refused as error:
            if error.status != 409:
                raise
    raise StepFailed(f"{step.target}: the Binding was refused as a conflict twice")


def _scheduled(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    def bound() -> str | None:
        pod = kube.pod(step.target)
        return (pod or {}).get("spec", {}).get("nodeName") or None

    node = settings.wait(bound, settings.wait_timeout)
    if node is None:
        raise StepFailed(f"{step.target} was not scheduled in {settings.wait_timeout:g} s")
    return f"scheduled on {node}" + ("" if node == step.node else f" (the plan said {step.node})")


# --- gangs ---------------------------------------------------------------------------------------------------------


def _bind(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str | None:
    if step.owner in journal.rolled_back:
        return None
    pod = _same(kube, step)
    if pod is None:
        raise StepFailed(f"{step.target} is gone", drift=True)
    bound = pod["spec"].get("nodeName")
    if bound == step.node:
        return f"bound to {bound}"
    if bound:
        raise StepFailed(f"{step.target} is bound to {bound} already", drift=True)
    kube.bind(step.target, step.uid, step.node or "")
    return f"bound to {step.node}"


def incomplete_gangs(journal: Journal) -> list[str]:
    """Gangs with a member whose Binding was sent (or may have been) while another member is not bound: to roll
    back when the run stops."""
    gangs: dict[str, list[Step]] = {}
    for step in journal.steps:
        if step.kind == "bind" and step.owner and step.owner not in journal.rolled_back:
            gangs.setdefault(step.owner, []).append(step)
    return [gang for gang, binds in gangs.items() if len(binds) > 1 and any(s.started for s in binds)
            and not all(s.state == "done" for s in binds)]  # fmt: skip


def _rollback(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str | None:
    """Undo one member of a rolled-back gang (None: its gang is complete, nothing to do)."""
    if step.owner not in journal.rolled_back:
        return None
    bind = next(s for s in journal.steps if s.kind == "bind" and s.target == step.target and s.owner == step.owner)
    pod = kube.pod(step.target)
    if pod is not None and step.uid and pod["metadata"]["uid"] != step.uid:
        return "back already (a new pod of that name)"
    if pod is not None:
        node = pod["spec"].get("nodeName")
        if not node:
            return "not bound: nothing to undo"
        if bind.started is None or node != bind.node:
            return f"bound to {node} by someone else: left alone"
        try:
            kube.delete(step.target, step.uid)
        except Refused as error:
            if error.status != 404:
                raise
        if settings.wait(lambda: None if _same(kube, step) else "gone", settings.wait_timeout) is None:
            raise StepFailed(f"deleted, but still terminating after {settings.wait_timeout:g} s")
    if step.manifest is None:
        return "deleted (its owner re-creates it)" if pod is not None else "gone already"
    try:
        kube.create_pod(step.manifest)
    except Refused as error:
        if error.status != 409:  # 409: it exists again (re-created by an earlier try)
            raise
    return ("deleted and " if pod is not None else "") + "re-created unbound from its manifest"


# --- MIG -----------------------------------------------------------------------------------------------------------


def _labels(kube: Kube, name: str) -> dict[str, str]:
    node = kube.node(name)
    if node is None:
        raise StepFailed(f"node {name} is gone", drift=True)
    return dict(node["metadata"].get("labels") or {})


def _set_config(kube: Kube, name: str, labels: dict[str, str]) -> None:
    """The config label, and the state pending in the same write, so that a `success` read afterwards answers this
    config, not the one before it."""
    kube.update_node(name, lambda node: {"metadata": {"labels": {**labels, MIG_STATE: "pending"}}})


def _label(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    labels = _labels(kube, step.target)
    if all(labels.get(key) == value for key, value in step.labels.items()):
        return "labelled already"
    changed = {key: labels.get(key) for key in step.previous if labels.get(key) != step.previous[key]}
    if changed:
        now = ", ".join(f"{key}={value}" for key, value in changed.items())
        raise StepFailed(f"node {step.target} is now labelled {now} by someone else; the plan started from "
                         f"{_words(step.previous)}", drift=True)  # fmt: skip
    _set_config(kube, step.target, step.labels)
    return "labelled"


def _mig_state(kube: Kube, journal: Journal, step: Step, settings: Settings) -> str:
    """mig-manager's answer for the config gpusched set; a retry when the last answer for it was `failed`."""
    label = next((s for s in journal.steps if s.kind == "label" and s.target == step.target), None)
    retried = ""
    if _config_state(kube, step, step.labels) == "failed":
        if label is None or not label.previous:
            raise StepFailed(f"mig-manager reported {MIG_STATE}=failed on {step.target}; gpusched cannot retry it "
                             "(mig-manager acts on a change of the label, and the node had no config before)")  # fmt: skip
        _set_config(kube, step.target, label.previous)  # back to the config the node had: a change mig-manager acts on
        back = _answer(kube, step, label.previous, settings)
        _set_config(kube, step.target, step.labels)
        retried = f" (retried: back to {_words(label.previous)} first, which reported {back})"
    found = _answer(kube, step, step.labels, settings)
    if found == "failed":
        raise StepFailed(f"mig-manager reported {MIG_STATE}=failed on {step.target} (see its logs on the node); "
                         "a resume retries it")  # fmt: skip
    return "success" + retried


def _config_state(kube: Kube, step: Step, wanted: dict[str, str]) -> str | None:
    """mig-manager's state for `wanted`; StepFailed (drift) when the node's config label is not `wanted` any more:
    someone else relabelled it, and the state read would be their config's."""
    labels = _labels(kube, step.target)
    if any(labels.get(key) != value for key, value in wanted.items()):
        now = ", ".join(f"{key}={labels.get(key)}" for key in wanted)
        raise StepFailed(f"node {step.target} is now labelled {now} by someone else while gpusched waited for "
                         f"{_words(wanted)}: its {MIG_STATE} is not this plan's", drift=True)  # fmt: skip
    found = labels.get(MIG_STATE)
    return found if found in ("success", "failed") else None


def _answer(kube: Kube, step: Step, wanted: dict[str, str], settings: Settings) -> str:
    found = settings.wait(lambda: _config_state(kube, step, wanted), settings.mig_timeout)
    if found is None:
        raise StepFailed(f"{MIG_STATE} of {_words(wanted)} on {step.target} not success after "
                         f"{settings.mig_timeout:g} s")  # fmt: skip
    return found


def _words(labels: dict[str, str]) -> str:
    return ", ".join(f"{key}={value}" for key, value in labels.items()) or "no labels"


ACTIONS: dict[str, Callable[[Kube, Journal, Step, Settings], str | None]] = {
    "cordon": _cordon,
    "uncordon": _uncordon,
    "evict": _evict,
    "replacement": _replacement,
    "label": _label,
    "mig-state": _mig_state,
    "bind": _bind,
    "delete": _rollback,
    "place": _place,
    "scheduled": _scheduled,
}
