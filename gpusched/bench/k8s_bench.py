"""Benchmark: `gpusched k8s` on a generated cluster as kubectl prints it: every Filter, then every Score plugin on
the feasible nodes (the pod asks for preferred node and pod anti-affinity and a ScheduleAnyway spread, so that
each scorer has work), from the parsed documents to the top set."""

from __future__ import annotations

import time

from pydantic import BaseModel

from ..planner.scheduler.predict import predict

__all__ = ["K8sBench", "bench_k8s", "generated_documents"]


class K8sBench(BaseModel):
    nodes: int
    pods: int
    feasible_nodes: int
    scored_plugins: list[str]
    top: int
    seconds: float
    cpu_seconds: float  # the process's CPU time: steadier than wall time on a shared machine


def generated_documents(nodes: int, pods: int) -> tuple[dict, dict, dict]:
    """Nodes of 64 cpu, 256Gi and 8 GPUs in 3 zones; `pods` bound round the nodes; the pod to predict."""
    host = "kubernetes.io/hostname"
    node_items = [
        {"kind": "Node", "metadata": {"name": f"n{i:05d}", "labels": {host: f"n{i:05d}", "zone": f"z{i % 3}"}},
         "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
                    "images": [{"names": ["nginx:latest"], "sizeBytes": 300_000_000}] if i % 7 == 0 else []}}
        for i in range(nodes)
    ]  # fmt: skip
    requests = {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"nvidia.com/gpu": "2"}}
    pod_items = [
        {"kind": "Pod", "metadata": {"name": f"x{i}", "namespace": "default", "labels": {"app": "web"}},
         "spec": {"nodeName": f"n{(i * 13) % nodes:05d}",
                  "containers": [{"name": "m", "image": "nginx", "resources": requests}]},
         "status": {"phase": "Running"}}
        for i in range(pods)
    ]  # fmt: skip
    web = {"matchLabels": {"app": "web"}}
    target = {
        "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "m", "image": "nginx", "resources": requests}],
            "affinity": {
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50,
                    "podAffinityTerm": {"topologyKey": host, "labelSelector": web}}]},
            },
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
                                           "labelSelector": web}],
        },
        "status": {"phase": "Pending"},
    }  # fmt: skip
    return {"kind": "List", "items": node_items}, {"kind": "List", "items": pod_items}, target


def bench_k8s(nodes: int, pods: int) -> K8sBench:
    node_doc, pod_doc, target = generated_documents(nodes, pods)
    wall, cpu = time.perf_counter(), time.process_time()
    result = predict(node_doc, pod_doc, target)
    seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
    scores = result.scores
    return K8sBench(
        nodes=nodes,
        pods=pods,
        feasible_nodes=len(result.feasible),
        scored_plugins=[p.plugin for p in scores.plugins] if scores else [],
        top=len(scores.top) if scores else 0,
        seconds=round(seconds, 3),
        cpu_seconds=round(cpu_seconds, 3),
    )
