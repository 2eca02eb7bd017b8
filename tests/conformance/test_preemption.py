"""A real preemption: an 8-GPU pod of higher priority evicts lower-priority GPU pods of one node.

n1 (10 GPUs) runs a (4 GPUs, priority 0, started first), b (2 GPUs, priority 100), c (2 GPUs, priority 0) and d
(cpu only); n2 (8 GPUs) runs e (8 GPUs, priority 1000). The preemptor u (8 GPUs, priority 2000) fits nowhere. n1 is
the node whose most important victim matters least; there, with every lower-priority pod gone, b (the most
important) can stay and u still fits, so a and c are the victims; d stays too. gpusched predicts the message, the
node and the victims from the same `kubectl get -o json`; the real scheduler must do the same. The pods keep the
default 30 s grace period, so the victims stay Terminating until the harness, playing the kubelet, deletes them.
Meanwhile x (2 GPUs, priority 0) arrives: n1 has 2 GPUs free, but the scheduler holds 8 for the nominated u.
Then u binds to n1.
"""

from __future__ import annotations

import time

import pytest

from gpusched.conformance import kubelet
from gpusched.conformance.api import Rest, RestError
from gpusched.conformance.sync import await_verdict
from gpusched.planner.scheduler.predict import parse_version, predict

NAMESPACE = "gpu-preempt"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
GPU = "nvidia.com/gpu"
CLASSES = {"preempt-batch": 100, "preempt-high": 1000, "preempt-urgent": 2000}
NODES = {"preempt-n1": 10, "preempt-n2": 8}
RUNNING = (("a", "preempt-n1", 4, None), ("b", "preempt-n1", 2, "preempt-batch"), ("c", "preempt-n1", 2, None),
           ("d", "preempt-n1", 0, None), ("e", "preempt-n2", 8, "preempt-high"))  # fmt: skip


def gpu_pod(
    name: str, gpus: int, priority: str | None = None, node: str | None = None, grace: int | None = None
) -> dict:
    """A pod with one container; cpu only when it asks for no GPU; pinned to a node by its hostname label."""
    resources = {"limits": {GPU: str(gpus)}} if gpus else {"requests": {"cpu": "1"}}
    spec: dict = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": resources}]}
    if priority:
        spec["priorityClassName"] = priority
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def gpu_node(name: str, gpus: int) -> dict:
    status = {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", GPU: str(gpus)}}
    status["allocatable"] = dict(status["capacity"])
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "status": status}


def run(rest: Rest, manifest: dict, second: int) -> None:
    """Create, wait until bound (the scheduler may meet it before the node), and start it as a kubelet would,
    `second` seconds after the epoch."""
    name = manifest["metadata"]["name"]
    rest.create(PODS, manifest)
    assert rest.wait(lambda: rest.get(f"{PODS}/{name}")["spec"].get("nodeName"))
    kubelet.start(rest, NAMESPACE, name, second)


@pytest.fixture(scope="module")
def cluster(control_plane):
    rest = Rest(control_plane.kubeconfig)
    rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    for name, value in CLASSES.items():
        rest.create("/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": name}, "value": value})
    for name, gpus in NODES.items():
        rest.create("/api/v1/nodes", gpu_node(name, gpus))
    try:
        yield rest
    finally:
        rest.delete(PODS)
        for name in NODES:
            rest.delete(f"/api/v1/nodes/{name}")
        for name in CLASSES:
            rest.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
        rest.wait(lambda: not rest.get(PODS)["items"])
        rest.close()


@pytest.fixture(scope="module")
def preempted(cluster, control_plane):
    """The running pods, gpusched's prediction for u (for the release running) from the state before it, and u."""
    rest = cluster
    for second, (name, node, gpus, priority) in enumerate(RUNNING):
        run(rest, gpu_pod(name, gpus, priority, node), second)
    urgent = gpu_pod("u", 8, "preempt-urgent")
    nodes, pods = rest.get("/api/v1/nodes"), rest.get("/api/v1/pods")
    created = rest.create(PODS, urgent)
    prediction = predict(nodes, pods, created, control_plane.info.version)
    pod, node, message = await_verdict(rest, f"{PODS}/u")
    return rest, prediction, pod, node, message


def newest(control_plane) -> bool:
    """1.37 words the PostFilter's outcome; before, a successful preemption adds nothing and a failed one leads
    with DynamicResources' `no new claims to deallocate`."""
    return parse_version(control_plane.info.version)[:2] >= (1, 37)


def test_gpusched_predicts_the_message_node_and_victims(preempted, control_plane):
    _, prediction, pod, node, message = preempted
    assert node is None and message == prediction.message
    found = " preemption: found a potential placement for pod on node preempt-n1, preempting 2 victims"
    assert message == f"0/2 nodes are available: 2 Insufficient {GPU}." + (found if newest(control_plane) else "")
    assert pod["status"]["nominatedNodeName"] == prediction.nomination.node == "preempt-n1"
    assert prediction.nomination.victims == [f"{NAMESPACE}/a", f"{NAMESPACE}/c"]  # a started before c


def test_the_victims_stay_terminating_until_the_kubelet_confirms(preempted):
    rest = preempted[0]
    terminating = rest.wait(
        lambda: (
            sorted(p["metadata"]["name"] for p in rest.get(PODS)["items"] if p["metadata"].get("deletionTimestamp"))
            == ["a", "c"]
            or None
        )
    )
    assert terminating
    time.sleep(1.0)  # no kubelet: the API server keeps them for their 30 s grace period
    pods = {p["metadata"]["name"]: p for p in rest.get(PODS)["items"]}
    assert sorted(pods) == ["a", "b", "c", "d", "e", "u"]
    reasons = [c.get("reason") for c in pods["a"]["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert reasons == ["PreemptionByScheduler"]
    assert not pods["u"]["spec"].get("nodeName")


def test_meanwhile_the_nominated_pod_holds_its_room(preempted, control_plane):
    rest = preempted[0]
    nodes, pods = rest.get("/api/v1/nodes"), rest.get("/api/v1/pods")
    created = rest.create(PODS, gpu_pod("x", 2))
    prediction = predict(nodes, pods, created, control_plane.info.version)
    _, node, message = await_verdict(rest, f"{PODS}/x")
    rest.delete(f"{PODS}/x")
    assert node is None and message == prediction.message
    dra = "" if newest(control_plane) else " no new claims to deallocate,"
    assert message == (
        f"0/2 nodes are available: 2 Insufficient {GPU}.{dra} preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod."
    )
    [n1] = [verdict for verdict in prediction.nodes if verdict.name == "preempt-n1"]
    assert n1.detail == f"preempt-n1 Insufficient {GPU} ({GPU}: requested 2, free 2 of 10, 8 held for nominated pods)"


def test_the_preemptor_binds_where_nominated_once_they_are_gone(preempted):
    rest = preempted[0]
    assert kubelet.evict_until_bound(rest, NAMESPACE, "u") == "preempt-n1"
    assert sorted(p["metadata"]["name"] for p in rest.get(PODS)["items"]) == ["b", "d", "e", "u"]


def test_a_zero_grace_period_needs_no_kubelet(cluster):
    """The scheduler's plain DELETE removes a victim at once when its own grace period is 0."""
    rest = cluster
    for name in ("b", "u"):
        rest.delete(f"{PODS}/{name}")
    run(rest, gpu_pod("f", 8, None, "preempt-n1", grace=0), 10)
    rest.create(PODS, gpu_pod("g", 8, "preempt-batch", "preempt-n1"))
    assert rest.wait(lambda: rest.get(f"{PODS}/g")["spec"].get("nodeName")) == "preempt-n1"
    with pytest.raises(RestError) as gone:
        rest.get(f"{PODS}/f")
    assert gone.value.status == 404
