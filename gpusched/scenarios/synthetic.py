"""Generated clusters and workloads of any size, seeded so that runs repeat."""

from __future__ import annotations

import random

from ..models.cluster import Cluster
from ..models.workload import Job, Pod

__all__ = ["synthetic_cluster", "synthetic_pods", "synthetic_jobs"]

_SHAPES = (
    # weight, node name prefix, GPU block
    (5, "dgx", {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "islands": [list(range(8))]}),
    (3, "pcie", {"model": "A100-PCIE-80GB", "count": 8, "memory_gib": 80, "islands": [[0, 1], [2, 3], [4, 5], [6, 7]]}),
    (2, "l4", {"model": "L4", "count": 4, "memory_gib": 24, "replicas": 4}),
)


def synthetic_cluster(nodes: int, seed: int = 42, busy: float = 0.0) -> Cluster:
    """NVSwitch 8-GPU nodes, PCIe boxes with NVLink pairs and time-sliced L4 nodes, mixed 5:3:2; each GPU (or
    replica) is busy with probability `busy`, held by a running pod that declared 6 GiB."""
    rng = random.Random(seed)
    weights = [shape[0] for shape in _SHAPES]
    specs = []
    for index in range(nodes):
        _, prefix, gpu = rng.choices(_SHAPES, weights)[0]
        name = f"{prefix}-{index:05d}"
        units = [(g, r) for g in range(gpu["count"]) for r in range(gpu.get("replicas", 1))]
        held = [{"gpu": g, "pod": f"{name}-run-{g}-{r}", "memory_gib": 6.0} for g, r in units if rng.random() < busy]
        specs.append({"name": name, "cpu": 128, "memory": "1Ti", "gpu": gpu | {"busy": held}})
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


def synthetic_jobs(count: int, seed: int = 42) -> list[Job]:
    """Training gangs and single pods: 1-8 GPUs per pod, 1-8 pods per job, NVLink for multi-GPU pods."""
    rng = random.Random(seed)
    jobs = []
    for index in range(count):
        gpus = rng.choice((1, 1, 2, 4, 8))
        pods = rng.choice((1, 1, 1, 2, 4, 8))
        jobs.append(
            Job(
                name=f"job-{index:05d}",
                pods=pods,
                gpus_per_pod=gpus,
                nvlink=gpus > 1,
                cpu=4 * gpus,
                memory=f"{32 * gpus}Gi",
                priority=rng.choice((0, 0, 0, 10, 100)),
                duration=3600,
            )
        )
    return jobs
