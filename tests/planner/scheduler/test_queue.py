"""`gpusched k8s --queue`: the backlog in PrioritySort's order, each pod bound where the scheduler picks before the
next."""

from __future__ import annotations

from test_k8s import listed

from gpusched.planner.scheduler.queue import replay


def node(name, cpu="8"):
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}  # fmt: skip


def pending(name, cpu, created, priority=None, **spec):
    body = {"containers": [{"name": "m", "image": "x", "resources": {"requests": {"cpu": cpu}}}], **spec}
    if priority is not None:
        body["priority"] = priority
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
            "spec": body, "status": {"phase": "Pending"}}  # fmt: skip


def running(name, cpu, on):
    pod = pending(name, cpu, "2026-01-01T00:00:00Z", nodeName=on)
    pod["status"]["phase"] = "Running"
    return pod


BACKLOG = [
    pending("big", "6", "2026-01-01T00:00:05Z", priority=10),
    pending("early", "3", "2026-01-01T00:00:01Z"),
    pending("late", "8", "2026-01-01T00:00:09Z"),
    pending("other", "1", "2026-01-01T00:00:02Z", schedulerName="someone-else"),
    running("running", "1", "b"),
]


def test_priority_then_creation_each_bound_before_the_next():
    result = replay(listed(node("a"), node("b")), listed(*BACKLOG), (1, 37))
    order = [(step.pod, step.node) for step in result.steps]
    # big (6 cpu) leaves most room on a (8 free against 7); early (3) then fits only on b; late (8) nowhere
    assert order == [("default/big", "a"), ("default/early", "b"), ("default/other", None), ("default/late", None)]
    assert result.steps[2].never_tried and not result.all_bound
    assert result.steps[3].message.startswith("0/2 nodes are available: 2 Insufficient cpu.")


def test_a_tie_is_reported_and_the_replay_goes_on_with_the_first():
    result = replay(listed(node("a"), node("b")), listed(pending("p", "1", "2026-01-01T00:00:01Z"),
                                                         pending("q", "1", "2026-01-01T00:00:02Z")), (1, 37))  # fmt: skip
    assert (result.steps[0].node, result.steps[0].tied) == ("a", ["a", "b"])
    assert (result.steps[1].node, result.steps[1].tied) == ("b", [])  # a now holds p
    assert result.all_bound


def test_k8s_queue_prints_the_replay(gpusched, write):
    run = gpusched("k8s", "--queue", "--nodes", write("nodes.json", listed(node("a"), node("b"))),
                   "--pods", write("pods.json", listed(*BACKLOG)))  # fmt: skip
    assert run.exit_code == 1
    assert run.lines[:2] == ["1. default/big (priority 10) -> a", "2. default/early (priority 0) -> b"]
    assert run.lines[3].startswith("4. default/late (priority 0) pending: 0/2 nodes are available")
    refused = gpusched("k8s", "--queue", "--nodes", write("n.json", listed(node("a"))))
    assert refused.exit_code == 2 and "--queue needs --nodes and --pods" in refused.stderr
