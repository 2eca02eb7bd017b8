"""Load a gpusched scenario into a running control plane (`gpusched cluster load`), to try `--apply` on it.

Nodes get what GPU Feature Discovery and the device plugin would publish (product, count, memory, allocatable
nvidia.com/gpu); each running pod is created bound to its node (spec.nodeName) and marked Running and Ready, as a
kubelet would; the pending pods are created for kube-scheduler. Priorities become PriorityClasses
`gpusched-priority-N` with preemptionPolicy Never, so kube-scheduler never preempts on its own: what is evicted is
what gpusched plans. There is no kubelet, so every pod has terminationGracePeriodSeconds 0: an evicted pod goes at
once instead of staying Terminating.

Not loaded: MIG instances, time-slicing and NVLink islands (a node is loaded as its whole GPUs, and says so).
"""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from ..models.cluster import Cluster, Node
from ..models.workload import GpuNeeds, Pod
from ..scenarios import Scenario
from .api import Rest
from .scenarios import IMAGE

__all__ = ["LoadReport", "load_into"]

NAMESPACE = "default"
GPU = "nvidia.com/gpu"


class LoadReport(BaseModel):
    scenario: str
    nodes: int
    running: int
    pending: int
    notes: list[str] = Field(default_factory=list, description="what the control plane does not get, and why")


def _class(priority: int) -> str:
    return f"gpusched-priority-{priority}".replace("--", "-minus-")


def _node(node: Node, notes: list[str]) -> dict:
    gpu = node.gpu
    labels = {"kubernetes.io/hostname": node.name, **node.labels}
    capacity = {"cpu": str(node.cpu or "64"), "memory": str(node.memory or "512Gi"), "pods": "110"}
    if gpu is not None:
        if gpu.mig or gpu.replicas > 1 or len(gpu.islands) > 1:
            notes.append(f"{node.name}: loaded as {gpu.count} whole GPUs (not loaded: MIG, time-slicing, islands)")
        labels |= {"nvidia.com/gpu.count": str(gpu.count), "nvidia.com/gpu.memory": str(int(gpu.memory_gib * 1024))}
        labels.setdefault("nvidia.com/gpu.product", f"NVIDIA-{gpu.model}")
        capacity[GPU] = str(gpu.count)
    spec: dict = {"taints": [t.model_dump(exclude_none=True) for t in node.taints]} if node.taints else {}
    if node.unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": node.name, "labels": labels}, "spec": spec,
            "status": {"capacity": capacity, "allocatable": dict(capacity)}}  # fmt: skip


def _pod(name: str, gpus: int, needs: GpuNeeds, node: str | None) -> dict:
    spec: dict = {
        "containers": [{"name": "main", "image": IMAGE, "resources": {"limits": {GPU: str(gpus)}}}],
        "priorityClassName": _class(needs.priority),
        "terminationGracePeriodSeconds": 0,
    }
    if needs.node_selector:
        spec["nodeSelector"] = dict(needs.node_selector)
    if needs.tolerations:
        spec["tolerations"] = [t.model_dump(exclude_none=True) for t in needs.tolerations]
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": NAMESPACE, "labels": dict(needs.labels)}, "spec": spec}


def _running(cluster: Cluster) -> list[tuple[str, str, int]]:
    """(pod, node, GPUs) of every pod holding whole GPUs."""
    held: dict[tuple[str, str], int] = {}
    for node in cluster.nodes:
        for busy in node.gpu.busy if node.gpu else []:
            held[(busy.pod, node.name)] = held.get((busy.pod, node.name), 0) + 1
    return [(pod, node, gpus) for (pod, node), gpus in held.items()]


def load_into(rest: Rest, scenario: Scenario) -> LoadReport:
    """Create the scenario's priority classes, nodes, running pods (started) and pending pods, in that order."""
    notes: list[str] = []
    cluster = scenario.cluster
    running = _running(cluster)
    pending: list[Pod] = list(scenario.pods.pods) if scenario.pods else []
    if scenario.jobs and scenario.jobs.jobs:
        notes.append(f"not loaded: {len(scenario.jobs.jobs)} jobs (gangs have no Kubernetes object of their own)")
    priorities = {cluster.running.get(pod, GpuNeeds()).priority for pod, _, _ in running}
    priorities |= {pod.priority for pod in pending}
    for value in sorted(priorities):
        rest.create("/apis/scheduling.k8s.io/v1/priorityclasses",
                    {"metadata": {"name": _class(value)}, "value": value, "preemptionPolicy": "Never"})  # fmt: skip
    for node in cluster.nodes:
        rest.create("/api/v1/nodes", _node(node, notes))
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for name, node_name, gpus in running:
        rest.create(path, _pod(name, gpus, cluster.running.get(name, GpuNeeds()), node_name))
        ready = [{"type": "Ready", "status": "True", "lastTransitionTime": now}]
        rest.call("PATCH", f"{path}/{name}/status", {"status": {"phase": "Running", "startTime": now,
                  "conditions": ready}}, "application/merge-patch+json")  # fmt: skip
    for pod in pending:
        if pod.mig_profile or pod.shared:
            notes.append(f"not loaded: {pod.name} (asks for MIG or a shared GPU)")
            continue
        rest.create(path, _pod(pod.name, pod.gpus, pod, None))
    return LoadReport(scenario=scenario.name, nodes=len(cluster.nodes), running=len(running),
                      pending=len(pending), notes=notes)  # fmt: skip
