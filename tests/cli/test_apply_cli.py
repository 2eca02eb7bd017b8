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
    result = gpusched("apply", "--status", write("j.json", {"version": 2}))
    assert result.exit_code == 2 and "not a gpusched journal" in result.stderr


def test_status_contacts_nothing_and_runs_no_exec_plugin(gpusched, tmp_path):
    """The journal names a kubeconfig whose exec plugin would leave a mark, for a server that is not there:
    `apply --status` reads the file alone, so neither happens."""
    marker = tmp_path / "exec-plugin-ran"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        f"users: [{{name: u, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1, command: sh, "
        f"args: ['-c', 'touch {marker}']}}}}}}]\n"
    )
    steps = [Step(kind="cordon", target="n1", state="pending", result="undone when the run stopped"),
             Step(kind="evict", target="ns/a", node="n1", state="interrupted", started=1.0,
                  error="interrupted by SIGTERM while running: it may have taken effect; a resume checks first"),
             Step(kind="uncordon", target="n1", cleanup=True)]  # fmt: skip
    journal = Journal(run="r", command="defrag --for 4", replan="gpusched defrag --for 4", kubeconfig=str(kubeconfig),
                      server="https://127.0.0.1:9", steps=steps, state="interrupted",
                      stopped="interrupted by SIGTERM")  # fmt: skip
    save_journal(journal, tmp_path / "j.json")
    result = gpusched("apply", "--status", tmp_path / "j.json")
    assert result.exit_code == 1 and not marker.exists()
    assert "2. evict ns/a from n1 (Eviction API: PodDisruptionBudgets apply): INTERRUPTED: interrupted by SIGTERM" in (
        result.stdout
    )
    assert "stopped: interrupted by SIGTERM" in result.stdout
    assert f"resume: gpusched apply --resume {tmp_path / 'j.json'} --yes" in result.stdout
    assert gpusched("apply", "--status", tmp_path / "j.json", "--json").json()["state"] == "interrupted"


def test_the_kubectl_plugin_reads_kubectls_kubeconfig(monkeypatch, tmp_path):
    """The arguments go to the commands as they came; a command given no cluster reads $KUBECONFIG (the whole list,
    merged as kubectl merges it) when one of its files exists, else ~/.kube/config."""
    import gpusched.cli as cli
    from gpusched.cli.common import live

    seen = []
    monkeypatch.setattr(cli, "main", lambda: seen.append((list(cli.sys.argv), live(None), live(None, "monday"))))
    config = tmp_path / "config"
    config.write_text("kind: Config\n")
    listed = f"{tmp_path / 'absent'}:{config}"
    monkeypatch.setenv("KUBECONFIG", listed)
    monkeypatch.setattr(cli.sys, "argv", ["kubectl-gpusched", "explain", "p", "-n", "ns"])
    cli.kubectl_main()
    assert seen == [(["kubectl gpusched", "explain", "p", "-n", "ns"], listed, None)]
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    cli.kubectl_main()
    assert seen[-1][1] == str(tmp_path / ".kube" / "config")
    assert live(None) is None  # only while the plugin runs
