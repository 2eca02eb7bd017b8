"""`--apply` under faults, on the real control plane, each outcome checked on the cluster's objects: real signals
sent to a real `gpusched` process after its CP-SAT solve; server errors, garbage and lost connections from a
fault-injecting proxy in front of the real API server (gpusched.conformance.faults); a journal on a real full
filesystem; a gang whose Binding answer is lost; someone else's MIG label; mig-manager's `failed` resumed;
concurrent runs of one journal and of one node; a SIGKILL between a cordon and its journal entry; and a
preemption whose victims' owners re-create them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apply_kit import (
    NS,
    PODS,
    MigManager,
    bare_pod,
    bound,
    clear,
    fragment,
    gpu_node,
    owners,
    plane,
    replica_set,
    running,
    unschedulable,
    untouched,
)

from gpusched.actions.journal import load_journal
from gpusched.actions.kube import CORDON_TAINT
from gpusched.actions.lease import LEASE_ANNOTATION
from gpusched.conformance.faults import FaultProxy, Rule

BUDGETS = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
MIG_CONFIG, MIG_STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"


@pytest.fixture(scope="module")
def cluster():
    with plane() as started:
        yield started


@pytest.fixture(scope="module")
def proxy(cluster):
    plane_, _ = cluster
    with FaultProxy(plane_.info.server, plane_.info.workdir / "ca.crt") as found:
        yield found


@pytest.fixture
def fresh(cluster, proxy, tmp_path, monkeypatch):
    plane_, rest = cluster
    clear(rest)
    proxy.clear()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    yield plane_, rest
    proxy.clear()
    clear(rest)


@pytest.fixture
def fragmented(fresh, proxy, tmp_path):
    """apply_kit.fragment's cluster (defrag --for 4 cordons d1 and moves a and b off it), and a kubeconfig through
    the fault proxy."""
    plane_, rest = fresh
    fragment(rest)
    return plane_, rest, proxy.kubeconfig(plane_.kubeconfig, tmp_path / "faulty")


def block_evictions(rest, apps=("a", "b")) -> None:
    """A budget per ReplicaSet that allows no disruption: the first eviction is retried until --pdb-timeout."""
    for app in apps:
        budget = {"metadata": {"name": f"{app}-budget", "namespace": NS},
                  "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}}  # fmt: skip
        rest.create(BUDGETS, budget)
    for app in apps:
        rest.wait(lambda app=app: rest.get(f"{BUDGETS}/{app}-budget").get("status", {}).get("currentHealthy") == 1)


def allow_evictions(rest, apps=("a", "b")) -> None:
    for app in apps:
        rest.delete(f"{BUDGETS}/{app}-budget")


def ours_on(rest, node: str) -> bool:
    taints = rest.get(f"/api/v1/nodes/{node}")["spec"].get("taints") or []
    return any(t["key"] == CORDON_TAINT for t in taints)


@contextlib.contextmanager
def gpusched_process(*args: object):
    """The real CLI in a process of its own (this worktree's code), its output captured; killed and reaped at the
    end of the block whatever happened."""
    run = subprocess.Popen([sys.executable, "-m", "gpusched", *map(str, args)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=os.environ.copy())  # fmt: skip
    try:
        yield run
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()


def wait_for(probe, timeout: float = 60.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(interval)
    raise TimeoutError(f"nothing after {timeout:g} s")


def journal_says(path: Path, probe):
    """Whether the journal file exists and `probe(journal)` holds (a save may be replacing it just then)."""
    try:
        return path.exists() and probe(load_journal(path))
    except Exception:  # noqa: BLE001 - a half-seen file is retried
        return False


# --- signals: the real signal to the real process, after its CP-SAT solve ---------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_a_signal_cleans_up_and_the_run_resumes(fragmented, gpusched, tmp_path, signum):
    """defrag solves with CP-SAT, cordons d1 and retries the first eviction a budget refuses: the signal lands
    then. The process removes its cordon, journals the run as interrupted and exits 128 + the signal; a resume
    finishes the moves once the budget allows."""
    plane_, rest, _ = fragmented
    block_evictions(rest)
    journal = tmp_path / "j.json"
    with gpusched_process("defrag", "--for", "4", "--kubeconfig", plane_.kubeconfig, "--apply", "--yes",
                          "--journal", journal, "--pdb-timeout", "120") as run:  # fmt: skip
        wait_for(lambda: ours_on(rest, "d1") and journal_says(journal, lambda j: j.steps[1].state == "running"))
        run.send_signal(signum)
        stdout, stderr = run.communicate(timeout=60)
    name = signal.Signals(signum).name
    assert run.returncode == 128 + signum, stdout + stderr
    assert "solver: OPTIMAL" in stdout  # the solve ran before the signal
    assert f"stopped: interrupted by {name}" in stdout and f"resume: gpusched apply --resume {journal} --yes" in stdout
    assert f"error: interrupted by {name}; the cleanup ran" in stderr and "Traceback" not in stderr
    untouched(rest, "d1")  # no cordon and no lease left behind
    assert owners(rest) == {"a": "d1", "b": "d1"}  # nothing evicted
    saved = load_journal(journal)
    assert saved.state == "interrupted" and saved.stopped == f"interrupted by {name}"
    assert [s.state for s in saved.steps] == ["pending", "interrupted", "pending", "pending", "pending", "pending"]

    allow_evictions(rest)
    resumed = gpusched("apply", "--resume", journal, "--yes")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    assert rest.wait(lambda: owners(rest) == {"a": "d2", "b": "d3"})
    untouched(rest, "d1")
    assert load_journal(journal).state == "done"


# --- server errors, garbage and lost connections through the proxy --------------------------------------------


READ_FAULTS = {  # the pod list read before step 2 (the first is the plan's snapshot)
    "503": lambda: Rule("GET", "/api/v1/pods", "status", status=503, skip=1),
    "429": lambda: Rule("GET", "/api/v1/pods", "status", status=429, skip=1),
    "403": lambda: Rule("GET", "/api/v1/pods", "status", status=403, skip=1),
    "not-json": lambda: Rule("GET", "/api/v1/pods", "garbage", skip=1),
    "dropped": lambda: Rule("GET", "/api/v1/pods", "drop", skip=1, times=10),  # urllib3 tries a GET again, thrice
}
WORDS = {"503": "503 injected by the fault proxy: 503", "429": "429 injected by the fault proxy: 429",
         "403": "403 injected by the fault proxy: 403", "not-json": "expected a JSON object, got an answer that is not JSON",
         "dropped": "cannot reach the API server"}  # fmt: skip


@pytest.mark.parametrize("fault", list(READ_FAULTS))
def test_a_failed_read_before_a_step_stops_the_run_the_same_way(fragmented, proxy, gpusched, tmp_path, fault):
    """Whatever the failure, the same stop: the cordon undone, `stopped:`, `resume:`, exit 1; the resume finishes."""
    plane_, rest, faulty = fragmented
    rule = READ_FAULTS[fault]()
    proxy.add(rule)
    journal = tmp_path / "j.json"
    result = gpusched("defrag", "--for", "4", "--kubeconfig", faulty, "--apply", "--yes", "--journal", journal)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert rule.fired >= 1
    assert f"stopped: before step 2: {proxy.url}: GET /api/v1/pods: {WORDS[fault]}" in result.stdout
    assert f"resume: gpusched apply --resume {journal} --yes" in result.stdout and result.stderr == ""
    untouched(rest, "d1")
    assert owners(rest) == {"a": "d1", "b": "d1"}
    assert load_journal(journal).state == "stopped"
    proxy.clear()
    resumed = gpusched("apply", "--resume", journal, "--yes")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    assert rest.wait(lambda: owners(rest) == {"a": "d2", "b": "d3"})
    untouched(rest, "d1")


def test_a_503_while_planning_is_one_line_and_changes_nothing(fragmented, proxy, gpusched, tmp_path):
    plane_, rest, faulty = fragmented
    proxy.add(Rule("GET", "/api/v1/pods", "status", status=503))
    result = gpusched("defrag", "--for", "4", "--kubeconfig", faulty, "--apply", "--yes", "--journal", tmp_path / "j")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr == f"error: {proxy.url}: GET /api/v1/pods: 503 injected by the fault proxy: 503\n"
    assert not (tmp_path / "j").exists()
    untouched(rest, "d1")
    assert owners(rest) == {"a": "d1", "b": "d1"}


def test_a_failed_write_stops_the_run_and_cleans_up(fragmented, proxy, gpusched, tmp_path):
    """The first eviction is answered 503 (the server did not act on it): the cordon is undone, exit 1."""
    plane_, rest, faulty = fragmented
    proxy.add(
        Rule(
            "POST", r"/api/v1/namespaces/apply/pods/[^/]+/eviction", "status", status=503, query="fieldManager=gpusched"
        )
    )
    journal = tmp_path / "j.json"
    result = gpusched("defrag", "--for", "4", "--kubeconfig", faulty, "--apply", "--yes", "--journal", journal)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "stopped: step 2 failed: " in result.stdout and "503 injected by the fault proxy" in result.stdout
    untouched(rest, "d1")
    assert owners(rest) == {"a": "d1", "b": "d1"}
    assert [s.state for s in load_journal(journal).steps][:2] == ["pending", "failed"]


# --- a journal on a real full filesystem -----------------------------------------------------------------------


@contextlib.contextmanager
def small_filesystem(folder: Path, size: str = "64k"):
    """A tmpfs of `size` mounted at `folder` (root only); skips where this system does not allow mounting."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.decode().strip() or 'mount failed'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Fill the filesystem until the system says it is full (ENOSPC)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 4096)
    return filler


def test_a_full_disk_stops_the_run_cleans_up_and_says_so(fragmented, gpusched, tmp_path):
    from gpusched.actions.plans import defrag_journal
    from gpusched.actions.run import carry_out, open_cluster
    from gpusched.planner.optimize.defrag import defrag, parse_shape

    plane_, rest, _ = fragmented
    with small_filesystem(tmp_path / "small") as small:
        journal = small / "j.json"
        filler: list[Path] = []

        def disk_fills(number, step):
            if number == 1:  # cordoned; the next save (step 2 running) finds the disk full
                filler.append(fill(small))

        with open_cluster(str(plane_.kubeconfig), None) as kube:
            snapshot = kube.snapshot()
            report = defrag(snapshot.cluster, parse_shape("4"))
            planned = defrag_journal(kube, snapshot, report, (str(plane_.kubeconfig), None, "defrag", "gpusched defrag"),
                                     {})  # fmt: skip
            outcome = carry_out(kube, planned, True, str(journal), disk_fills, snapshot)
        assert outcome.stopped == f"cannot write the journal {journal}: cannot write: No space left on device"
        assert outcome.unsaved == "cannot write: No space left on device"
        untouched(rest, "d1")  # the cleanup ran although no journal could be written
        assert owners(rest) == {"a": "d1", "b": "d1"}
        saved = load_journal(journal)  # the file as it was before the disk filled: the cordon done
        assert [s.state for s in saved.steps][:2] == ["done", "pending"]

        filler[0].unlink()
        resumed = gpusched("apply", "--resume", journal, "--yes")
        assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
        assert rest.wait(lambda: owners(rest) == {"a": "d2", "b": "d3"})
        untouched(rest, "d1")

        fill(small)  # full before a run starts: nothing is changed, exit 2
        again = gpusched("defrag", "--for", "4", "--kubeconfig", plane_.kubeconfig, "--apply", "--yes", "--journal",
                         small / "k.json")  # fmt: skip
    assert again.exit_code in (1, 2), again.stdout + again.stderr  # 1: nothing to do (d1 is empty now)


def test_a_journal_that_cannot_be_written_before_the_first_step_changes_nothing(fragmented, gpusched, tmp_path):
    plane_, rest, _ = fragmented
    with small_filesystem(tmp_path / "small") as small:
        fill(small)
        result = gpusched("defrag", "--for", "4", "--kubeconfig", plane_.kubeconfig, "--apply", "--yes", "--journal",
                          small / "j.json")  # fmt: skip
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "No space left on device; nothing was changed" in result.stderr
    untouched(rest, "d1")
    assert owners(rest) == {"a": "d1", "b": "d1"}


# --- gangs -------------------------------------------------------------------------------------------------------


@pytest.fixture
def gang(fresh, proxy, tmp_path):
    """g1 and g2 (4 GPUs each); train-0 and train-1 (4 GPUs each, one pod group, no owner) for gpusched's profile."""
    plane_, rest = fresh
    for name in ("g1", "g2"):
        rest.create("/api/v1/nodes", gpu_node(name, 4))
    for name in ("train-0", "train-1"):
        rest.create(PODS, bare_pod(name, 4, {"scheduling.x-k8s.io/pod-group": "train"}, scheduler="gpusched"))
    return plane_, rest, proxy.kubeconfig(plane_.kubeconfig, tmp_path / "faulty")


def test_a_lost_binding_answer_rolls_the_whole_gang_back_and_a_resume_binds_no_half(gang, proxy, gpusched, tmp_path):
    """The second Binding reaches the server, its answer is lost: the run rolls the gang back (both pods deleted and
    re-created unbound from their manifests); the resume binds nothing; a re-plan binds the whole gang."""
    plane_, rest, faulty = gang
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in rest.get(PODS)["items"]}
    second = Rule("POST", r"/api/v1/namespaces/apply/pods/train-\d/binding", "lose", skip=3)  # 2 dry runs, 1 bind
    proxy.add(second)
    journal = tmp_path / "j.json"
    result = gpusched("plan", "--kubeconfig", faulty, "--apply", "--rollback", "--yes", "--journal", journal)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert second.fired == 1 and "cannot reach the API server" in result.stdout
    pods = {p["metadata"]["name"]: p for p in rest.get(PODS)["items"]}
    assert {name: pod["spec"].get("nodeName") for name, pod in pods.items()} == {"train-0": None, "train-1": None}
    assert all(pods[name]["metadata"]["uid"] != uids[name] for name in pods)  # both re-created: no half gang
    saved = load_journal(journal)
    assert saved.rolled_back == [f"{NS}/train"] and saved.state == "stopped"

    proxy.clear()
    resumed = gpusched("apply", "--resume", journal, "--yes")
    assert resumed.exit_code == 1, resumed.stdout + resumed.stderr
    assert f"stopped: rolled back, not bound: {NS}/train (all or nothing)" in resumed.stdout
    assert "re-plan: " in resumed.stdout
    assert running(rest) == {"train-0": None, "train-1": None}  # nothing bound alone

    again = gpusched("plan", "--kubeconfig", plane_.kubeconfig, "--apply", "--rollback", "--yes")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert sorted(bound(rest, 2).values()) == ["g1", "g2"]


# --- MIG -----------------------------------------------------------------------------------------------------------


@pytest.fixture
def partitioned(fresh):
    from apply_kit import GPU

    plane_, rest = fresh
    node = gpu_node("m1", 1, {"nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed",
                              "nvidia.com/mig-1g.10gb.count": "7", "nvidia.com/mig-1g.10gb.memory": "9984",
                              MIG_CONFIG: "all-1g.10gb", MIG_STATE: "success"})  # fmt: skip
    for field in ("capacity", "allocatable"):
        node["status"][field].update({GPU: "0", "nvidia.com/mig-1g.10gb": "7"})
    rest.create("/api/v1/nodes", node)
    return plane_, rest


@contextlib.contextmanager
def mig_manager(rest, answer: str, answers: dict[str, str] | None = None):
    manager = MigManager(rest, answer, answers)
    manager.start()
    try:
        yield manager
    finally:
        manager.stopping.set()
        manager.join(timeout=5)


def test_someone_elses_mig_label_while_waiting_is_drift(partitioned, tmp_path):
    """While gpusched waits for mig-manager, another party labels the node with its own config; mig-manager then
    reports success for that one. gpusched does not take it for its own: it stops, says so, offers a re-plan."""
    from gpusched.actions.plans import mig_journal
    from gpusched.actions.run import carry_out, open_cluster
    from gpusched.planner.optimize.mig import plan_mig
    from gpusched.planner.optimize.solver import SolverConfig

    plane_, rest = partitioned

    def someone_relabels(number, step):
        if step.kind == "label":  # before mig-manager answers gpusched's config
            patch = {"metadata": {"labels": {MIG_CONFIG: "all-2g.20gb", MIG_STATE: "success"}}}
            rest.call("PATCH", "/api/v1/nodes/m1", patch, "application/merge-patch+json")

    with open_cluster(str(plane_.kubeconfig), None) as kube:
        snapshot = kube.snapshot()
        plan = plan_mig(snapshot.cluster, {"3g.40gb": 1}, SolverConfig())
        planned = mig_journal(kube, snapshot, plan, (str(plane_.kubeconfig), None, "mig plan", "gpusched mig plan"),
                              {"mig_timeout": 30})  # fmt: skip
        outcome = carry_out(kube, planned, True, str(tmp_path / "j.json"), someone_relabels, snapshot)
    ours = planned.steps[1].labels[MIG_CONFIG]
    assert outcome.drift and not outcome.finished and outcome.replan == "gpusched mig plan"
    assert outcome.stopped == (f"node m1 is now labelled {MIG_CONFIG}=all-2g.20gb by someone else while gpusched "
                               f"waited for {MIG_CONFIG}={ours}: its {MIG_STATE} is not this plan's")  # fmt: skip
    labels = rest.get("/api/v1/nodes/m1")["metadata"]["labels"]
    assert labels[MIG_CONFIG] == "all-2g.20gb"  # someone else's label is left as they set it
    untouched(rest, "m1")


def test_a_failed_mig_repartition_is_retried_on_resume(partitioned, gpusched, tmp_path):
    """mig-manager reports `failed` for gpusched's config; the run stops (uncordoned). The resume labels the node
    back to the config it had (mig-manager acts on a change only), then gpusched's again, which succeeds now."""
    plane_, rest = partitioned
    journal = tmp_path / "j.json"
    args = ("mig", "plan", "--kubeconfig", plane_.kubeconfig, "--demand", "3g.40gb=1", "--apply", "--yes",
            "--journal", journal, "--mig-timeout", "30")  # fmt: skip
    with mig_manager(rest, "failed") as manager:
        failed = gpusched(*args)
    assert failed.exit_code == 1 and "mig-manager reported nvidia.com/mig.config.state=failed on m1" in failed.stdout
    untouched(rest, "m1")
    ours = load_journal(journal).steps[1].labels[MIG_CONFIG]
    with mig_manager(rest, "success") as manager:
        resumed = gpusched("apply", "--resume", journal, "--yes")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    assert f"done (success (retried: back to {MIG_CONFIG}=all-1g.10gb first, which reported success))" in resumed.stdout
    assert manager.seen == [("m1", "all-1g.10gb", True), ("m1", ours, True)]  # both while cordoned
    labels = rest.get("/api/v1/nodes/m1")["metadata"]["labels"]
    assert (labels[MIG_CONFIG], labels[MIG_STATE]) == (ours, "success")
    untouched(rest, "m1")


# --- runs that would interleave ------------------------------------------------------------------------------------


def test_two_runs_never_interleave(fragmented, gpusched, tmp_path):
    """While one run of a journal waits on a budget: a second resume of the same journal is refused (its lock); a
    copy of the journal resumed elsewhere, and another run on the same nodes, are refused (the nodes' lease); when
    the budget allows, the first finishes, each pod moved once."""
    from gpusched.actions.journal import save_journal

    plane_, rest, _ = fragmented
    block_evictions(rest)
    journal = tmp_path / "j.json"
    with gpusched_process("defrag", "--for", "4", "--kubeconfig", plane_.kubeconfig, "--apply", "--yes",
                          "--journal", journal, "--pdb-timeout", "120") as first:  # fmt: skip
        wait_for(lambda: journal_says(journal, lambda j: j.steps[1].state == "running"))
        node = rest.get("/api/v1/nodes/d1")["metadata"]
        assert LEASE_ANNOTATION in node["annotations"]
        second = gpusched("apply", "--resume", journal, "--yes")
        assert second.exit_code == 2 and f"{journal}: in use by another gpusched run (pid {first.pid})" in second.stderr
        running_journal = load_journal(journal)
        save_journal(running_journal, tmp_path / "copy.json")  # the same run, from another file (another machine)
        copy = gpusched("apply", "--resume", tmp_path / "copy.json", "--yes")
        assert copy.exit_code == 1, copy.stdout + copy.stderr  # refused before its first step; the run touched d1
        assert "node d1 is leased by another process running this journal" in copy.stderr
        save_journal(running_journal.model_copy(update={"run": "another-run"}), tmp_path / "other.json")
        other = gpusched("apply", "--resume", tmp_path / "other.json", "--yes")
        assert f"node d1 is leased by gpusched run {running_journal.run} " in other.stderr
        assert not [t for t in rest.get("/api/v1/nodes/d1")["spec"]["taints"] if t["value"] == "another-run"]
        allow_evictions(rest)
        stdout, stderr = first.communicate(timeout=60)
    assert first.returncode == 0, stdout + stderr
    assert rest.wait(lambda: owners(rest) == {"a": "d2", "b": "d3"})
    replicas = [p for p in rest.get(PODS)["items"] if p["metadata"].get("ownerReferences")]
    assert len(replicas) == 2  # one replacement each: nobody evicted twice
    untouched(rest, "d1")


def test_a_kill_between_the_cordon_and_its_journal_entry_resumes_without_drift(fragmented, proxy, gpusched, tmp_path):
    """The cordon's PATCH reaches the server, the answer is held back, and the process is killed (SIGKILL, no
    cleanup): the node carries this run's taint and lease, the journal says the cordon is running. The resume
    (same host: the dead process's lease is handed over) takes the cordon for its own and finishes."""
    plane_, rest, faulty = fragmented
    hold = Rule("PATCH", "/api/v1/nodes/d1", "hold", seconds=30, query="fieldManager=gpusched", body="taints")
    proxy.add(hold)
    journal = tmp_path / "j.json"
    with gpusched_process("defrag", "--for", "4", "--kubeconfig", faulty, "--apply", "--yes", "--journal",
                          journal) as run:  # fmt: skip
        wait_for(lambda: hold.fired and ours_on(rest, "d1"))
        run.kill()
        run.communicate(timeout=30)
    assert run.returncode == -signal.SIGKILL
    assert ours_on(rest, "d1") and LEASE_ANNOTATION in rest.get("/api/v1/nodes/d1")["metadata"]["annotations"]
    assert load_journal(journal).steps[0].state == "running"
    proxy.clear()
    resumed = gpusched("apply", "--resume", journal, "--yes")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    assert "1. cordon d1 (taint gpusched.io/cordon:NoSchedule, this run's): done (cordoned already (by this run))" in (
        resumed.stdout
    )
    assert rest.wait(lambda: owners(rest) == {"a": "d2", "b": "d3"})
    untouched(rest, "d1")


# --- preemption whose victims come back --------------------------------------------------------------------------


def test_a_preemption_of_replicaset_pods_converges(fresh, gpusched, tmp_path):
    """p1 (4 GPUs) runs two ReplicaSet pods (2 GPUs each); urgent (4 GPUs) waits. The evicted pods are re-created
    at once by their owners, and p1 is the only node they fit: held by the run's taint, p1 goes to urgent; the
    replacements wait. Each ReplicaSet's pod is evicted once."""
    plane_, rest = fresh
    rest.create("/api/v1/nodes", gpu_node("p1", 4))
    for name in ("low-a", "low-b"):
        rest.create(f"/apis/apps/v1/namespaces/{NS}/replicasets", replica_set(name, 2, {}))
    bound(rest, 2)
    first = {p["metadata"]["uid"] for p in rest.get(PODS)["items"]}
    rest.create(PODS, bare_pod("urgent", 4, priority="apply-high"))
    rest.wait(lambda: unschedulable(rest, "urgent"))
    result = gpusched("preempt", f"{NS}/urgent", "--kubeconfig", plane_.kubeconfig, "--apply", "--yes", "--journal",
                      tmp_path / "j.json")  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert running(rest)["urgent"] == "p1"
    replacements = [p for p in rest.get(PODS)["items"] if p["metadata"].get("ownerReferences")]
    assert len(replacements) == 2 and not {p["metadata"]["uid"] for p in replacements} & first
    assert all(not p["spec"].get("nodeName") for p in replacements)  # they wait: the room went to urgent
    untouched(rest, "p1")


def test_a_node_changed_between_read_and_write_is_read_again(fresh):
    """Node writes are made on the version read (merge patch with metadata.resourceVersion): when someone else
    writes in between, the API server refuses with 409 and the change is made again on the node as it is now."""
    from gpusched.actions.run import open_cluster

    plane_, rest = fresh
    rest.create("/api/v1/nodes", gpu_node("n1", 1))
    calls = []

    def change(node: dict) -> dict:
        calls.append(dict(node["metadata"].get("labels") or {}))
        if len(calls) == 1:  # someone else writes after gpusched read the node
            rest.call(
                "PATCH", "/api/v1/nodes/n1", {"metadata": {"labels": {"team": "x"}}}, "application/merge-patch+json"
            )
        return {"metadata": {"labels": {"gpusched-test": "yes"}}}

    with open_cluster(str(plane_.kubeconfig), None) as kube:
        kube.update_node("n1", change)
    assert len(calls) == 2 and "team" not in calls[0] and calls[1]["team"] == "x"
    labels = rest.get("/api/v1/nodes/n1")["metadata"]["labels"]
    assert labels["team"] == "x" and labels["gpusched-test"] == "yes"
