"""Benchmark: one 4-GPU matchAttribute claim against a generated cluster where most nodes are fragmented.

Every node has 8 GPUs in two NVLink islands of four. On a fragmented node two GPUs of each island are busy: four
GPUs are free, so a count alone says the claim fits, but no island has four. One node in `every` keeps an island
free. The time covers what kube-scheduler does for the pod: PreFilter, then Filter on every node (the allocator per
node), then Score - with gpusched's per-node bounds (`prune`) and without them (the real allocator's exhaustive
search). Both must find the same node and devices.
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from ..models.cluster import Cluster
from ..models.dra import DeviceClass, ResourceClaim
from ..planner.dra.inventory import Inventory, NodeRef
from ..planner.dra.plugin import Unit, run_cycle
from ..planner.dra.slices import (
    EXAMPLE,
    cluster_slices,
    driver_classes,
    held_devices,
    island_attribute,
)

__all__ = ["DraBench", "bench_dra", "fragmented_cluster", "island_claim"]


class DraBench(BaseModel):
    nodes: int
    gpus_per_node: int
    fragmented_nodes: int
    prune: bool
    node: str | None
    devices: list[str]
    feasible_nodes: int
    seconds: float
    cpu_seconds: float  # the process's CPU time: steadier than wall time on a shared machine


def fragmented_cluster(nodes: int, every: int = 20) -> Cluster:
    """Node i keeps island 0 whole when i % every == every - 1; every other node has GPUs 0, 1, 4, 5 busy."""
    specs = []
    for index in range(nodes):
        whole = index % every == every - 1
        busy = [] if whole else [{"gpu": g, "pod": f"job-{index}-{g}"} for g in (0, 1, 4, 5)]
        specs.append(
            {
                "name": f"node-{index:04d}",
                "gpu": {
                    "model": "A100-SXM4-80GB",
                    "count": 8,
                    "memory_gib": 80,
                    "islands": [[0, 1, 2, 3], [4, 5, 6, 7]],
                    "busy": busy,
                },
            }
        )
    return Cluster.model_validate({"nodes": specs})


def island_claim(count: int = 4) -> ResourceClaim:
    """`count` GPUs with at least 40Gi each, all in one NVLink island."""
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": "island-4", "namespace": "bench"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpus",
                            "exactly": {
                                "deviceClassName": EXAMPLE,
                                "count": count,
                                "selectors": [
                                    {
                                        "cel": {
                                            "expression": f'device.capacity["{EXAMPLE}"].memory.compareTo(quantity("40Gi")) >= 0'
                                        }
                                    }
                                ],
                            },
                        }
                    ],
                    "constraints": [{"requests": ["gpus"], "matchAttribute": island_attribute(EXAMPLE)}],
                }
            },
        }
    )


def bench_dra(nodes: int = 1000, every: int = 20, prune: bool = True) -> DraBench:
    cluster = fragmented_cluster(nodes, every)
    classes: dict[str, DeviceClass] = {c.metadata.name: c for c in driver_classes(EXAMPLE)}
    inventory = Inventory(cluster_slices(cluster), classes, held_devices(cluster))
    refs = [NodeRef(node.name, dict(node.labels)) for node in cluster.nodes]
    began, cpu = time.perf_counter(), time.process_time()
    cycle = run_cycle(inventory, refs, Unit(None, [island_claim()]), prune)
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    best = cycle.best()
    devices = [f"{r.pool}/{r.device}" for r in cycle.allocations[best][0].devices.results] if best else []
    return DraBench(
        nodes=nodes,
        gpus_per_node=8,
        fragmented_nodes=nodes - nodes // every,
        prune=prune,
        node=best,
        devices=devices,
        feasible_nodes=len(cycle.feasible),
        seconds=round(seconds, 3),
        cpu_seconds=round(cpu, 3),
    )
