"""What the live apply tests share: a control plane of their own with the controller manager's disruption and
replicaset controllers (budgets get a status, an evicted ReplicaSet pod a replacement), the kubelet played by a
thread (bound pods start Running and Ready, terminating pods finish at once), a fake mig-manager, and the objects
the tests create and check.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from gpusched.actions.kube import CORDON_TAINT
from gpusched.actions.lease import LEASE_ANNOTATION
from gpusched.conformance.api import Rest, RestError
from gpusched.conformance.build import ensure_built
from gpusched.conformance.cluster import WORKLOAD_CONTROLLERS, RunningCluster, start

NS = "apply"
PODS = f"/api/v1/namespaces/{NS}/pods"
GPU = "nvidia.com/gpu"
IMAGE = "registry.k8s.io/pause:3.10"
CLASSES = {
    "apply-low": (10, "PreemptLowerPriority"),
    "apply-high": (1000, "Never"),
}  # gpusched preempts, not the scheduler


def gpu_node(name: str, gpus: int, labels: dict[str, str] | None = None) -> dict:
    """A node as the GPU Operator labels it: GPU Feature Discovery's product, count and memory."""
    gfd = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": str(gpus),
           "nvidia.com/gpu.memory": "81920", "kubernetes.io/hostname": name}  # fmt: skip
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: str(gpus)}
    return {"metadata": {"name": name, "labels": {**gfd, **(labels or {})}},
            "status": {"capacity": capacity, "allocatable": dict(capacity)}}  # fmt: skip


def pod_spec(gpus: int, priority: str = "apply-low", selector: dict | None = None, scheduler: str | None = None):
    spec: dict = {
        "containers": [{"name": "main", "image": IMAGE, "resources": {"limits": {GPU: str(gpus)}}}],
        "priorityClassName": priority,
        "terminationGracePeriodSeconds": 30,
    }
    if selector:
        spec["nodeSelector"] = selector
    if scheduler:
        spec["schedulerName"] = scheduler
    return spec


def bare_pod(name: str, gpus: int, labels: dict | None = None, **options) -> dict:
    return {"metadata": {"name": name, "namespace": NS, "labels": labels or {}}, "spec": pod_spec(gpus, **options)}


def replica_set(name: str, gpus: int, selector: dict) -> dict:
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": pod_spec(gpus, selector=selector)}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}}  # fmt: skip


class Kubelet(threading.Thread):
    """Bound pods start (Running, Ready, a start time in creation order); terminating pods finish at once."""

    def __init__(self, rest: Rest) -> None:
        super().__init__(daemon=True)
        self.rest, self.stopping = rest, threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.tick()
            except (RestError, OSError):
                pass
            time.sleep(0.05)

    def tick(self) -> None:
        for pod in self.rest.get(PODS)["items"]:
            meta, status = pod["metadata"], pod.get("status") or {}
            path = f"{PODS}/{meta['name']}"
            if meta.get("deletionTimestamp"):
                self.rest.delete(path)
            elif pod["spec"].get("nodeName") and status.get("phase") != "Running":
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                ready = [{"type": "Ready", "status": "True", "lastTransitionTime": now}]
                body = {"status": {"phase": "Running", "startTime": now, "conditions": ready}}
                self.rest.call("PATCH", f"{path}/status", body, "application/merge-patch+json")


@contextlib.contextmanager
def plane() -> Iterator[tuple[RunningCluster, Rest]]:
    """A control plane of its own with the workload controllers, the namespace and priority classes, and the
    kubelet thread."""
    plane = start(ensure_built(), controller_manager=True, controllers=WORKLOAD_CONTROLLERS)
    rest = Rest(plane.kubeconfig)
    kubelet = Kubelet(rest)
    try:
        rest.create("/api/v1/namespaces", {"metadata": {"name": NS}})
        for name, (value, policy) in CLASSES.items():
            rest.create("/apis/scheduling.k8s.io/v1/priorityclasses",
                        {"metadata": {"name": name}, "value": value, "preemptionPolicy": policy})  # fmt: skip
        kubelet.start()
        yield plane, rest
    finally:
        kubelet.stopping.set()
        kubelet.join(timeout=5)
        rest.close()
        plane.stop()


def clear(rest: Rest) -> None:
    """Remove every object of the previous test: ReplicaSets first (they would re-create their pods)."""
    for path in (f"/apis/apps/v1/namespaces/{NS}/replicasets", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"):
        for item in rest.get(path)["items"]:
            rest.delete(f"{path}/{item['metadata']['name']}")
    rest.delete(PODS)
    for node in rest.get("/api/v1/nodes")["items"]:
        rest.delete(f"/api/v1/nodes/{node['metadata']['name']}")
    assert rest.wait(lambda: not rest.get(PODS)["items"])


def running(rest: Rest) -> dict[str, str]:
    """pod -> node of the namespace's live pods."""
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in rest.get(PODS)["items"]
            if not p["metadata"].get("deletionTimestamp")}  # fmt: skip


def bound(rest: Rest, count: int) -> dict[str, str]:
    return rest.wait(lambda: (found := running(rest)) and len(found) == count and all(found.values()) and found)


def unschedulable(rest: Rest, name: str) -> bool:
    conditions = rest.get(f"{PODS}/{name}").get("status", {}).get("conditions") or []
    return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)


@contextlib.contextmanager
def viewer_may(rest: Rest, rules: list[dict]):
    """The kubeconfig's `viewer` user, granted these rules for the block."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    rest.create(f"{rbac}/clusterroles", {"metadata": {"name": "apply-reader"}, "rules": rules})
    rest.create(f"{rbac}/clusterrolebindings", {
        "metadata": {"name": "apply-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "apply-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}],
    })  # fmt: skip
    try:
        yield
    finally:
        rest.delete(f"{rbac}/clusterrolebindings/apply-reader")
        rest.delete(f"{rbac}/clusterroles/apply-reader")


READ = [{"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["*"], "verbs": ["get", "list"]}]  # fmt: skip


PATCH_NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]}


def untouched(rest: Rest, name: str) -> None:
    """No cordon of gpusched's on the node (its taint) and no lease left."""
    node = rest.get(f"/api/v1/nodes/{name}")
    assert not node["spec"].get("unschedulable")
    assert not [t for t in node["spec"].get("taints") or [] if t["key"] == CORDON_TAINT]
    assert LEASE_ANNOTATION not in (node["metadata"].get("annotations") or {})


class MigManager(threading.Thread):
    """The GPU Operator's mig-manager, faked as the real one behaves: it acts on a change of a node's
    nvidia.com/mig.config label (only a change: the real one watches the label's value), sets the state pending,
    reconfigures, and sets `answer` (a config named in `answers` gets that answer instead)."""

    def __init__(self, rest: Rest, answer: str, answers: dict[str, str] | None = None) -> None:
        super().__init__(daemon=True)
        self.rest, self.answer, self.answers = rest, answer, answers or {}
        self.stopping, self.seen, self.last = threading.Event(), [], {}

    def run(self) -> None:
        while not self.stopping.is_set():
            for node in self.rest.get("/api/v1/nodes")["items"]:
                name, labels = node["metadata"]["name"], node["metadata"].get("labels") or {}
                config = labels.get("nvidia.com/mig.config")
                if self.last.setdefault(name, config) == config:
                    continue
                self.last[name] = config
                held = any(t["key"] == CORDON_TAINT for t in node["spec"].get("taints") or [])
                self.seen.append((name, config, held))
                self._state(name, "pending")
                time.sleep(0.3)  # reconfiguring
                self._state(name, self.answers.get(config or "", self.answer))
            time.sleep(0.05)

    def _state(self, node: str, state: str) -> None:
        patch = {"metadata": {"labels": {"nvidia.com/mig.config.state": state}}}
        self.rest.call("PATCH", f"/api/v1/nodes/{node}", patch, "application/merge-patch+json")


def fragment(rest: Rest) -> None:
    """d1 runs a (ReplicaSet, lane-a) and b (ReplicaSet, lane-b), 1 GPU each; d2 and d3 are full but one GPU each.
    Room for 4 GPUs: empty d1, a to d2 (its only other lane-a node), b to d3 (lane-b)."""
    rest.create("/api/v1/nodes", gpu_node("d1", 4, {"lane-a": "yes", "lane-b": "yes"}))
    for name in ("a", "b"):
        rest.create(f"/apis/apps/v1/namespaces/{NS}/replicasets", replica_set(name, 1, {f"lane-{name}": "yes"}))
    bound(rest, 2)
    rest.create("/api/v1/nodes", gpu_node("d2", 4, {"lane-a": "yes"}))
    rest.create("/api/v1/nodes", gpu_node("d3", 4, {"lane-b": "yes"}))
    rest.create(PODS, bare_pod("c", 3, selector={"kubernetes.io/hostname": "d2"}))
    rest.create(PODS, bare_pod("e", 3, selector={"kubernetes.io/hostname": "d3"}))
    bound(rest, 4)


def owners(rest: Rest) -> dict[str, str]:
    """ReplicaSet -> the node its pod runs on."""
    return {p["metadata"]["ownerReferences"][0]["name"]: p["spec"].get("nodeName")
            for p in rest.get(PODS)["items"]
            if p["metadata"].get("ownerReferences") and not p["metadata"].get("deletionTimestamp")}  # fmt: skip
