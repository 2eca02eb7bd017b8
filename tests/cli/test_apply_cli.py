"""--apply's options and `gpusched apply` without a cluster: misuse is one message and exit 2, before anything is
read from a server; a journal can be reported offline. tests/conformance/test_apply_live.py acts on a real one."""

from __future__ import annotations

import pytest

from gpusched.actions.journal import Journal, Step, save_journal


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["preempt", "train-8", "-f", "preemption", "--yes"], "--yes: only with --apply"),
        (["preempt", "train-8", "-f", "preemption", "--journal", "j"], "--journal: only with --apply"),
        (["preempt", "train-8", "-f", "preemption", "--apply"], "--apply needs --kubeconfig PATH"),
        (["preempt", "train-8", "--kubeconfig", "k", "-f", "monday"], "--kubeconfig is the cluster: drop -f/--cluster"),
        (["defrag", "--for", "8", "--apply"], "--apply needs --kubeconfig PATH"),
        (["defrag", "crowded", "--for", "8", "--kubeconfig", "k"], "--kubeconfig is the cluster: drop CLUSTER"),
        (
            ["defrag", "--for", "8"],
            "give CLUSTER (a file, built-in scenario, kubectl dump folder or kubeconfig), or --kubeconfig",
        ),
        (["plan", "backlog", "--rollback"], "--rollback: only with --apply"),
        (["mig", "plan", "--demand", "1g.10gb=1", "--context", "c"], "--context goes with --kubeconfig"),
        (["apply"], "give exactly one of --resume JOURNAL and --status JOURNAL"),
        (["apply", "--status", "a", "--resume", "b"], "give exactly one of --resume JOURNAL and --status JOURNAL"),
    ],
)
def test_apply_options_belong_together(gpusched, args, message):
    result = gpusched(*args)
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


def test_without_apply_the_commands_plan_as_before(gpusched):
    result = gpusched("preempt", "train-8", "-f", "preemption")
    assert result.exit_code == 0 and "dry run" not in result.stdout and result.lines[1].startswith("evict ")


def test_status_reports_a_journal_offline_with_the_failed_step(gpusched, tmp_path):
    steps = [Step(kind="evict", target="ns/a", node="n1", state="done", result="evicted"),
             Step(kind="evict", target="ns/b", node="n1", state="failed", error="the API server answered 500 boom"),
             Step(kind="scheduled", target="ns/p")]  # fmt: skip
    journal = Journal(run="r", command="preempt ns/p", replan="gpusched preempt ns/p --apply", kubeconfig="k",
                      server="https://nowhere", steps=steps)  # fmt: skip
    save_journal(journal, tmp_path / "j.json")
    result = gpusched("apply", "--status", tmp_path / "j.json")
    assert result.exit_code == 1
    assert result.lines[:3] == [
        "1. evict ns/a from n1 (Eviction API: PodDisruptionBudgets apply): done (evicted)",
        "2. evict ns/b from n1 (Eviction API: PodDisruptionBudgets apply): FAILED: the API server answered 500 boom",
        "3. wait for ns/p to be scheduled: pending",
    ]
    assert "stopped: step 2 failed: the API server answered 500 boom" in result.stdout
    assert gpusched("apply", "--status", tmp_path / "j.json", "--json").json()["steps"][1]["state"] == "failed"


def test_status_of_a_file_that_is_not_a_journal(gpusched, write):
    result = gpusched("apply", "--status", write("j.json", {"version": 1}))
    assert result.exit_code == 2 and "not a gpusched journal" in result.stderr


def test_the_kubectl_plugin_reads_kubectls_kubeconfig(monkeypatch, tmp_path):
    """The arguments go to the commands as they came; a command given no cluster reads the first file of
    $KUBECONFIG that exists, else ~/.kube/config."""
    import gpusched.cli as cli
    from gpusched.cli.common import live

    seen = []
    monkeypatch.setattr(cli, "main", lambda: seen.append((list(cli.sys.argv), live(None), live(None, "monday"))))
    config = tmp_path / "config"
    config.write_text("kind: Config\n")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{config}")
    monkeypatch.setattr(cli.sys, "argv", ["kubectl-gpusched", "explain", "p", "-n", "ns"])
    cli.kubectl_main()
    assert seen == [(["kubectl gpusched", "explain", "p", "-n", "ns"], str(config), None)]
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    cli.kubectl_main()
    assert seen[-1][1] == str(tmp_path / ".kube" / "config")
    assert live(None) is None  # only while the plugin runs
