"""The kubectl plugin: every command on kubectl's cluster when given none, kubectl's -n/--namespace, --context and
--kubeconfig parsed by the commands themselves (tests/conformance/test_apply_live.py runs it against a real API
server)."""

from __future__ import annotations

import pytest

from gpusched.cli.kubectl import context_namespace

KUBECONFIG = """kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts:
- {name: team, context: {cluster: c, user: u, namespace: team-ns}}
- {name: bare, context: {cluster: c, user: u}}
current-context: team
"""


@pytest.fixture
def config(tmp_path, monkeypatch):
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(path))
    return str(path)


@pytest.fixture
def plugin(monkeypatch, capsys):
    """`kubectl gpusched ARGS...` as kubectl runs it: the console script, its arguments unparsed."""
    from gpusched.cli import kubectl_main

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.argv", ["kubectl-gpusched", *args])
        with pytest.raises(SystemExit) as exited:
            kubectl_main()
        seen = capsys.readouterr()
        return exited.value.code, seen.out, seen.err

    return run


@pytest.mark.parametrize("command", ["map", "frag", "advertised", "place", "plan", "gang", "slices"])
def test_a_command_given_no_cluster_reads_kubectls(plugin, config, command):
    """Before: `kubectl gpusched map` was `Missing argument 'cluster'`. Now it reads the current context's cluster:
    here a server that is not there, named in the error."""
    code, _, err = plugin(command)
    assert code == 2 and "127.0.0.1:1" in err and "Missing argument" not in err, err


def test_a_missing_kubeconfig_says_so(plugin, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = plugin("map")
    assert code == 2 and "no kubeconfig here (kubectl's: --kubeconfig, else $KUBECONFIG" in err
    assert "built-in scenario" not in err.split(";")[0]


@pytest.mark.parametrize("command", ["map", "frag", "advertised", "place"])
def test_a_named_cluster_wins_over_the_context(plugin, config, command):
    code, out, _ = plugin(command, "monday")
    assert code in (0, 1) and out


def test_explain_with_a_cluster_file_and_namespace_default_finds_the_pod(plugin, config):
    """Before: `-n default` renamed the scenario's `train-8` to `default/train-8`, which no file names."""
    code, out, err = plugin("explain", "train-8", "--cluster", "monday", "-n", "default")
    assert code == 0 and out.startswith("train-8 fits on dgx-a"), err


def test_preempt_takes_the_pod_then_the_cluster(plugin, config):
    """Before: `kubectl gpusched preempt SCENARIO POD` failed; the pod is the argument, the cluster -f/--cluster."""
    code, out, err = plugin("preempt", "train-8", "-f", "preemption")
    assert code == 0 and out.startswith("train-8: 1 pod x 8 GPUs"), err


def test_gang_namespace_is_the_local_queues(plugin, config):
    """Before: the plugin took gang's --namespace for itself and refused it."""
    code, out, err = plugin("gang", "training", "--emit-kueue", "-", "--namespace", "ml")
    assert "namespace: ml" in out and code in (0, 1), err


def test_a_namespace_on_a_command_without_one_is_refused_by_its_parser(plugin, config):
    code, _, err = plugin("frag", "-n", "ns")
    assert code == 2 and "No such option: -n" in err


def test_a_live_pods_namespace_is_the_contexts_unless_given(config):
    from gpusched.cli.common import namespace_for

    assert namespace_for(None, config, None) == "team-ns"
    assert namespace_for(None, config, "bare") == "default"
    assert namespace_for("ml", config, None) == "ml"
    assert namespace_for(None, None, None) is None  # a file names its pods its own way


@pytest.mark.parametrize(("context", "namespace"), [(None, "team-ns"), ("bare", "default"), ("absent", "default")])
def test_the_context_namespace_is_read_as_kubectl_reads_it(config, context, namespace):
    assert context_namespace(config, context) == namespace


def test_the_context_namespace_of_a_file_that_cannot_be_read_is_default(tmp_path):
    assert context_namespace(str(tmp_path / "missing"), None) == "default"


def test_plugin_mode_ends_with_the_command(plugin, config, gpusched):
    plugin("map")
    assert gpusched("map").exit_code == 2  # no cluster, and no longer kubectl's
