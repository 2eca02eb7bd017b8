"""The journal and the step logic without a cluster: a fake API server holding nodes and pods in memory, a clock
that moves only when the runner sleeps. tests/conformance/test_apply_live.py runs the same on the real one."""

from __future__ import annotations

import json

import pytest

from gpusched.actions.journal import Journal, Step, default_path, load_journal, save_journal, state_dir
from gpusched.actions.kube import CORDON_ANNOTATION
from gpusched.actions.plans import defrag_journal
from gpusched.actions.runner import Settings, execute, preflight
from gpusched.errors import InputError
from gpusched.models.cluster import Cluster, Node
from gpusched.models.workload import PodList
from gpusched.planner.optimize.defrag.report import DefragReport, Move, ShapeInfo
from gpusched.planner.optimize.defrag.report import Step as DefragStep
from gpusched.scenarios.importer import Imported
from gpusched.scenarios.live import RestError

BUDGET = "The disruption budget web-pdb needs 2 healthy pods and has 2 currently"


class FakeKube:
    """Nodes and pods in memory; evictions refused (429) while `budget_blocks`, or forbidden (403)."""

    server = "https://fake"

    def __init__(self, pods: dict[str, str], owners: dict[str, str] | None = None) -> None:
        self.nodes = {node: {"metadata": {"name": node, "annotations": {}}, "spec": {}} for node in set(pods.values())}
        self.items = {key: self._pod(key, node, (owners or {}).get(key)) for key, node in pods.items()}
        self.budget_blocks, self.forbidden, self.calls = False, False, []

    @staticmethod
    def _pod(key: str, node: str | None, owner: str | None = None) -> dict:
        namespace, name = key.split("/")
        refs = [{"controller": True, "uid": owner, "name": owner}] if owner else []
        meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "ownerReferences": refs}
        return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": "Running"}}

    def pods(self) -> list[dict]:
        return [json.loads(json.dumps(pod)) for pod in self.items.values()]

    def imported(self) -> Imported:
        """The nodes as the live loader would read them (no GPUs: these journals place no pod)."""
        nodes = [Node(name=name, unschedulable=bool(node["spec"].get("unschedulable")))
                 for name, node in sorted(self.nodes.items()) if name]  # fmt: skip
        return Imported(Cluster(nodes=nodes), PodList(pods=[]), None)  # type: ignore[arg-type]

    def pod(self, key: str) -> dict | None:
        return self.items.get(key)

    def node(self, name: str) -> dict | None:
        return self.nodes.get(name)

    def patch_node(self, name: str, patch: dict, dry_run: bool = False) -> dict:
        self.calls.append(("patch", name, dry_run))
        if not dry_run:
            node = self.nodes[name]
            node["spec"].update(patch.get("spec", {}))
            for key, value in patch.get("metadata", {}).get("annotations", {}).items():
                if value is None:
                    node["metadata"]["annotations"].pop(key, None)
                else:
                    node["metadata"]["annotations"][key] = value
        return self.nodes[name]

    def evict(self, key: str, uid: str | None, dry_run: bool = False) -> None:
        self.calls.append(("evict", key, dry_run))
        if self.forbidden:
            raise RestError(403, f'pods "{key}" is forbidden: cannot create resource "pods/eviction"')
        if self.budget_blocks:
            raise RestError(429, "Cannot evict pod as it would violate the pod's disruption budget.", (BUDGET,))
        if key not in self.items:
            raise RestError(404, "not found")
        if not dry_run:
            del self.items[key]

    def bind(self, key: str, uid: str | None, node: str, dry_run: bool = False) -> None:
        self.calls.append(("bind", key, dry_run))
        if not dry_run:
            self.items[key]["spec"]["nodeName"] = node

    def delete(self, key: str, uid: str | None, dry_run: bool = False) -> None:
        self.calls.append(("delete", key, dry_run))
        if not dry_run:
            self.items.pop(key, None)


class Clock:
    def __init__(self) -> None:
        self.now, self.pauses = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def settings(clock: Clock, pdb_timeout: float = 60.0) -> Settings:
    return Settings(pdb_timeout=pdb_timeout, wait_timeout=5.0, sleep=clock.sleep, clock=lambda: clock.now)


def journal(steps: list[Step], watch: dict | None = None) -> Journal:
    return Journal(run="r1", command="preempt x", replan="gpusched preempt x", kubeconfig="k", server="https://fake",
                   steps=steps, watch=watch or {})  # fmt: skip


def evictions(kube: FakeKube) -> list[str]:
    return [key for kind, key, dry in kube.calls if kind == "evict" and not dry]


def test_the_journal_round_trips_and_lives_in_the_state_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "gpusched"
    assert default_path("r1") == tmp_path / "xdg" / "gpusched" / "apply-r1.json"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state_dir() == tmp_path / "home" / ".local" / "state" / "gpusched"
    written = journal([Step(kind="evict", target="ns/a", node="n1", uid="uid-a")])
    save_journal(written, tmp_path / "deep" / "j.json")
    assert load_journal(tmp_path / "deep" / "j.json") == written
    assert [p.name for p in (tmp_path / "deep").iterdir()] == ["j.json"]  # no temporary file left


def test_a_file_that_is_not_a_journal_is_an_input_error(tmp_path):
    (tmp_path / "j.json").write_text('{"version": 1, "steps": "no"}')
    with pytest.raises(InputError, match="not a gpusched journal"):
        load_journal(tmp_path / "j.json")


def test_done_steps_are_never_done_twice(tmp_path):
    kube = FakeKube({"ns/a": "n1", "ns/b": "n1"})
    planned = journal([Step(kind="evict", target=key, node="n1", uid=f"uid-{key[3:]}") for key in ("ns/a", "ns/b")],
                      {"n1": ["ns/a", "ns/b"]})  # fmt: skip
    planned.steps[0].state = "done"
    kube.items.pop("ns/a")
    clock = Clock()
    outcome = execute(kube, planned, tmp_path / "j.json", settings(clock), lambda n, s: None)
    assert outcome.finished and evictions(kube) == ["ns/b"]
    again = execute(kube, load_journal(tmp_path / "j.json"), tmp_path / "j.json", settings(clock), lambda n, s: None)
    assert again.finished and evictions(kube) == ["ns/b"]


def test_a_budget_is_retried_with_backoff_then_named(tmp_path):
    kube = FakeKube({"ns/a": "n1"})
    kube.budget_blocks = True
    clock = Clock()
    planned = journal([Step(kind="evict", target="ns/a", node="n1", uid="uid-a")], {"n1": ["ns/a"]})
    outcome = execute(kube, planned, tmp_path / "j.json", settings(clock, pdb_timeout=30), lambda n, s: None)
    assert clock.pauses == [1.0, 2.0, 4.0, 8.0, 10.0]  # doubling up to 10 s, while the deadline allows
    assert outcome.stopped and BUDGET in outcome.stopped and "for 30 s (6 tries)" in outcome.stopped
    assert load_journal(tmp_path / "j.json").steps[0].state == "failed"
    assert "ns/a" in kube.items


def test_cleanup_runs_after_a_failure_and_uncordons_only_its_own_cordon(tmp_path):
    kube = FakeKube({"ns/a": "n1", "ns/b": "n2"})
    kube.nodes["n2"]["spec"]["unschedulable"] = True  # cordoned by someone else before the run
    kube.budget_blocks = True
    steps = [Step(kind="cordon", target="n1"), Step(kind="cordon", target="n2"),
             Step(kind="evict", target="ns/a", node="n1", uid="uid-a"),
             Step(kind="uncordon", target="n1", cleanup=True), Step(kind="uncordon", target="n2", cleanup=True)]  # fmt: skip
    outcome = execute(kube, journal(steps, {"n1": ["ns/a"], "n2": ["ns/b"]}), tmp_path / "j.json",
                      settings(Clock(), pdb_timeout=0), lambda n, s: None)  # fmt: skip
    assert [s.state for s in outcome.steps] == ["pending", "pending", "failed", "pending", "pending"]  # re-armed
    assert outcome.steps[4].result.startswith("not cordoned by this run: left as it is")
    assert not kube.nodes["n1"]["spec"]["unschedulable"] and CORDON_ANNOTATION not in kube.nodes["n1"]["metadata"]
    assert kube.nodes["n2"]["spec"]["unschedulable"]  # not ours: left cordoned


def test_a_pod_the_plan_did_not_expect_stops_the_run_before_anything(tmp_path):
    kube = FakeKube({"ns/a": "n1", "ns/new": "n1"})
    planned = journal([Step(kind="evict", target="ns/a", node="n1", uid="uid-a")], {"n1": ["ns/a"]})
    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), lambda n, s: None)
    assert (
        outcome.drift
        and outcome.stopped
        == "the cluster moved on: pod ns/new now runs on n1 (spec.nodeName), which the plan did not expect"
    )
    assert outcome.replan == "gpusched preempt x" and evictions(kube) == []
    (step,) = load_journal(tmp_path / "j.json").steps  # journalled: failed before it started
    assert step.state == "failed" and step.started is None and step.error == f"not started: {outcome.stopped}"


def test_ctrl_c_undoes_the_cordon_and_rearms_it_for_the_resume(tmp_path):
    kube = FakeKube({"ns/a": "n1", "ns/b": "n1"})
    steps = [Step(kind="cordon", target="n1"), Step(kind="evict", target="ns/a", node="n1", uid="uid-a"),
             Step(kind="evict", target="ns/b", node="n1", uid="uid-b"),
             Step(kind="uncordon", target="n1", cleanup=True)]  # fmt: skip

    def interrupt(number, step):
        if number == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        execute(kube, journal(steps, {"n1": ["ns/a", "ns/b"]}), tmp_path / "j.json", settings(Clock()), interrupt)
    assert not kube.nodes["n1"]["spec"]["unschedulable"]
    saved = load_journal(tmp_path / "j.json")
    assert [s.state for s in saved.steps] == ["pending", "done", "pending", "pending"]
    outcome = execute(kube, saved, tmp_path / "j.json", settings(Clock()), lambda n, s: None)
    assert outcome.finished and evictions(kube) == ["ns/a", "ns/b"]
    assert not kube.nodes["n1"]["spec"]["unschedulable"]


def test_preflight_stops_a_forbidden_run_before_anything_changes():
    kube = FakeKube({"ns/a": "n1"})
    kube.forbidden = True
    steps = [Step(kind="cordon", target="n1"), Step(kind="evict", target="ns/a", node="n1", uid="uid-a")]
    with pytest.raises(InputError, match=r"step 2 \(evict ns/a from n1.*forbidden by the server: 403.*nothing"):
        preflight(kube, journal(steps))
    assert all(dry for _, _, dry in kube.calls) and not kube.nodes["n1"]["spec"]


def _report(moves: list[Move]) -> DefragReport:
    return DefragReport(
        shape=ShapeInfo(gpus=4, pods=1, island=False, text="1 pod x 4 GPUs"), max_moves=None, feasible=True,
        before=0, moves=moves, steps=[DefragStep(action="move", pod=m.pod, node=m.to_node, gpus=m.to_gpus)
                                      for m in moves],
    )  # fmt: skip


def test_defrag_does_not_move_a_pod_without_an_owner():
    kube = FakeKube({"ns/bare": "n1", "ns/web": "n1"}, owners={"ns/web": "rs-web"})
    moves = [Move(pod=p, gpus=1, from_node="n1", from_gpus=[0], to_node="n2", to_gpus=[0]) for p in ("ns/bare",)]
    planned = defrag_journal(kube, _report(moves), ("k", None, "defrag", "gpusched defrag"), {})
    assert planned.steps == []
    assert planned.notes == ["not moved: ns/bare has no owner (evicted, it would be gone for good)"]


def test_defrag_cordons_the_emptied_node_around_evict_and_replacement():
    kube = FakeKube({"ns/web": "n1", "ns/db": "n3"}, owners={"ns/web": "rs-web"})
    moves = [Move(pod="ns/web", gpus=1, from_node="n1", from_gpus=[0], to_node="n2", to_gpus=[1])]
    planned = defrag_journal(kube, _report(moves), ("k", None, "defrag", "gpusched defrag"), {})
    assert [(s.kind, s.target, s.node, s.cleanup) for s in planned.steps] == [
        ("cordon", "n1", None, False), ("evict", "ns/web", "n1", False), ("replacement", "ns/web", "n2", False),
        ("uncordon", "n1", None, True),
    ]  # fmt: skip
    assert planned.steps[2].owner == "rs-web" and planned.watch == {"n1": ["ns/web"], "n2": []}


def test_a_lost_connection_fails_the_step_and_the_journal_resumes_it(tmp_path):
    from gpusched.actions.kube import Unreachable

    class Flaky(FakeKube):
        lost = True

        def evict(self, key, uid, dry_run=False):
            if self.lost and not dry_run:
                raise Unreachable(self.server, "cannot reach the API server: Connection refused")
            super().evict(key, uid, dry_run)

    kube = Flaky({"ns/a": "n1"})
    steps = [Step(kind="cordon", target="n1"), Step(kind="evict", target="ns/a", node="n1", uid="uid-a"),
             Step(kind="uncordon", target="n1", cleanup=True)]  # fmt: skip
    outcome = execute(kube, journal(steps, {"n1": ["ns/a"]}), tmp_path / "j.json", settings(Clock()), lambda n, s: None)
    assert outcome.stopped == "step 2 failed: https://fake: cannot reach the API server: Connection refused"
    assert not kube.nodes["n1"]["spec"]["unschedulable"]  # the cordon is undone all the same, and re-armed
    assert [s.state for s in outcome.steps] == ["pending", "failed", "pending"]
    kube.lost = False
    saved = load_journal(tmp_path / "j.json")
    resumed = execute(kube, saved, tmp_path / "j.json", settings(Clock()), lambda n, s: None)
    assert resumed.finished and evictions(kube) == ["ns/a"]
