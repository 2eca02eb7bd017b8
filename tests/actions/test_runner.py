"""The journal and the step logic without a cluster: a fake API server holding nodes and pods in memory, a clock
that moves only when the runner sleeps. tests/conformance/test_apply_live.py and test_apply_faults_live.py run the
same on the real one."""

from __future__ import annotations

import copy
import json
import os
import signal

import pytest

from gpusched.actions.journal import Journal, Step, default_path, load_journal, locked, save_journal, state_dir
from gpusched.actions.kube import CORDON_TAINT, Refused, Snapshot, Unreachable
from gpusched.actions.lease import LEASE_ANNOTATION, Busy, Leases
from gpusched.actions.plans import defrag_journal
from gpusched.actions.runner import RunInterrupted, Settings, execute, preflight
from gpusched.errors import ClusterError, InputError
from gpusched.models.cluster import Cluster, Node
from gpusched.models.scheduling import Taint
from gpusched.models.workload import PodList
from gpusched.planner.optimize.defrag.report import DefragReport, Move, ShapeInfo
from gpusched.planner.optimize.defrag.report import Step as DefragStep
from gpusched.scenarios.importer import Imported

BUDGET = "The disruption budget web-pdb needs 2 healthy pods and has 2 currently"
SERVER = "https://fake"


class FakeKube:
    """Nodes and pods in memory, with resource versions; evictions refused (429) while `budget_blocks`, or forbidden
    (403); `fail` maps a method name to the error its next calls raise."""

    server = SERVER

    def __init__(self, pods: dict[str, str | None], owners: dict[str, str] | None = None) -> None:
        names = {node for node in pods.values() if node}
        self.nodes = {node: {"metadata": {"name": node, "annotations": {}, "labels": {}, "resourceVersion": "1"},
                             "spec": {}} for node in names}  # fmt: skip
        self.items = {key: self._pod(key, node, (owners or {}).get(key)) for key, node in pods.items()}
        self.budget_blocks, self.forbidden, self.calls = False, False, []
        self.fail: dict[str, list[Exception]] = {}

    @staticmethod
    def _pod(key: str, node: str | None, owner: str | None = None) -> dict:
        namespace, name = key.split("/")
        refs = [{"controller": True, "uid": owner, "name": owner}] if owner else []
        meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "ownerReferences": refs}
        return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": "Running"}}

    def _maybe_fail(self, method: str) -> None:
        if self.fail.get(method):
            raise self.fail[method].pop(0)

    def snapshot(self) -> Snapshot:
        """The nodes as the live loader would read them (no GPUs: these journals place no pod)."""
        self._maybe_fail("snapshot")
        nodes = [Node(name=name, unschedulable=bool(node["spec"].get("unschedulable")),
                      taints=[Taint(**t) for t in node["spec"].get("taints") or []])
                 for name, node in sorted(self.nodes.items())]  # fmt: skip
        imported = Imported(Cluster(nodes=nodes), PodList(pods=[]), None)  # type: ignore[arg-type]
        return Snapshot(copy.deepcopy(list(self.items.values())), copy.deepcopy(list(self.nodes.values())), imported)

    def pods(self) -> list[dict]:
        return copy.deepcopy(list(self.items.values()))

    def pod(self, key: str) -> dict | None:
        return copy.deepcopy(self.items.get(key))

    def node(self, name: str) -> dict | None:
        return copy.deepcopy(self.nodes.get(name))

    def update_node(self, name: str, change, dry_run: bool = False) -> dict | None:
        self._maybe_fail("update_node")
        node = self.node(name)
        if node is None:
            return None
        patch = change(node)
        if patch is None:
            return node
        self.calls.append(("patch", name, dry_run))
        if dry_run:
            return node
        stored = self.nodes[name]
        stored["spec"].update(patch.get("spec", {}))
        for field in ("annotations", "labels"):
            for key, value in patch.get("metadata", {}).get(field, {}).items():
                if value is None:
                    stored["metadata"][field].pop(key, None)
                else:
                    stored["metadata"][field][key] = value
        stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1)
        return self.node(name)

    def evict(self, key: str, uid: str | None, dry_run: bool = False) -> None:
        self.calls.append(("evict", key, dry_run))
        self._maybe_fail("evict")
        if self.forbidden:
            raise Refused(
                SERVER, "POST eviction", 403, f'pods "{key}" is forbidden: cannot create resource "pods/eviction"'
            )
        if self.budget_blocks:
            raise Refused(SERVER, "POST eviction", 429, "Cannot evict pod as it would violate the pod's disruption budget.",
                          (BUDGET,))  # fmt: skip
        if key not in self.items:
            raise Refused(SERVER, "POST eviction", 404, "not found")
        if not dry_run:
            del self.items[key]

    def bind(self, key: str, uid: str | None, node: str, dry_run: bool = False) -> None:
        self.calls.append(("bind", key, dry_run))
        self._maybe_fail("bind")
        if not dry_run:
            self.items[key]["spec"]["nodeName"] = node

    def delete(self, key: str, uid: str | None, dry_run: bool = False) -> None:
        self.calls.append(("delete", key, dry_run))
        if not dry_run:
            self.items.pop(key, None)

    def create_pod(self, manifest: dict, dry_run: bool = False) -> dict:
        self.calls.append(("create", manifest["metadata"]["name"], dry_run))
        key = f"{manifest['metadata']['namespace']}/{manifest['metadata']['name']}"
        if key in self.items:
            raise Refused(SERVER, "POST pods", 409, "already exists")
        if not dry_run:
            self.items[key] = {**copy.deepcopy(manifest), "metadata": {**manifest["metadata"], "uid": "uid-new"}}
        return manifest


class Clock:
    def __init__(self) -> None:
        self.now, self.pauses = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def settings(clock: Clock, pdb_timeout: float = 60.0) -> Settings:
    return Settings(pdb_timeout=pdb_timeout, wait_timeout=5.0, sleep=clock.sleep, clock=lambda: clock.now)


def journal(steps: list[Step], watch: dict | None = None, **more) -> Journal:
    return Journal(run="r1", command="preempt x", replan="gpusched preempt x", kubeconfig="k", server=SERVER,
                   steps=steps, watch=watch or {}, **more)  # fmt: skip


def evictions(kube: FakeKube) -> list[str]:
    return [key for kind, key, dry in kube.calls if kind == "evict" and not dry]


def ours(kube: FakeKube, node: str) -> bool:
    """The node carries run r1's cordon taint."""
    return any(t == {"key": CORDON_TAINT, "value": "r1", "effect": "NoSchedule"}
               for t in kube.nodes[node]["spec"].get("taints") or [])  # fmt: skip


def quiet(number, step):
    return None


CORDONED = [Step(kind="cordon", target="n1"), Step(kind="evict", target="ns/a", node="n1", uid="uid-a"),
            Step(kind="evict", target="ns/b", node="n1", uid="uid-b"), Step(kind="uncordon", target="n1", cleanup=True)]  # fmt: skip


def cordoned_run() -> tuple[FakeKube, Journal]:
    return FakeKube({"ns/a": "n1", "ns/b": "n1"}), journal(copy.deepcopy(CORDONED), {"n1": ["ns/a", "ns/b"]})


# --- the journal ---------------------------------------------------------------------------------------------------


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
    (tmp_path / "j.json").write_text('{"version": 2, "steps": "no"}')
    with pytest.raises(InputError, match="not a gpusched journal"):
        load_journal(tmp_path / "j.json")
    (tmp_path / "old.json").write_text('{"version": 1, "steps": []}')
    with pytest.raises(InputError, match="a journal of version 1, written by another gpusched release"):
        load_journal(tmp_path / "old.json")


def test_a_journal_is_run_by_one_process_at_a_time(tmp_path):
    with locked(tmp_path / "j.json"):
        with pytest.raises(InputError, match=rf"in use by another gpusched run \(pid {os.getpid()}\)"):
            with locked(tmp_path / "j.json"):
                pass  # pragma: no cover - refused
    with locked(tmp_path / "j.json"):  # released with the block
        pass


# --- steps ---------------------------------------------------------------------------------------------------------


def test_done_steps_are_never_done_twice(tmp_path):
    kube = FakeKube({"ns/a": "n1", "ns/b": "n1"})
    planned = journal([Step(kind="evict", target=key, node="n1", uid=f"uid-{key[3:]}") for key in ("ns/a", "ns/b")],
                      {"n1": ["ns/a", "ns/b"]})  # fmt: skip
    planned.steps[0].state = "done"
    kube.items.pop("ns/a")
    clock = Clock()
    outcome = execute(kube, planned, tmp_path / "j.json", settings(clock), quiet)
    assert outcome.finished and evictions(kube) == ["ns/b"] and outcome.state == "done"
    again = execute(kube, load_journal(tmp_path / "j.json"), tmp_path / "j.json", settings(clock), quiet)
    assert again.finished and evictions(kube) == ["ns/b"]


def test_a_budget_is_retried_with_backoff_then_named(tmp_path):
    kube = FakeKube({"ns/a": "n1"})
    kube.budget_blocks = True
    clock = Clock()
    planned = journal([Step(kind="evict", target="ns/a", node="n1", uid="uid-a")], {"n1": ["ns/a"]})
    outcome = execute(kube, planned, tmp_path / "j.json", settings(clock, pdb_timeout=30), quiet)
    assert clock.pauses == [1.0, 2.0, 4.0, 8.0, 10.0]  # doubling up to 10 s, while the deadline allows
    assert outcome.stopped and BUDGET in outcome.stopped and "for 30 s (6 tries)" in outcome.stopped
    saved = load_journal(tmp_path / "j.json")
    assert saved.steps[0].state == "failed" and saved.state == "stopped" and saved.stopped == outcome.stopped
    assert "ns/a" in kube.items


def test_cleanup_removes_only_its_own_cordon(tmp_path):
    kube = FakeKube({"ns/a": "n1", "ns/b": "n2"})
    kube.nodes["n2"]["spec"]["unschedulable"] = True  # cordoned by someone else before the run
    other = {"key": CORDON_TAINT, "value": "r0", "effect": "NoSchedule"}
    kube.nodes["n1"]["spec"]["taints"] = [{"key": "team", "value": "x", "effect": "NoSchedule"}]
    kube.budget_blocks = True
    steps = [Step(kind="cordon", target="n1"), Step(kind="cordon", target="n2"),
             Step(kind="evict", target="ns/a", node="n1", uid="uid-a"),
             Step(kind="uncordon", target="n1", cleanup=True), Step(kind="uncordon", target="n2", cleanup=True)]  # fmt: skip
    outcome = execute(kube, journal(steps, {"n1": ["ns/a"], "n2": ["ns/b"]}), tmp_path / "j.json",
                      settings(Clock(), pdb_timeout=0), quiet)  # fmt: skip
    assert [s.state for s in outcome.steps] == ["pending", "pending", "failed", "pending", "pending"]  # re-armed
    assert kube.nodes["n1"]["spec"]["taints"] == [{"key": "team", "value": "x", "effect": "NoSchedule"}]
    assert kube.nodes["n2"]["spec"]["unschedulable"] and not kube.nodes["n2"]["spec"]["taints"]  # theirs: kept
    kube.nodes["n1"]["spec"]["taints"].append(other)  # another run's cordon: a run never removes it
    again = journal([Step(kind="uncordon", target="n1", cleanup=True)])
    assert execute(kube, again, tmp_path / "k.json", settings(Clock()), quiet).finished
    assert other in kube.nodes["n1"]["spec"]["taints"]


def test_a_pod_the_plan_did_not_expect_stops_the_run_before_anything(tmp_path):
    kube = FakeKube({"ns/a": "n1", "ns/new": "n1"})
    planned = journal([Step(kind="evict", target="ns/a", node="n1", uid="uid-a")], {"n1": ["ns/a"]})
    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), quiet)
    assert (
        outcome.drift
        and outcome.stopped
        == "the cluster moved on: pod ns/new now runs on n1 (spec.nodeName), which the plan did not expect"
    )
    assert outcome.replan == "gpusched preempt x" and evictions(kube) == []
    (step,) = load_journal(tmp_path / "j.json").steps  # journalled: failed before it started
    assert step.state == "failed" and step.started is None and step.error == f"not started: {outcome.stopped}"


def test_preflight_stops_a_forbidden_run_before_anything_changes():
    kube = FakeKube({"ns/a": "n1"})
    kube.forbidden = True
    steps = [Step(kind="cordon", target="n1"), Step(kind="evict", target="ns/a", node="n1", uid="uid-a")]
    with pytest.raises(ClusterError, match=r"step 2 \(evict ns/a from n1.*forbidden by the server: 403.*nothing") as e:
        preflight(kube, journal(steps))
    assert e.value.exit_code == 2
    assert all(dry for _, _, dry in kube.calls) and not kube.nodes["n1"]["spec"]


def test_the_first_check_is_the_plans_own_snapshot(tmp_path):
    """The plan, its journal and the check before step 1 come from one read: a pod bound after it is seen at the
    next step's read, and counted once."""
    kube, planned = cordoned_run()
    snapshot = kube.snapshot()
    seen = []

    def someone_binds(number, step):
        seen.append(number)
        if number == 1:
            kube.items["ns/new"] = FakeKube._pod("ns/new", "n1")

    calls = []  # the reads of the cluster during the run
    real = kube.snapshot
    kube.snapshot = lambda: calls.append(1) or real()
    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), someone_binds, snapshot)
    assert calls == [1] and seen == [1]  # step 2's read only
    assert outcome.stopped == ("the cluster moved on: pod ns/new now runs on n1 (spec.nodeName), which the plan did "
                               "not expect")  # fmt: skip


def test_a_server_that_does_not_answer_the_dry_run_changes_nothing():
    kube = FakeKube({"ns/a": "n1"})
    kube.fail["evict"] = [Unreachable(SERVER, "POST /api/v1/namespaces/ns/pods/a/eviction", "connection refused")]
    with pytest.raises(ClusterError, match=r"step 1 \(evict ns/a from n1 .*\): connection refused; nothing was") as e:
        preflight(kube, journal([Step(kind="evict", target="ns/a", node="n1", uid="uid-a")]))
    assert e.value.exit_code == 2 and kube.items


# --- one boundary: signals, server errors, a journal that cannot be written ----------------------------------------


@pytest.mark.parametrize("how", ["KeyboardInterrupt", "SIGTERM", "SIGHUP"])
def test_an_interrupt_removes_the_cordon_and_rearms_it_for_the_resume(tmp_path, how):
    kube, planned = cordoned_run()

    def interrupt(number, step):
        if number == 2:
            if how == "KeyboardInterrupt":
                raise KeyboardInterrupt
            os.kill(os.getpid(), getattr(signal, how))  # the real signal; the runner's handler takes it

    with pytest.raises(RunInterrupted) as interrupted:
        execute(kube, planned, tmp_path / "j.json", settings(Clock()), interrupt)
    signum = signal.SIGINT if how == "KeyboardInterrupt" else getattr(signal, how)
    assert interrupted.value.signum == signum and interrupted.value.exit_code == 128 + signum
    assert not ours(kube, "n1")
    saved = load_journal(tmp_path / "j.json")
    assert saved.state == "interrupted" and saved.stopped == f"interrupted by {signal.Signals(signum).name}"
    assert [s.state for s in saved.steps] == ["pending", "done", "pending", "pending"]
    assert interrupted.value.outcome.state == "interrupted" and interrupted.value.outcome.journal == str(
        tmp_path / "j.json"
    )
    outcome = execute(kube, saved, tmp_path / "j.json", settings(Clock()), quiet)
    assert outcome.finished and evictions(kube) == ["ns/a", "ns/b"] and not ours(kube, "n1")


def test_a_step_cut_short_by_a_signal_is_journalled_interrupted(tmp_path):
    kube, planned = cordoned_run()
    clock = Clock()

    def sleep(seconds):  # the budget's pause: the signal arrives while the eviction is being retried
        clock.sleep(seconds)
        os.kill(os.getpid(), signal.SIGTERM)

    kube.budget_blocks = True
    with pytest.raises(RunInterrupted):
        execute(
            kube, planned, tmp_path / "j.json", Settings(wait_timeout=5, sleep=sleep, clock=lambda: clock.now), quiet
        )
    saved = load_journal(tmp_path / "j.json")
    assert [s.state for s in saved.steps] == ["pending", "interrupted", "pending", "pending"]
    assert "interrupted by SIGTERM while running" in (saved.steps[1].error or "") and not ours(kube, "n1")


@pytest.mark.parametrize(
    "error",
    [Refused(SERVER, "GET /api/v1/pods", 503, "Service Unavailable"), Refused(SERVER, "GET /api/v1/pods", 429, "Too many"),
     Refused(SERVER, "GET /api/v1/pods", 403, "forbidden"), Unreachable(SERVER, "GET /api/v1/pods", "connection lost"),
     ClusterError(SERVER, "GET /api/v1/pods", "expected a JSON object, got an answer that is not JSON")],
    ids=["503", "429", "403", "lost", "not-json"],
)  # fmt: skip
def test_a_failed_read_before_a_step_stops_the_run_the_same_way(tmp_path, error):
    kube, planned = cordoned_run()

    def fail_next_read(number, step):
        if number == 1:
            kube.fail["snapshot"] = [error]

    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), fail_next_read)
    assert outcome.stopped == f"before step 2: {error}" and not outcome.drift and not outcome.finished
    assert not ours(kube, "n1") and evictions(kube) == []  # cleaned up, nothing more done
    saved = load_journal(tmp_path / "j.json")
    assert saved.state == "stopped" and [s.state for s in saved.steps] == ["pending", "pending", "pending", "pending"]
    assert execute(kube, saved, tmp_path / "j.json", settings(Clock()), quiet).finished


def test_a_lost_connection_fails_the_step_and_the_journal_resumes_it(tmp_path):
    kube = FakeKube({"ns/a": "n1"})
    kube.fail["evict"] = [
        Unreachable(SERVER, "POST /api/v1/namespaces/ns/pods/a/eviction", "cannot reach the API server")
    ]
    steps = [Step(kind="cordon", target="n1"), Step(kind="evict", target="ns/a", node="n1", uid="uid-a"),
             Step(kind="uncordon", target="n1", cleanup=True)]  # fmt: skip
    outcome = execute(kube, journal(steps, {"n1": ["ns/a"]}), tmp_path / "j.json", settings(Clock()), quiet)
    assert outcome.stopped == (f"step 2 failed: {SERVER}: POST /api/v1/namespaces/ns/pods/a/eviction: cannot reach the "
                               "API server")  # fmt: skip
    assert not ours(kube, "n1") and [s.state for s in outcome.steps] == ["pending", "failed", "pending"]
    resumed = execute(kube, load_journal(tmp_path / "j.json"), tmp_path / "j.json", settings(Clock()), quiet)
    assert resumed.finished and evictions(kube) == ["ns/a", "ns/a"]


def test_a_cleanup_that_fails_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr("gpusched.actions.runner.time.sleep", lambda seconds: None)
    kube, planned = cordoned_run()
    down = Refused(SERVER, "PATCH /api/v1/nodes/n1", 503, "Service Unavailable")

    def server_goes_away(number, step):
        if number == 1:
            kube.fail["snapshot"] = [down]
            kube.fail["update_node"] = [down] * 3  # every try of the uncordon; the lease's release then works

    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), server_goes_away)
    assert ours(kube, "n1")
    assert outcome.cleanup == [f"step 4 (uncordon n1 (remove this run's taint)) failed: {down}"]
    assert load_journal(tmp_path / "j.json").steps[3].state == "failed"


def test_a_journal_that_cannot_be_written_stops_the_run_and_still_cleans_up(tmp_path):
    """A real failure to write: the journal's folder becomes a file mid-run (the system says "Not a directory")."""
    kube, planned = cordoned_run()
    folder = tmp_path / "journals"

    def folder_goes(number, step):
        if number == 1:
            (folder / "j.json").unlink()
            folder.rmdir()
            folder.write_text("not a folder")

    outcome = execute(kube, planned, folder / "j.json", settings(Clock()), folder_goes)
    assert outcome.stopped and outcome.stopped.startswith(f"cannot write the journal {folder / 'j.json'}: ")
    assert outcome.unsaved and not ours(kube, "n1") and evictions(kube) == []


def test_a_done_cordon_whose_taint_is_gone_cordons_again(tmp_path):
    """The journal says the cordon is done (a cleanup removed it, but its journal could not be saved): the resume
    cordons again before it evicts, and removes the taint at the end."""
    kube, planned = cordoned_run()
    planned.steps[0].state, planned.steps[0].started = "done", 1.0
    seen = []
    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), lambda n, s: seen.append(ours(kube, "n1")))
    assert outcome.finished and seen == [True, True, True, False] and not ours(kube, "n1")
    assert outcome.steps[0].result == "cordoned"


def test_a_journal_that_cannot_be_written_at_all_changes_nothing(tmp_path):
    kube, planned = cordoned_run()
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="nothing was changed"):
        execute(kube, planned, tmp_path / "file" / "j.json", settings(Clock()), quiet)
    assert not ours(kube, "n1") and not kube.nodes["n1"]["metadata"]["annotations"]  # no cordon, no lease left


# --- gangs ---------------------------------------------------------------------------------------------------------


def gang_run(bare: bool) -> tuple[FakeKube, Journal]:
    kube = FakeKube({"ns/t0": None, "ns/t1": None, "ns/other": "n9"}, owners=None if bare else {
        "ns/t0": "job", "ns/t1": "job"})  # fmt: skip
    kube.nodes.update({n: {"metadata": {"name": n, "annotations": {}, "labels": {}, "resourceVersion": "1"},
                           "spec": {}} for n in ("g1", "g2")})  # fmt: skip
    manifest = (lambda name: {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
                              "spec": {}}) if bare else (lambda name: None)  # fmt: skip
    steps = [Step(kind="bind", target="ns/t0", uid="uid-t0", node="g1", owner="ns/train"),
             Step(kind="bind", target="ns/t1", uid="uid-t1", node="g2", owner="ns/train"),
             Step(kind="delete", target="ns/t0", uid="uid-t0", owner="ns/train", cleanup=True, manifest=manifest("t0")),
             Step(kind="delete", target="ns/t1", uid="uid-t1", owner="ns/train", cleanup=True, manifest=manifest("t1"))]  # fmt: skip
    return kube, journal(steps, {"g1": [], "g2": []})


@pytest.mark.parametrize("bare", [False, True], ids=["owned", "bare"])
def test_a_lost_binding_answer_rolls_the_whole_gang_back(tmp_path, bare):
    """The second Binding reaches the server, its answer does not: both members are bound by this run, so both are
    rolled back; a bare pod is re-created unbound from its manifest; a resume binds nothing."""
    kube, planned = gang_run(bare)
    real_bind = kube.bind

    def bind_then_lose_the_answer(key, uid, node, dry_run=False):
        real_bind(key, uid, node, dry_run)
        if key == "ns/t1" and not dry_run:
            raise Unreachable(SERVER, "POST binding", "connection lost")

    kube.bind = bind_then_lose_the_answer
    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), quiet)
    assert outcome.stopped and "connection lost" in outcome.stopped
    saved = load_journal(tmp_path / "j.json")
    assert saved.rolled_back == ["ns/train"]
    assert [(s.kind, s.state) for s in saved.steps] == [("bind", "done"), ("bind", "skipped"), ("delete", "done"),
                                                        ("delete", "done")]  # fmt: skip
    assert saved.steps[1].result == "its gang was rolled back" and "connection lost" in (saved.steps[1].error or "")
    if bare:
        assert {k: (p["metadata"]["uid"], p["spec"].get("nodeName")) for k, p in kube.items.items() if "/t" in k} == {
            "ns/t0": ("uid-new", None), "ns/t1": ("uid-new", None)}  # fmt: skip
    else:
        assert "ns/t0" not in kube.items and "ns/t1" not in kube.items  # deleted: the Job re-creates them
    binds = [c for c in kube.calls if c[0] == "bind" and not c[2]]
    again = execute(kube, saved, tmp_path / "j.json", settings(Clock()), quiet)
    assert again.state == "stopped" and again.drift and not again.finished
    assert again.stopped == "rolled back, not bound: ns/train (all or nothing); a re-plan binds them again"
    assert [c for c in kube.calls if c[0] == "bind" and not c[2]] == binds  # a rolled-back gang is never bound again


def test_a_member_someone_else_bound_elsewhere_is_left_alone(tmp_path):
    kube, planned = gang_run(bare=False)

    def someone_binds_t1(number, step):
        if number == 1:
            kube.items["ns/t1"]["spec"]["nodeName"] = "n9"

    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), someone_binds_t1)
    assert outcome.drift and "ns/t1 is bound to n9 already" in (outcome.stopped or "")
    assert "ns/t0" not in kube.items and kube.items["ns/t1"]["spec"]["nodeName"] == "n9"
    assert outcome.steps[3].result == "bound to n9 by someone else: left alone"


def test_a_resume_after_a_kill_mid_gang_completes_the_gang(tmp_path):
    """SIGKILL after the first Binding: no cleanup ran; the journal says bind 1 done, bind 2 running. The resume
    finds the gang still valid and binds the rest."""
    kube, planned = gang_run(bare=True)
    kube.items["ns/t0"]["spec"]["nodeName"] = "g1"
    planned.steps[0].state, planned.steps[0].started = "done", 1.0
    planned.steps[1].state, planned.steps[1].started = "running", 2.0
    planned.watch = {"g1": ["ns/t0"], "g2": []}
    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), quiet)
    assert outcome.finished and kube.items["ns/t1"]["spec"]["nodeName"] == "g2"
    assert [s.state for s in outcome.steps] == ["done", "done", "skipped", "skipped"]


# --- leases ----------------------------------------------------------------------------------------------------------


def test_a_node_leased_by_another_run_stops_a_run_before_anything(tmp_path):
    kube, planned = cordoned_run()
    lease = {"run": "r0", "holder": "elsewhere/1/1", "until": 4e9}
    kube.nodes["n1"]["metadata"]["annotations"][LEASE_ANNOTATION] = json.dumps(lease)
    with pytest.raises(Busy, match="node n1 is leased by gpusched run r0 .elsewhere/1/1. until") as busy:
        execute(kube, planned, tmp_path / "j.json", settings(Clock()), quiet)
    assert busy.value.exit_code == 2 and not ours(kube, "n1") and not (tmp_path / "j.json").exists()


def test_a_lease_runs_out_and_a_dead_holder_of_this_run_hands_it_over(tmp_path):
    from gpusched.actions.lease import holder

    kube, planned = cordoned_run()
    annotations = kube.nodes["n1"]["metadata"]["annotations"]
    annotations[LEASE_ANNOTATION] = json.dumps({"run": "r0", "holder": "elsewhere/1/1", "until": 1.0})  # ran out
    Leases(kube, planned).take()
    assert json.loads(annotations[LEASE_ANNOTATION])["run"] == "r1"
    dead = holder(2**22 + 12345)  # a pid no process has: this host, gone
    annotations[LEASE_ANNOTATION] = json.dumps({"run": "r1", "holder": dead, "until": 4e9})
    outcome = execute(kube, planned, tmp_path / "j.json", settings(Clock()), quiet)
    assert outcome.finished and LEASE_ANNOTATION not in annotations  # taken over, then released
    alive = holder(os.getppid())  # this run's journal, run by a process that is still there
    annotations[LEASE_ANNOTATION] = json.dumps({"run": "r1", "holder": alive, "until": 4e9})
    with pytest.raises(Busy, match="leased by another process running this journal"):
        Leases(kube, planned).take()


# --- defrag's journal ------------------------------------------------------------------------------------------------


def _report(moves: list[Move]) -> DefragReport:
    return DefragReport(
        shape=ShapeInfo(gpus=4, pods=1, island=False, text="1 pod x 4 GPUs"), max_moves=None, feasible=True,
        before=0, moves=moves, steps=[DefragStep(action="move", pod=m.pod, node=m.to_node, gpus=m.to_gpus)
                                      for m in moves],
    )  # fmt: skip


def test_defrag_does_not_move_a_pod_without_an_owner():
    kube = FakeKube({"ns/bare": "n1", "ns/web": "n1"}, owners={"ns/web": "rs-web"})
    moves = [Move(pod=p, gpus=1, from_node="n1", from_gpus=[0], to_node="n2", to_gpus=[0]) for p in ("ns/bare",)]
    planned = defrag_journal(kube, kube.snapshot(), _report(moves), ("k", None, "defrag", "gpusched defrag"), {})
    assert planned.steps == []
    assert planned.notes == ["not moved: ns/bare has no owner (evicted, it would be gone for good)"]


def test_defrag_cordons_the_emptied_node_around_evict_and_replacement():
    kube = FakeKube({"ns/web": "n1", "ns/db": "n3"}, owners={"ns/web": "rs-web"})
    moves = [Move(pod="ns/web", gpus=1, from_node="n1", from_gpus=[0], to_node="n2", to_gpus=[1])]
    planned = defrag_journal(kube, kube.snapshot(), _report(moves), ("k", None, "defrag", "gpusched defrag"), {})
    assert [(s.kind, s.target, s.node, s.cleanup) for s in planned.steps] == [
        ("cordon", "n1", None, False), ("evict", "ns/web", "n1", False), ("replacement", "ns/web", "n2", False),
        ("uncordon", "n1", None, True),
    ]  # fmt: skip
    assert planned.steps[2].owner == "rs-web" and planned.watch == {"n1": ["ns/web"], "n2": []}
    assert planned.nodes() == ["n1", "n2"]
