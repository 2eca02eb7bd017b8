"""The kubectl plugin's arguments: kubectl's --kubeconfig, --context and -n/--namespace, as kubectl passes them
to a plugin (tests/conformance/test_apply_live.py runs the plugin against a real API server)."""

from __future__ import annotations

import re

import pytest

from gpusched.cli import load
from gpusched.cli.kubectl import context_namespace, plugin_argv

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


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["explain", "p", "-n", "ns"], ["explain", "ns/p"]),
        (["explain", "-n", "ns", "p"], ["explain", "ns/p"]),
        (["explain", "p", "-nns"], ["explain", "ns/p"]),
        (["explain", "p", "-n=ns"], ["explain", "ns/p"]),
        (["explain", "p", "--namespace", "ns"], ["explain", "ns/p"]),
        (["explain", "p", "--namespace=ns"], ["explain", "ns/p"]),
        (["explain", "other/p", "-n", "ns"], ["explain", "other/p"]),  # a pod named with its namespace keeps it
        (["explain", "p"], ["explain", "team-ns/p"]),  # the current context's namespace
        (["explain", "p", "--context", "bare"], ["explain", "default/p", "--context", "bare"]),
        (["explain", "p", "--context=bare"], ["explain", "default/p", "--context=bare"]),
        (["explain", "--gradient-gb", "2", "p"], ["explain", "--gradient-gb", "2", "team-ns/p"]),  # an option's value
        (["preempt", "--time-limit", "3", "p", "-n", "ns"], ["preempt", "--time-limit", "3", "ns/p"]),
        (["k8s", "--pod", "p", "-n", "ns"], ["k8s", "--pod", "ns/p"]),
        (["k8s", "--pod=p"], ["k8s", "--pod=team-ns/p"]),
        (["defrag", "--for", "4"], ["defrag", "--for", "4"]),  # names no pod
    ],
)
def test_the_namespace_completes_the_pods_name(config, args, expected):
    command = args[0]
    module = {"explain": "explain", "preempt": "repair", "k8s": "core", "defrag": "repair"}[command]
    assert plugin_argv(args, load(module)) == [*expected, "--kubeconfig", config]


def test_an_explicit_kubeconfig_is_the_one_read_for_the_namespace(config, tmp_path):
    other = tmp_path / "other"
    other.write_text(KUBECONFIG.replace("current-context: team", "current-context: bare"))
    assert plugin_argv(["explain", "p", "--kubeconfig", str(other)], load("explain")) == [
        "explain", "default/p", "--kubeconfig", str(other)
    ]  # fmt: skip


def test_a_cluster_file_names_its_pods_its_own_way(config):
    assert plugin_argv(["explain", "p", "--cluster", "monday"], load("explain")) == [
        "explain",
        "p",
        "--cluster",
        "monday",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["defrag", "--for", "4", "-n", "ns"], "only with explain, preempt, k8s (`defrag` names none)"),
        (["explain", "p", "-n"], "-n: expected a namespace"),
        (["explain", "p", "--namespace="], "expected a namespace"),
    ],
)
def test_a_namespace_where_it_means_nothing_is_refused(config, args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        plugin_argv(args, load("repair" if args[0] == "defrag" else "explain"))


def test_the_context_namespace_of_a_file_that_cannot_be_read_is_default(tmp_path):
    assert context_namespace(str(tmp_path / "missing"), None) == "default"


def test_the_plugin_says_what_is_wrong_and_exits_2(config, monkeypatch, capsys):
    import gpusched.cli as cli

    monkeypatch.setattr(cli.sys, "argv", ["kubectl-gpusched", "plan", "-n", "ns"])
    with pytest.raises(SystemExit) as exited:
        cli.kubectl_main()
    assert exited.value.code == 2 and "error: -n/--namespace completes a pod's name" in capsys.readouterr().err
