"""Preemption on the real scheduler: a disruption budget turns it to another node, a retried preemptor waits for its
terminating victim, and with more than 100 candidate nodes it samples (the nomination is one gpusched lists).

Budgets: n1 and n2 have one GPU each, running `a` (app=web, priority 0, started last, so the cheapest victim) and `b`
(no labels, priority 0, started first). The budget over app=web allows no disruption (its status written as a
disruption controller would; none runs here). The preemptor `u` (priority 2000) nominates n2 and evicts `b`.
While `b` terminates (30 s grace period), a new node with a free GPU (tainted, so `u` cannot use it) makes the
scheduler retry `u`: it now reads "not eligible due to a terminating pod on the nominated node".
"""

from __future__ import annotations

import pytest

from gpusched.conformance import kubelet
from gpusched.conformance.api import Rest, RestError
from gpusched.conformance.sync import await_verdict
from gpusched.planner.scheduler.plugins.defaultpreemption import ERR_REASON_TERMINATING
from gpusched.planner.scheduler.predict import predict

NAMESPACE = "gpu-preempt-rules"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
PDBS = f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets"
GPU = "nvidia.com/gpu"
URGENT = "rules-urgent"


def gpu_pod(name: str, node: str | None = None, priority: str | None = None, app: str | None = None) -> dict:
    spec: dict = {
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {GPU: "1"}}}]
    }
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if priority:
        spec["priorityClassName"] = priority
    metadata: dict = {"name": name, "namespace": NAMESPACE}
    if app:
        metadata["labels"] = {"app": app}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def gpu_node(name: str, gpus: int = 1) -> dict:
    status = {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110", GPU: str(gpus)}}
    status["allocatable"] = dict(status["capacity"])
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "rules": "yes"}}, "status": status}


def run(rest: Rest, manifest: dict, second: int) -> None:
    name = manifest["metadata"]["name"]
    rest.create(PODS, manifest)
    assert rest.wait(lambda: rest.get(f"{PODS}/{name}")["spec"].get("nodeName"))
    kubelet.start(rest, NAMESPACE, name, second)


def state(rest: Rest) -> tuple[dict, dict, dict]:
    pdbs = rest.get("/apis/policy/v1/poddisruptionbudgets")
    pdbs = {"kind": "List", "items": [{"kind": "PodDisruptionBudget", **item} for item in pdbs["items"]]}
    return rest.get("/api/v1/nodes?labelSelector=rules%3Dyes"), rest.get("/api/v1/pods"), pdbs


@pytest.fixture
def rest(control_plane):
    rest = Rest(control_plane.kubeconfig)
    for path, body in (
        ("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}),
        ("/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": URGENT}, "value": 2000}),
    ):
        try:
            rest.create(path, body)
        except RestError as error:
            if error.status != 409:  # there from the test before
                raise
    try:
        yield rest
    finally:
        rest.delete(PODS)
        rest.delete(PDBS)
        rest.delete("/api/v1/nodes?labelSelector=rules%3Dyes")
        rest.wait(
            lambda: not rest.get(PODS)["items"] and not rest.get("/api/v1/nodes?labelSelector=rules%3Dyes")["items"]
        )
        rest.close()


def test_a_budget_moves_the_preemption_and_a_retry_waits_for_the_terminating_victim(rest, control_plane):
    for name in ("n1", "n2"):
        rest.create("/api/v1/nodes", gpu_node(f"rules-{name}"))
    run(rest, gpu_pod("b", "rules-n2"), 1)
    run(rest, gpu_pod("a", "rules-n1", app="web"), 2)
    rest.create(PDBS, {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
                                                             "minAvailable": 1}})  # fmt: skip
    status = {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}
    rest.call("PATCH", f"{PDBS}/web/status", {"status": status}, "application/merge-patch+json")
    nodes, pods, pdbs = state(rest)
    created = rest.create(PODS, gpu_pod("u", priority=URGENT))
    unguarded = predict(nodes, pods, created, control_plane.info.version)
    prediction = predict(nodes, pods, created, control_plane.info.version, pdbs_doc=pdbs)
    assert unguarded.nomination.node == "rules-n1"  # without the budget, a (started last) would go
    pod, node, message = await_verdict(rest, f"{PODS}/u")
    assert node is None and message == prediction.message
    assert pod["status"]["nominatedNodeName"] == prediction.nomination.node == "rules-n2"
    assert prediction.nomination.victims == [f"{NAMESPACE}/b"]
    rest.wait(lambda: rest.get(f"{PODS}/b")["metadata"].get("deletionTimestamp"))

    tainted = gpu_node("rules-n3")
    tainted["spec"] = {"taints": [{"key": "rules", "value": "x", "effect": "NoSchedule"}]}
    rest.create("/api/v1/nodes", tainted)  # room for u as NodeResourcesFit sees it: the scheduler retries u
    _, node, message = await_verdict(rest, f"{PODS}/u", lambda text: ERR_REASON_TERMINATING not in text)
    nodes, pods, pdbs = state(rest)
    retried = predict(nodes, pods, rest.get(f"{PODS}/u"), control_plane.info.version, pdbs_doc=pdbs)
    assert node is None and message == retried.message
    assert message.endswith(f"preemption: {ERR_REASON_TERMINATING}")
    assert kubelet.evict_until_bound(rest, NAMESPACE, "u") == "rules-n2"


def test_with_more_than_100_candidates_the_nomination_is_one_gpusched_lists(rest, control_plane):
    """120 one-GPU nodes, each running a priority-0 pod started at a distinct second: across every candidate the
    latest started wins, but the scheduler samples 100 from a random start, so any of the 21 latest may."""
    count = 120
    for i in range(count):
        rest.create("/api/v1/nodes", gpu_node(f"rules-m{i:03d}"))
    for i in range(count):
        run(rest, gpu_pod(f"v{i:03d}", f"rules-m{i:03d}"), i)
    nodes, pods, _ = state(rest)
    created = rest.create(PODS, gpu_pod("u", priority=URGENT))
    prediction = predict(nodes, pods, created, control_plane.info.version)
    possible = {n.node: n for n in prediction.nominations}
    assert sorted(possible) == [f"rules-m{i:03d}" for i in range(count - 21, count)]
    pod, node, message = await_verdict(rest, f"{PODS}/u")
    chosen = possible[pod["status"]["nominatedNodeName"]]
    assert node is None and message == chosen.message
    victims = sorted(p["metadata"]["name"] for p in rest.get(PODS)["items"] if p["metadata"].get("deletionTimestamp"))
    assert [f"{NAMESPACE}/{name}" for name in victims] == chosen.victims
