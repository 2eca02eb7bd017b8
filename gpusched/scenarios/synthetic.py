"""Generated clusters and workloads of any size, seeded so that runs repeat."""

from __future__ import annotations

import random

from ..models.cluster import Cluster
from ..models.workload import Pod

__all__ = ["synthetic_cluster", "synthetic_pods"]

_SHAPES = (
    # weight, node name prefix, GPU block
    (5, "dgx", {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "islands": [list(range(8))]}),
    (3, "pcie", {"model": "A100-PCIE-80GB", "count": 8, "memory_gib": 80, "islands": [[0, 1], [2, 3], [4, 5], [6, 7]]}),
    (2, "l4", {"model": "L4", "count": 4, "memory_gib": 24, "replicas": 4}),
)


def synthetic_cluster(nodes: int, seed: int = 42) -> Cluster:
    """NVSwitch 8-GPU nodes, PCIe boxes with NVLink pairs and time-sliced L4 nodes, mixed 5:3:2."""
    rng = random.Random(seed)
    weights = [shape[0] for shape in _SHAPES]
    specs = []
    for index in range(nodes):
        _, prefix, gpu = rng.choices(_SHAPES, weights)[0]
        specs.append({"name": f"{prefix}-{index:05d}", "cpu": 128, "memory": "1Ti", "gpu": gpu})
    return Cluster.model_validate({"nodes": specs})


def synthetic_pods(count: int, seed: int = 42, sizes: tuple[int, ...] = (1, 1, 1, 1, 2, 4, 8)) -> list[Pod]:
    """Notebooks, inference replicas and training pods: mostly single GPUs, some NVLink jobs, some sharers."""
    rng = random.Random(seed)
    pods = []
    for index in range(count):
        gpus = rng.choice(sizes)
        shared = gpus == 1 and rng.random() < 0.2
        pods.append(
            Pod(
                name=f"pod-{index:05d}",
                gpus=gpus,
                nvlink=gpus > 1,
                shared=shared,
                memory_gib=8.0 if shared else None,
                cpu=4 * gpus,
                memory=f"{32 * gpus}Gi",
            )
        )
    return pods
