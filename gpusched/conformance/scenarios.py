"""Seeded random scenarios for differential testing: Node and Pod manifests exactly as a user would create them.

Nodes carry GPU extended resources (now and then only in capacity, before the kubelet copies them), cpu, memory,
ephemeral-storage and pod limits, labels, taints and cordons; pods carry requests and limits in several
spellings, init containers and sidecars, pod-level requests, a RuntimeClass overhead, tolerations, nodeSelectors,
required node affinity (including `metadata.name` matchFields) and a priority class that never preempts (preemption that finds victims
would evict pods, which a kubelet-less cluster cannot finish). The same (seed, index) gives the same scenario.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, Field

__all__ = ["IMAGE", "PRIORITY_CLASS", "RUNTIME_CLASS", "Scenario", "generate"]

IMAGE = "registry.k8s.io/pause:3.10"
PRIORITY_CLASS = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "gpusched-high"},
    "value": 1000,
    "preemptionPolicy": "Never",
}
RUNTIME_CLASS = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "gpusched-overhead"},
    "handler": "runc",
    "overhead": {"podFixed": {"cpu": "250m", "memory": "128Mi"}},
}
GPUS = ("example.com/gpu", "nvidia.com/gpu")
MODELS = ("a100", "h100", "l4")
ZONES = ("a", "b")
TAINTS = (
    {"key": "gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "ml", "effect": "NoExecute"},
    {"key": "spot", "effect": "PreferNoSchedule"},
    {"key": "team", "value": "research", "effect": "NoSchedule"},
)
TOLERATIONS = (
    {"key": "gpu", "operator": "Exists"},
    {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    {"key": "gpu", "value": "false", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"},
    {"key": "team", "operator": "Exists", "effect": "NoExecute"},
    {"operator": "Exists"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
CPUS = ("100m", "250m", "500m", "1", "1500m", "2", "3")
MEMORIES = ("64Mi", "256Mi", "1Gi", "1536Mi", "4Gi")


class Scenario(BaseModel):
    seed: int
    index: int
    nodes: list[dict] = Field(description="Node manifests, status included")
    pods: list[dict] = Field(description="Pod manifests, created one at a time in this order")

    @property
    def label(self) -> str:
        return f"s{self.seed}-{self.index}"


def _labels(rng: random.Random, name: str, scenario: str) -> dict[str, str]:
    labels = {"kubernetes.io/hostname": name, "gpusched.io/scenario": scenario}
    if rng.random() < 0.7:
        labels["gpu.model"] = rng.choice(MODELS)
    if rng.random() < 0.5:
        labels["zone"] = rng.choice(ZONES)
    if rng.random() < 0.5:
        labels["gpu.count"] = str(rng.choice((1, 2, 4, 8)))
    return labels


def _node(rng: random.Random, name: str, scenario: str) -> dict:
    allocatable = {
        "cpu": rng.choice(("2", "4", "8", "3500m")),
        "memory": rng.choice(("4Gi", "8Gi", "16Gi", "2000Mi")),
        "pods": str(rng.choice((1, 2, 3, 110, 110, 110))),
    }
    if rng.random() < 0.3:
        allocatable["ephemeral-storage"] = rng.choice(("10Gi", "100Gi"))
    capacity_only = {}  # a device plugin registered, the kubelet has not copied it to allocatable yet
    for gpu, chance in zip(GPUS, (0.85, 0.35), strict=True):
        if rng.random() < chance:
            target = capacity_only if rng.random() < 0.08 else allocatable
            target[gpu] = str(rng.choice((0, 1, 2, 4, 8)))
    spec: dict = {}
    taints = rng.sample(TAINTS, k=rng.choice((0, 0, 0, 0, 0, 1, 1, 2)))
    if taints:
        spec["taints"] = taints
    if rng.random() < 0.1:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": _labels(rng, name, scenario)},
        "spec": spec,
        "status": {"capacity": {**allocatable, **capacity_only}, "allocatable": allocatable},
    }


def _resources(rng: random.Random, gpu_chance: float) -> dict:
    """Requests and limits in the spellings users write: limits only, requests == limits, cpu as 1 or 1000m."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if rng.random() < 0.7:
        requests["cpu"] = rng.choice(CPUS)
    if rng.random() < 0.6:
        requests["memory"] = rng.choice(MEMORIES)
    if rng.random() < 0.1:
        requests["ephemeral-storage"] = rng.choice(("1Gi", "20Gi"))
    if rng.random() < gpu_chance:
        gpu, count = rng.choice(GPUS[:1] * 4 + GPUS[1:]), str(rng.choice((0, 1, 1, 2, 2, 3, 4, 8)))
        limits[gpu] = count
        if rng.random() < 0.5:
            requests[gpu] = count
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return resources


def _containers(rng: random.Random, prefix: str, count: int, gpu_chance: float) -> list[dict]:
    return [
        {"name": f"{prefix}{i}", "image": IMAGE, "resources": _resources(rng, gpu_chance)} for i in range(count)
    ]


def _init_containers(rng: random.Random) -> list[dict]:
    found = _containers(rng, "init", rng.choice((1, 1, 2)), 0.5)
    for container in found:
        if rng.random() < 0.4:
            container["restartPolicy"] = "Always"  # a sidecar: counted with the main containers
    return found


def _affinity(rng: random.Random, names: list[str]) -> dict:
    """Required node affinity: terms ORed, expressions ANDed; sometimes `metadata.name` matchFields."""
    terms = []
    for _ in range(rng.choice((1, 1, 2))):
        if rng.random() < 0.2:
            pinned = rng.choice([*names, "elsewhere"])  # one value only (validation); sometimes no such node
            terms.append({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pinned]}]})
            continue
        expression = rng.choice(
            (
                {"key": "gpu.model", "operator": "In", "values": rng.sample(MODELS, k=rng.choice((1, 2)))},
                {"key": "gpu.model", "operator": "NotIn", "values": [rng.choice(MODELS)]},
                {"key": "zone", "operator": "Exists"},
                {"key": "zone", "operator": "DoesNotExist"},
                {"key": "gpu.count", "operator": "Gt", "values": [str(rng.choice((1, 2, 4)))]},
                {"key": "gpu.count", "operator": "Lt", "values": [str(rng.choice((2, 4, 8)))]},
            )
        )
        terms.append({"matchExpressions": [expression]})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def _pod(rng: random.Random, name: str, namespace: str, names: list[str]) -> dict:
    spec: dict = {"containers": _containers(rng, "main", rng.choice((1, 1, 2)), 0.7), "terminationGracePeriodSeconds": 0}
    if rng.random() < 0.3:
        spec["initContainers"] = _init_containers(rng)
    if rng.random() < 0.45:
        spec["tolerations"] = rng.sample(TOLERATIONS, k=rng.choice((1, 1, 2)))
    if rng.random() < 0.3:
        key = rng.choice(("gpu.model", "zone"))
        spec["nodeSelector"] = {key: rng.choice(MODELS if key == "gpu.model" else ZONES)}
    if rng.random() < 0.2:
        spec["affinity"] = _affinity(rng, names)
    if rng.random() < 0.15:
        spec["priorityClassName"] = PRIORITY_CLASS["metadata"]["name"]
    if rng.random() < 0.1:
        spec["runtimeClassName"] = RUNTIME_CLASS["metadata"]["name"]  # its overhead is added to the requests
    if rng.random() < 0.1:
        _pod_level(rng, spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _pod_level(rng: random.Random, spec: dict) -> None:
    """Pod-level cpu/memory requests; the containers then leave theirs out (the API server wants pod >= sum)."""
    for container in [*spec["containers"], *spec.get("initContainers", [])]:
        requests = container["resources"].get("requests", {})
        for name in ("cpu", "memory"):
            requests.pop(name, None)
        if "requests" in container["resources"] and not requests:
            del container["resources"]["requests"]
    spec["resources"] = {"requests": {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMORIES)}}


def generate(seed: int, index: int, namespace: str) -> Scenario:
    """Scenario `index` of the run seeded `seed`: 1–4 nodes, 1–8 pods; names unique to the scenario."""
    rng = random.Random(f"{seed}:{index}")
    label = f"s{seed}-{index}"
    names = [f"{label}-n{i}" for i in range(rng.randint(1, 4))]
    nodes = [_node(rng, name, label) for name in names]
    pods = [_pod(rng, f"{label}-p{i}", namespace, names) for i in range(rng.randint(1, 8))]
    return Scenario(seed=seed, index=index, nodes=nodes, pods=pods)
