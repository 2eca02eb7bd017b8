"""Generated clusters and workloads of any size, seeded so that runs repeat."""

from __future__ import annotations

import random

from ..models.cluster import Cluster
from ..models.workload import Job, Pod

__all__ = [
    "NODE_KINDS",
    "WORKLOAD_KINDS",
    "synthetic_cluster",
    "synthetic_jobs",
    "synthetic_pods",
    "synthetic_workload",
]

_SHAPES = (
    # weight, node name prefix, GPU block
    (5, "dgx", {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "islands": [list(range(8))]}),
    (3, "pcie", {"model": "A100-PCIE-80GB", "count": 8, "memory_gib": 80, "islands": [[0, 1], [2, 3], [4, 5], [6, 7]]}),
    (2, "l4", {"model": "L4", "count": 4, "memory_gib": 24, "replicas": 4}),
)
# Each GPU of a MIG node is cut into 3g.40gb + 2g.20gb + 1g.10gb (mixed strategy).
_MIG_LAYOUT = (("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6))
_MIG = {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "islands": [list(range(8))]}
NODE_KINDS = {prefix: gpu for _, prefix, gpu in _SHAPES} | {"mig": _MIG}


def synthetic_cluster(nodes: int, seed: int = 42, busy: float = 0.0, mix: dict[str, float] | None = None) -> Cluster:
    """NVSwitch 8-GPU nodes, PCIe boxes with NVLink pairs and time-sliced L4 nodes, mixed 5:3:2 (or as `mix`
    weighs NODE_KINDS, MIG nodes included); each GPU (replica, MIG instance) is busy with probability `busy`,
    held by a running pod that declared 6 GiB."""
    rng = random.Random(seed)
    kinds = list(_SHAPES) if mix is None else _kinds(mix)
    weights = [kind[0] for kind in kinds]
    specs = []
    for index in range(nodes):
        _, prefix, gpu = rng.choices(kinds, weights)[0]
        name = f"{prefix}-{index:05d}"
        if prefix == "mig":
            mig = _mig_instances(name, gpu, rng, busy)
            specs.append({"name": name, "cpu": 128, "memory": "1Ti", "gpu": gpu | {"mig": mig}})
            continue
        units = [(g, r) for g in range(gpu["count"]) for r in range(gpu.get("replicas", 1))]
        held = [{"gpu": g, "pod": f"{name}-run-{g}-{r}", "memory_gib": 6.0} for g, r in units if rng.random() < busy]
        specs.append({"name": name, "cpu": 128, "memory": "1Ti", "gpu": gpu | {"busy": held}})
    return Cluster.model_validate({"nodes": specs})


def _kinds(mix: dict[str, float]) -> list[tuple[float, str, dict]]:
    """(weight, prefix, GPU block) per kind named in the mix, in NODE_KINDS order so that a seed repeats."""
    unknown = sorted(set(mix) - set(NODE_KINDS))
    if unknown or not mix or any(weight < 0 for weight in mix.values()) or not sum(mix.values()):
        raise ValueError(f"node mix: expected non-negative weights of {', '.join(NODE_KINDS)}, got {mix}")
    return [(mix[prefix], prefix, NODE_KINDS[prefix]) for prefix in NODE_KINDS if prefix in mix]


def _mig_instances(name: str, gpu: dict, rng: random.Random, busy: float) -> list[dict]:
    """Every GPU cut the same way; an instance is held by a running pod with probability `busy`."""
    instances = []
    for g in range(gpu["count"]):
        for profile, start in _MIG_LAYOUT:
            holder = f"{name}-run-{g}-{start}" if rng.random() < busy else None
            instances.append({"gpu": g, "profile": profile, "start": start, "holder": holder})
    return instances


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


WORKLOAD_KINDS = ("notebook", "mig-notebook", "inference", "mig-inference", "training")
_DEFAULT_WORKLOAD = {"notebook": 3, "mig-notebook": 1, "inference": 3, "mig-inference": 1, "training": 2}


def synthetic_workload(count: int, seed: int = 42, mix: dict[str, float] | None = None) -> list[Job]:
    """Pending work of every kind, weighted by `mix` (WORKLOAD_KINDS): notebooks on time-sliced replicas or a
    1g.10gb MIG slice, inference on a whole 40 GiB GPU or a 3g.40gb slice, and training gangs of 1-4 pods of
    2-8 NVLink GPUs; a job of one pod is a lone pod."""
    weights = mix or _DEFAULT_WORKLOAD
    unknown = sorted(set(weights) - set(WORKLOAD_KINDS))
    if unknown or not sum(weights.values()) or any(w < 0 for w in weights.values()):
        raise ValueError(f"workload mix: expected non-negative weights of {', '.join(WORKLOAD_KINDS)}, got {weights}")
    rng = random.Random(seed)
    kinds = list(weights)
    jobs = []
    for index in range(count):
        kind = rng.choices(kinds, [weights[k] for k in kinds])[0]
        name = f"{kind}-{index:05d}"
        priority = rng.choice((0, 0, 10))
        if kind == "training":
            gpus = rng.choice((2, 4, 8))
            jobs.append(
                Job(
                    name=name,
                    pods=rng.choice((1, 2, 4)),
                    gpus_per_pod=gpus,
                    nvlink=True,
                    cpu=8 * gpus,
                    memory=f"{64 * gpus}Gi",
                    priority=priority + 10,
                    duration=3600,
                )
            )
            continue
        needs = {
            "notebook": {"shared": True, "memory_gib": 8.0, "cpu": 4, "memory": "32Gi"},
            "mig-notebook": {"mig_profile": "1g.10gb", "cpu": 4, "memory": "32Gi"},
            "inference": {"memory_gib": 40.0, "cpu": 8, "memory": "64Gi"},
            "mig-inference": {"mig_profile": "3g.40gb", "cpu": 8, "memory": "64Gi"},
        }[kind]
        lone = {"name": name, "pods": 1, "gpus_per_pod": 1, "priority": priority, "duration": 3600}
        jobs.append(Job.model_validate(lone | needs))
    return jobs
