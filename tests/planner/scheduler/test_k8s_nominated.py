"""Pods that preemption nominated to a node hold their room there (RunFilterPluginsWithNominatedPods).

Found by the differential run against kube-scheduler 1.37.2: while a preemptor's victims were still terminating,
a 2-GPU pod arrived; the node had 2 GPUs free, but the scheduler counted the nominated 8-GPU preemptor as if it
ran there, and the pod stayed Pending. gpusched said it fits. A nominated pod counts for pods of no higher
priority than its own, takes a pod slot too, and is never a victim.
"""

from __future__ import annotations

from gpusched.planner.scheduler.predict import predict

GPU = "example.com/gpu"


def node(name: str = "m1", gpus: int = 10, pods: int = 110) -> dict:
    allocatable = {"cpu": "8", "memory": "16Gi", "pods": str(pods), GPU: str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


def pod(name: str, gpus: int, priority: int = 0, node_name: str = "", nominated: str = "") -> dict:
    spec: dict = {
        "containers": [{"name": "m", "image": "x", "resources": {"limits": {GPU: str(gpus)}}}],
        "priority": priority,
    }
    if node_name:
        spec["nodeName"] = node_name
    status = {"nominatedNodeName": nominated} if nominated else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": spec,
        "status": status,
    }


def listed(*items: dict) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def running() -> list[dict]:
    """a and b (4 GPUs each) on m1, terminating or not; u (8 GPUs, priority 2000) nominated to m1."""
    return [pod("a", 4, node_name="m1"), pod("b", 4, node_name="m1"), pod("u", 8, 2000, nominated="m1")]


def test_a_nominated_pod_holds_its_room_against_lower_priorities():
    result = predict(listed(node()), listed(*running()), pod("x", 2), "1.37")
    assert result.feasible == []
    assert result.message == (
        f"0/1 nodes are available: 1 Insufficient {GPU}. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )
    assert result.details == [f"m1 Insufficient {GPU} ({GPU}: requested 2, free 2 of 10, 8 held for nominated pods)"]


def test_a_higher_priority_pod_ignores_it():
    assert predict(listed(node()), listed(*running()), pod("x", 2, 3000), "1.37").feasible == ["m1"]


def test_the_nominated_pod_itself_is_not_held_against_itself():
    assert predict(listed(node()), listed(*running()), running()[2], "1.37").nomination.victims == ["ml/a", "ml/b"]


def test_it_takes_a_pod_slot_and_is_never_a_victim():
    result = predict(listed(node(pods=3)), listed(*running()), pod("x", 0), "1.37")
    assert result.message.startswith("0/1 nodes are available: 1 Too many pods.")
    # equal priority: counted; evicting a and b frees 8 GPUs, but u still holds 8 of 10
    result = predict(listed(node()), listed(*running()), pod("y", 4, 2000), "1.37")
    assert result.nomination is None
    assert result.message.endswith(f"preemption: 0/1 nodes are available: 1 Insufficient {GPU}.")
