"""Differential testing: play random scenarios on the real control plane and compare every pod with gpusched.

Pods are created one at a time and each one's verdict is awaited before the next, so the state gpusched is
given (`kubectl get nodes/pods -o json`, read back from the API) is the state the scheduler decided on. A bound
pod agrees when its node is one gpusched finds feasible (the scheduler then picks among them by score, ties at
random); a Pending pod agrees when the PodScheduled message is gpusched's word for word. A disagreement is shrunk
by replaying the scenario without each node and earlier pod in turn, keeping every removal that still disagrees.
"""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Callable

from pydantic import BaseModel, Field, computed_field

from ..planner.k8s import predict
from .api import Rest, RestError
from .scenarios import PRIORITY_CLASS, RUNTIME_CLASS, Scenario, generate

__all__ = ["Outcome", "Disagreement", "ConformanceReport", "Player", "run", "verdict"]

NAMESPACE = "gpusched-conformance"
SCENARIO_LABEL = "gpusched.io/scenario"
PROBE_RESOURCE = "gpusched.io/probe"
SYNC_TIMEOUT = 20.0


class Outcome(BaseModel):
    pod: str
    node: str | None = Field(None, description="where the real scheduler bound it")
    message: str | None = Field(None, description="the real PodScheduled=False message")
    feasible: list[str] = Field(default_factory=list, description="the nodes gpusched finds feasible")
    predicted: str | None = Field(None, description="gpusched's message, when it predicts Pending")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def agrees(self) -> bool:
        if self.node is not None:
            return self.node in self.feasible
        return not self.feasible and self.message == self.predicted

    def real(self) -> str:
        return f"bound to {self.node}" if self.node else f"Pending: {self.message}"

    def gpusched(self) -> str:
        return f"fits {', '.join(self.feasible)}" if self.feasible else f"Pending: {self.predicted}"


class Disagreement(BaseModel):
    scenario: str
    outcome: Outcome
    reproducer: Scenario = Field(description="the smallest replay found that still disagrees on the same pod")


class ConformanceReport(BaseModel):
    version: str
    seed: int
    scenarios: int
    pods: int
    agreed: int
    seconds: float
    disagreements: list[Disagreement]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float:
        return round(100.0 * self.agreed / self.pods, 2) if self.pods else 100.0


def _condition(pod: dict) -> dict | None:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition.get("type") == "PodScheduled":
            return condition
    return None


def verdict(pod: dict) -> tuple[str | None, str | None] | None:
    """(node, None) once bound, (None, message) once found unschedulable, None while undecided."""
    if pod.get("spec", {}).get("nodeName"):
        return pod["spec"]["nodeName"], None
    condition = _condition(pod)
    if condition and condition.get("status") == "False" and condition.get("reason") == "Unschedulable":
        return None, condition.get("message", "")
    return None


class Player:
    """Plays scenarios on one cluster; `play` returns one Outcome per pod and always cleans up after itself."""

    def __init__(self, rest: Rest, version: str) -> None:
        self.rest, self.version = rest, version
        self.plays = itertools.count()
        self._setup()

    def _setup(self) -> None:
        for path, body in (
            ("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}),
            ("/apis/scheduling.k8s.io/v1/priorityclasses", PRIORITY_CLASS),
            ("/apis/node.k8s.io/v1/runtimeclasses", RUNTIME_CLASS),
        ):
            try:
                self.rest.create(path, body)
            except RestError as error:
                if error.status != 409:  # already there from an earlier run
                    raise

    def play(self, scenario: Scenario) -> list[Outcome]:
        label = f"{scenario.label}-{next(self.plays)}"
        try:
            for node in scenario.nodes:
                self.rest.create("/api/v1/nodes", _labelled(node, label))
            self._sync(label, len(scenario.nodes))
            return [self._one(pod) for pod in scenario.pods]
        finally:
            self._reset(label)

    def _sync(self, label: str, count: int) -> None:
        """Wait until the scheduler's cache holds exactly this play's nodes, read off an impossible probe pod."""
        expected = f"0/{count} nodes are available: {count} Insufficient {PROBE_RESOURCE}."
        deadline = time.monotonic() + SYNC_TIMEOUT
        for attempt in itertools.count():
            name = f"{label}-probe-{attempt}"
            self.rest.create(f"/api/v1/namespaces/{NAMESPACE}/pods", _probe(name, label))
            _, message = self._await(name)
            self.rest.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
            if message and message.startswith(expected):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the scheduler never saw the {count} nodes of {label}: {message}")

    def _await(self, name: str) -> tuple[str | None, str | None]:
        path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
        return self.rest.wait(lambda: verdict(self.rest.get(path)))

    def _one(self, manifest: dict) -> Outcome:
        name = manifest["metadata"]["name"]
        self.rest.create(f"/api/v1/namespaces/{NAMESPACE}/pods", manifest)
        node, message = self._await(name)
        nodes, pods = self.rest.get("/api/v1/nodes"), self.rest.get("/api/v1/pods")
        pod = self.rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
        prediction = predict(nodes, pods, pod, self.version)
        return Outcome(
            pod=name, node=node, message=message, feasible=prediction.feasible, predicted=prediction.message
        )

    def _reset(self, label: str) -> None:
        """Every pod of the namespace and this play's nodes, deleted at once (no kubelet to wait for)."""
        self.rest.delete(f"/api/v1/namespaces/{NAMESPACE}/pods")
        self.rest.delete(f"/api/v1/nodes?labelSelector={SCENARIO_LABEL}%3D{label}")
        self.rest.wait(lambda: not self.rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"])


def _labelled(node: dict, label: str) -> dict:
    node = copy.deepcopy(node)
    node["metadata"]["labels"][SCENARIO_LABEL] = label
    return node


def _probe(name: str, label: str) -> dict:
    """Tolerates everything, selects this play's nodes, needs what none has: the message counts what is seen."""
    container = {"name": "probe", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {PROBE_RESOURCE: "1"}}}
    spec = {"containers": [container], "tolerations": [{"operator": "Exists"}], "nodeSelector": {SCENARIO_LABEL: label}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


# --- shrinking ----------------------------------------------------------------------------------------------------


def _disagrees(player: Player, scenario: Scenario, pod: str) -> Outcome | None:
    for outcome in player.play(scenario):
        if outcome.pod == pod:
            return None if outcome.agrees else outcome
    return None


def _without(scenario: Scenario, kind: str, index: int) -> Scenario:
    items = getattr(scenario, kind)
    return scenario.model_copy(update={kind: items[:index] + items[index + 1 :]})


def shrink(player: Player, scenario: Scenario, outcome: Outcome) -> tuple[Scenario, Outcome]:
    """Greedy one-at-a-time removal of nodes and of pods other than the disagreeing one."""
    pods = [p["metadata"]["name"] for p in scenario.pods]
    current = scenario.model_copy(update={"pods": scenario.pods[: pods.index(outcome.pod) + 1]})
    for kind in ("pods", "nodes"):
        index = 0
        while index < len(getattr(current, kind)):
            item = getattr(current, kind)[index]
            if kind == "pods" and item["metadata"]["name"] == outcome.pod or len(getattr(current, kind)) == 1:
                index += 1
                continue
            trial = _without(current, kind, index)
            found = _disagrees(player, trial, outcome.pod)
            if found is None:
                index += 1
            else:
                current, outcome = trial, found
    return current, outcome


def run(
    rest: Rest, version: str, seed: int, count: int, progress: Callable[[int, list[Outcome]], None] | None = None
) -> ConformanceReport:
    """Scenarios 0..count-1 of `seed`; every disagreement comes back shrunk."""
    player = Player(rest, version)
    started = time.monotonic()
    pods = agreed = 0
    disagreements = []
    for index in range(count):
        scenario = generate(seed, index, NAMESPACE)
        outcomes = player.play(scenario)
        pods += len(outcomes)
        agreed += sum(outcome.agrees for outcome in outcomes)
        for outcome in outcomes:
            if not outcome.agrees:
                smallest, final = shrink(player, scenario, outcome)
                disagreements.append(Disagreement(scenario=scenario.label, outcome=final, reproducer=smallest))
        if progress:
            progress(index, outcomes)
    return ConformanceReport(
        version=version, seed=seed, scenarios=count, pods=pods, agreed=agreed,
        seconds=round(time.monotonic() - started, 1), disagreements=disagreements,
    )  # fmt: skip
