"""InterPodAffinity's namespaceSelector on the real scheduler: it matches the labels of the Namespace objects, so
gpusched reads them (live, or `k8s --namespaces`) and, when it was not given them, says the prediction may differ."""

from __future__ import annotations

import pytest

from gpusched.conformance.api import Rest
from gpusched.conformance.scenarios import IMAGE
from gpusched.conformance.sync import await_verdict

NODE = "ns-node"
TEAMS = {"ns-team-a": {"team": "a"}, "ns-team-b": {"team": "b"}, "ns-plain": {}}
HOST = "kubernetes.io/hostname"


def _pods(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


def _pod(name: str, namespace: str, labels: dict | None = None, affinity: dict | None = None) -> dict:
    container = {"name": "main", "image": IMAGE, "resources": {"requests": {"cpu": "100m"}}}
    spec = {
        "containers": [container],
        "terminationGracePeriodSeconds": 0,
        **({"affinity": affinity} if affinity else {}),
    }
    metadata = {"name": name, "namespace": namespace, "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _term(team: str) -> dict:
    selector = {"matchLabels": {"app": "db"}}
    return {"labelSelector": selector, "namespaceSelector": {"matchLabels": {"team": team}}, "topologyKey": HOST}


def _required(kind: str, team: str) -> dict:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [_term(team)]}}


# pod -> (affinity, what the real scheduler does): a db pod runs in team a's namespace on the only node
CASES = {
    "avoid-a": (_required("podAntiAffinity", "a"), "pending"),  # team a's db is on the node
    "avoid-b": (_required("podAntiAffinity", "b"), "bound"),  # team b has no db pod
    "near-a": (_required("podAffinity", "a"), "bound"),
    "near-b": (_required("podAffinity", "b"), "pending"),
}


@pytest.fixture(scope="module")
def teams(control_plane):
    """Three labelled namespaces, one node, the db pod in team a's namespace, then each case's pod in ns-plain."""
    rest = Rest(control_plane.kubeconfig)
    allocatable = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    node = {"metadata": {"name": NODE, "labels": {HOST: NODE}}, "status": {"capacity": allocatable,
            "allocatable": allocatable}}  # fmt: skip
    rest.create("/api/v1/nodes", node)
    for name, labels in TEAMS.items():
        rest.create("/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}})
    rest.create(_pods("ns-team-a"), _pod("db", "ns-team-a", {"app": "db"}))
    verdicts = {"db": await_verdict(rest, f"{_pods('ns-team-a')}/db")[1:]}
    for name, (affinity, _) in CASES.items():
        rest.create(_pods("ns-plain"), _pod(name, "ns-plain", affinity=affinity))
        verdicts[name] = await_verdict(rest, f"{_pods('ns-plain')}/{name}")[1:]
    try:
        yield rest, verdicts
    finally:
        for name in TEAMS:
            rest.delete(_pods(name))
        rest.delete(f"/api/v1/nodes/{NODE}")
        for name in TEAMS:
            rest.wait(lambda name=name: not rest.get(_pods(name))["items"])
            rest.delete(f"/api/v1/namespaces/{name}")
        rest.close()


def test_the_real_scheduler_matches_namespace_labels(teams):
    _, verdicts = teams
    assert verdicts["db"] == (NODE, None)
    for name, (_, outcome) in CASES.items():
        node, message = verdicts[name]
        assert (node == NODE) == (outcome == "bound"), (name, message)


@pytest.mark.parametrize("name", list(CASES))
def test_gpusched_reads_the_namespaces_from_the_api_server(teams, control_plane, gpusched, name):
    _, verdicts = teams
    live = gpusched("k8s", "--kubeconfig", control_plane.kubeconfig, f"ns-plain/{name}", "--json")
    report = live.json()
    node, message = verdicts[name]
    if node:
        assert live.exit_code == 0 and node in report["feasible"]
    else:
        assert live.exit_code == 1 and report["message"] == message
    assert report["not_modelled"] == [] and not report["may_differ"]


def test_from_files_without_the_namespaces_it_says_it_may_differ(teams, control_plane, gpusched, write):
    rest, verdicts = teams
    nodes = write("nodes.json", rest.get("/api/v1/nodes"))
    pods = write("pods.json", rest.get("/api/v1/pods"))
    target = write("avoid-a.json", rest.get(f"{_pods('ns-plain')}/avoid-a"))
    files = ("k8s", "--nodes", nodes, "--pods", pods, target, "--k8s-version", control_plane.info.version)
    files = (*files, "--json")
    blind = gpusched(*files).json()
    assert blind["may_differ"] and any("namespace labels" in note for note in blind["not_modelled"])
    namespaces = write("namespaces.json", rest.get("/api/v1/namespaces"))
    told = gpusched(*files, "--namespaces", namespaces)
    assert told.exit_code == 1 and told.json()["message"] == verdicts["avoid-a"][1]
    assert not told.json()["may_differ"]
