"""The conformance tooling that needs no cluster: the seeded generator, agreement, the report, errors (exit 2)."""

from __future__ import annotations

from rich.console import Console

from gpusched.cli.conformance import _render_report
from gpusched.conformance.differential import ConformanceReport, Disagreement, PodVerdict, _tally, plugins_at_work
from gpusched.conformance.scenarios import generate
from gpusched.planner.scheduler.predict import K8sPrediction, NodeVerdict, Nomination


def test_the_same_seed_plays_the_same_scenario():
    assert generate(7, 3, "ns") == generate(7, 3, "ns")
    assert generate(7, 3, "ns") != generate(8, 3, "ns")
    scenario = generate(7, 3, "ns")
    assert 1 <= len(scenario.nodes) <= 4 and 1 <= len(scenario.pods) <= 8
    assert all(node["metadata"]["name"].startswith("s7-3-n") for node in scenario.nodes)


def test_a_bound_pod_agrees_when_its_node_is_feasible_and_a_pending_one_on_the_exact_message():
    assert PodVerdict(pod="p", node="a", feasible=["a", "b"]).agrees
    assert not PodVerdict(pod="p", node="c", feasible=["a", "b"]).agrees
    assert PodVerdict(pod="p", message="0/1 nodes are available: x.", predicted="0/1 nodes are available: x.").agrees
    assert not PodVerdict(
        pod="p", message="0/1 nodes are available: x.", predicted="0/1 nodes are available: y."
    ).agrees


def test_a_disagreement_prints_as_a_reproducer(capsys):
    scenario = generate(1, 0, "ns").model_copy(update={"pods": generate(1, 0, "ns").pods[:1]})
    outcome = PodVerdict(
        pod=scenario.pods[0]["metadata"]["name"], message="0/1 nodes are available: x.", feasible=["n"]
    )
    report = ConformanceReport(
        version="v1.37.2", seed=1, scenarios=1, pods=2, agreed=1, seconds=1.0,
        disagreements=[Disagreement(scenario="s1-0", outcome=outcome, reproducer=scenario)],
    )  # fmt: skip
    _render_report(Console(highlight=False, soft_wrap=True), report)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "conformance against kube-scheduler v1.37.2, seed 1: 1 scenarios, 2 pods, 1 agree (50%) in 1 s"
    assert lines[2:5] == [
        f"disagreement in s1-0 on pod {outcome.pod}",
        "  real:     Pending: 0/1 nodes are available: x.",
        "  gpusched: fits n",
    ]
    assert "kind: Node" in lines and "kind: Pod" in lines


def test_k8s_needs_nodes_or_a_kubeconfig_and_not_both(gpusched, write):
    pod = write("pod.json", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    result = gpusched("k8s", pod)
    assert result.exit_code == 2 and "--nodes is required" in result.stderr
    result = gpusched("k8s", "p", "--kubeconfig", write("k.yaml", "{}"), "--nodes", pod)
    assert result.exit_code == 2 and "drop --nodes" in result.stderr


def test_a_kubeconfig_that_is_missing_or_has_no_current_context_exits_2(gpusched, write, tmp_path):
    result = gpusched("k8s", "p", "--kubeconfig", tmp_path / "absent")
    assert result.exit_code == 2 and "cannot read the kubeconfig" in result.stderr
    config = write("k.yaml", {"apiVersion": "v1", "kind": "Config", "contexts": []})
    result = gpusched("k8s", "p", "--kubeconfig", config)
    assert result.exit_code == 2 and "current-context: no current-context; name a context" in result.stderr


def test_plugins_at_work_are_the_rejecting_ones_claims_and_a_nomination():
    prediction = K8sPrediction(
        version="1.37", pod="ns/p", priority=0, requests={}, feasible=["a"],
        nodes=[NodeVerdict(name="a", fits=True), NodeVerdict(name="b", fits=False, plugin="TaintToleration"),
               NodeVerdict(name="c", fits=False, plugin="NodeResourcesFit"),
               NodeVerdict(name="d", fits=False, plugin="TaintToleration")],
    )  # fmt: skip
    assert plugins_at_work(prediction) == ["NodeResourcesFit", "TaintToleration"]
    nominated = prediction.model_copy(update={"nomination": Nomination(node="b", victims=["ns/v"])})
    assert plugins_at_work(nominated) == ["DefaultPreemption", "NodeResourcesFit", "TaintToleration"]


def test_the_report_counts_scenarios_and_pods_per_plugin(capsys):
    report = ConformanceReport(version="v1.35.4", seed=1, scenarios=2, pods=0, agreed=0, seconds=1.0,
                               disagreements=[])  # fmt: skip
    first, second = generate(1, 0, "ns"), generate(1, 1, "ns")
    _tally(report, first, [PodVerdict(pod="a", plugins=["NodeAffinity", "TaintToleration"]),
                           PodVerdict(pod="b", plugins=["TaintToleration"])])  # fmt: skip
    _tally(report, second, [PodVerdict(pod="c", plugins=["TaintToleration"]), PodVerdict(pod="d")])
    assert {name: (c.scenarios, c.pods) for name, c in report.plugins.items()} == {
        "NodeAffinity": (1, 1),
        "TaintToleration": (2, 3),
    }
    assert list(report.plugins) == sorted(report.plugins)
    assert report.model_dump(mode="json")["plugins"]["TaintToleration"] == {"scenarios": 2, "pods": 3}
    _render_report(Console(highlight=False, soft_wrap=True), report)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == (
        "scenarios per plugin at work (rejected a node, claims, preemption): "
        "NodeAffinity 1 (1 pods), TaintToleration 2 (3 pods)"
    )
