"""Realistic generated clusters and backlogs: GPUs that differ, as a real fleet's do, seeded so that runs repeat.

The synthetic generator's nodes differ only in cpu and memory (its GPUs see four shapes); here the GPUs themselves
differ: A100 40/80 GB, H100, H200, L4, L40S and GB200 trays in NVL72 racks; NVLink islands of 8, of pairs, or
none; about half of every GPU, replica and MIG instance busy; MIG nodes in the mixed and the single strategy;
time-sliced nodes; pools tainted `nvidia.com/gpu=present:NoSchedule`; nodes whose cpu runs out before their GPUs.
The backlog asks for 1-8 GPUs per pod, per-GPU memory, GPU models, MIG profiles, shared replicas, and gangs of
2-16 pods that must stay inside one NVLink domain, drawn from a table of distinct GPU-visible shapes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..models.cluster import Cluster
from ..models.workload import Job

__all__ = ["KINDS", "MIG_LAYOUTS", "realistic_cluster", "realistic_jobs", "realistic_mig_cluster"]

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
RACK = 18  # GB200 compute trays per NVL72 rack (4 GPUs each)


@dataclass(frozen=True)
class Kind:
    """One kind of GPU node: its GPU block, its cpu (cores) and memory (GiB), and how often it occurs."""

    weight: float
    prefix: str
    model: str
    count: int
    memory_gib: float
    islands: tuple[tuple[int, ...], ...]
    cores: int
    memory: int
    replicas: int = 1  # > 1: time-sliced
    mig: tuple[tuple[str, int], ...] | None = None  # the layout of every GPU (mixed strategy)
    single: str | None = None  # single strategy: every GPU cut into this profile only


_EIGHT = (tuple(range(8)),)
_PAIRS = ((0, 1), (2, 3), (4, 5), (6, 7))
KINDS = (
    Kind(12, "a100-80", "A100-SXM4-80GB", 8, 80, _EIGHT, 256, 2048),
    Kind(6, "a100-40", "A100-SXM4-40GB", 8, 40, _EIGHT, 128, 1024),
    Kind(12, "h100", "H100-SXM5-80GB", 8, 80, _EIGHT, 224, 2048),
    Kind(5, "h200", "H200-SXM-141GB", 8, 141, _EIGHT, 224, 2048),
    Kind(6, "a100-pcie", "A100-PCIE-80GB", 8, 80, _PAIRS, 64, 512),  # cpu binds: 8 cores a GPU
    Kind(8, "l40s", "L40S", 4, 48, (), 48, 384),  # cpu binds
    Kind(8, "l4", "L4", 8, 24, (), 32, 256),  # cpu binds
    Kind(6, "l4-ts", "L4", 4, 24, (), 32, 256, replicas=4),
    Kind(
        5, "a100-mig", "A100-SXM4-80GB", 8, 80, _EIGHT, 256, 2048, mig=(("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6))
    ),
    Kind(4, "h100-mig", "H100-SXM5-80GB", 8, 80, _EIGHT, 224, 2048, mig=tuple(("1g.10gb", s) for s in range(7))),
    Kind(3, "h100-single", "H100-SXM5-80GB", 8, 80, _EIGHT, 224, 2048, single="3g.40gb"),
    Kind(
        3,
        "a100-40-mig",
        "A100-SXM4-40GB",
        8,
        40,
        _EIGHT,
        128,
        1024,
        mig=(("4g.20gb", 0), ("2g.10gb", 4), ("1g.5gb", 6)),
    ),
    Kind(6, "gb200", "GB200", 4, 186, ((0, 1, 2, 3),), 144, 960),
)
_SINGLE_STARTS = {"3g.40gb": (0, 4), "2g.20gb": (0, 2, 4), "1g.10gb": tuple(range(7))}


def realistic_cluster(nodes: int, seed: int = 42, busy: float = 0.5) -> Cluster:
    """`nodes` GPU nodes of KINDS (GB200 trays grouped into racks of 18, one NVLink domain each); every GPU,
    replica and MIG instance busy with probability `busy`; a third of each kind's pools tainted; cpu and memory
    as the servers have (some too little for their GPUs); a busy GPU's pod declares some of its memory and has a
    priority and a team (team a under a disruption budget of 2)."""
    rng = random.Random(seed)
    weights = [kind.weight for kind in KINDS]
    specs: list[dict] = []
    trays: list[str] = []
    for index in range(nodes):
        kind = rng.choices(KINDS, weights)[0]
        name = f"{kind.prefix}-{index:05d}"
        pool = rng.randrange(3)  # pool 0 of each kind is tainted, as the GPU Operator's usual setup
        spec: dict = {
            "name": name,
            "labels": {"pool": f"{kind.prefix}-{pool}", "gpu": kind.prefix},
            "cpu": f"{kind.cores - rng.randrange(0, 8)}",
            "memory": f"{kind.memory - rng.randrange(0, 32)}Gi",
        }
        if pool == 0:
            spec["taints"] = [GPU_TAINT]
        spec["gpu"] = _gpu_block(kind, name, rng, busy)
        specs.append(spec)
        if kind.prefix == "gb200":
            trays.append(name)
    domains = [
        {"name": f"nvl72-{number:04d}", "nodes": trays[start : start + RACK], "gbps": 900.0}
        for number, start in enumerate(range(0, len(trays), RACK))
        if len(trays[start : start + RACK]) >= 2
    ]
    running = {
        busy["pod"]: {"priority": rng.choice((0, 0, 10, 50, 1000)), "labels": {"team": rng.choice("abcd")}}
        for spec in specs
        for busy in spec["gpu"].get("busy", [])
    }
    budgets = [{"name": "team-a", "selector": {"team": "a"}, "max_unavailable": 2}]
    return Cluster.model_validate(
        {"nodes": specs, "nvlink_domains": domains, "running": running, "disruption_budgets": budgets}
    )


def _gpu_block(kind: Kind, name: str, rng: random.Random, busy: float) -> dict:
    block: dict = {
        "model": kind.model,
        "count": kind.count,
        "memory_gib": kind.memory_gib,
        "islands": [list(island) for island in kind.islands],
    }
    if kind.prefix == "gb200":
        block["nvlink_gbps"] = 900.0
    layout = kind.mig
    if kind.single is not None:
        block["mig_strategy"] = "single"
        block["mig_profiles"] = [kind.single]
        layout = tuple((kind.single, start) for start in _SINGLE_STARTS[kind.single])
    if layout is not None:
        block["mig"] = [
            {
                "gpu": g,
                "profile": profile,
                "start": start,
                "holder": f"{name}-run-{g}-{start}" if rng.random() < busy else None,
            }
            for g in range(kind.count)
            for profile, start in layout
        ]
        return block
    block["replicas"] = kind.replicas
    share = kind.memory_gib / kind.replicas
    block["busy"] = [
        {"gpu": g, "pod": f"{name}-run-{g}-{r}", "memory_gib": round(share * rng.uniform(0.3, 1.0), 1)}
        for g in range(kind.count)
        for r in range(kind.replicas)
        if rng.random() < busy
    ]
    return block


_MEMORIES = (
    8,
    10,
    12,
    16,
    20,
    22,
    24,
    30,
    32,
    36,
    40,
    44,
    48,
    56,
    60,
    64,
    70,
    72,
    76,
    80,
    96,
    110,
    120,
    136,
    141,
    160,
    180,
)
_MODELS = ("A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "GB200", "L40S", "L4")
_PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb", "1g.5gb", "4g.20gb")


def _shape_table(shapes: int, rng: random.Random) -> list[dict]:
    """`shapes` distinct GPU-visible needs (GPUs per pod, model, per-GPU memory, NVLink, sharing, MIG profile,
    tolerations, pool), each with its cpu and memory per GPU."""
    table: list[dict] = []
    seen: set[str] = set()
    while len(table) < shapes:
        draw = rng.random()
        needs: dict = {}
        if draw < 0.1:
            needs |= {"gpus_per_pod": rng.choice((1, 1, 2)), "mig_profile": rng.choice(_PROFILES)}
        elif draw < 0.2:
            needs |= {"gpus_per_pod": 1, "shared": True, "memory_gib": rng.choice((4, 6, 8, 10, 12))}
        else:
            gpus = rng.choice((1, 1, 1, 2, 2, 4, 4, 8))
            needs |= {"gpus_per_pod": gpus, "nvlink": gpus > 1 and rng.random() < 0.7}
            if rng.random() < 0.7:
                needs["memory_gib"] = rng.choice(_MEMORIES)
            if rng.random() < 0.3:
                needs["model"] = rng.choice(_MODELS)
        if rng.random() < 0.35:
            needs["tolerations"] = [GPU_TOLERATION]
        if rng.random() < 0.1:
            needs["node_selector"] = {"gpu": rng.choice(("a100-80", "h100", "h200", "l40s", "l4", "gb200"))}
        key = repr(sorted(needs.items()))
        if key in seen:
            continue
        seen.add(key)
        per_gpu_cores = rng.choice((2, 4, 6, 8, 12, 16))
        needs["cpu"] = str(per_gpu_cores * needs["gpus_per_pod"])
        needs["memory"] = f"{rng.choice((16, 32, 64, 96, 128)) * needs['gpus_per_pod']}Gi"
        table.append(needs)
    return table


def realistic_jobs(count: int, seed: int = 42, shapes: int = 300) -> list[Job]:
    """`count` pending jobs over `shapes` GPU-visible shapes: most a single pod, some multi-pod jobs, and gangs of
    2-16 pods confined to one NVLink domain (a GB200 rack, or one node); priorities in three tiers."""
    rng = random.Random(seed + 1)
    table = _shape_table(shapes, rng)
    jobs = []
    for index in range(count):
        needs = dict(rng.choice(table))
        pods = 1
        draw = rng.random()
        if draw < 0.08 and not needs.get("mig_profile") and not needs.get("shared"):
            gpus = needs["gpus_per_pod"]  # a gang inside one domain: a GB200 rack holds 72 GPUs, a node 8
            needs |= {"nvlink_domain": True, "nvlink": gpus > 1}
            pods = rng.randint(2, max(2, min(16, 72 // max(gpus, 4))))
        elif draw < 0.2:
            pods = rng.randint(2, 4)
        priority = rng.choices((0, 100, 1000), (6, 3, 1))[0]
        jobs.append(
            Job(name=f"job-{index:05d}", pods=pods, duration=3600, priority=priority, **needs)  # type: ignore[arg-type]
        )
    return jobs


_MIG_MODELS = (("A100-SXM4-80GB", 80.0), ("H100-SXM5-80GB", 80.0), ("A100-SXM4-40GB", 40.0))
# Layouts an administrator would have created, per GPU memory (GiB), and MIG disabled (None).
MIG_LAYOUTS: dict[float, tuple[tuple[tuple[str, int], ...] | None, ...]] = {
    80.0: (
        tuple(("1g.10gb", s) for s in range(7)),
        (("3g.40gb", 0), ("3g.40gb", 4)),
        (("1g.10gb", 0), ("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 4)),
        (("4g.40gb", 0), ("3g.40gb", 4)),
        (("2g.20gb", 0), ("2g.20gb", 2), ("2g.20gb", 4), ("1g.10gb", 6)),
        (("7g.80gb", 0),),
        None,
    ),
    40.0: ((("3g.20gb", 0), ("3g.20gb", 4)), tuple(("1g.5gb", s) for s in range(7)), None),
}


def realistic_mig_cluster(gpus: int, seed: int = 42, busy: float = 0.5) -> Cluster:
    """Nodes of 8 MIG-capable GPUs of three models, each node's GPUs cut in a few common layouts (some nodes in
    the single strategy, one profile on every GPU), some with MIG off; half the instances and GPUs busy."""
    rng = random.Random(seed)
    nodes = []
    for number in range((gpus + 7) // 8):
        model, memory = rng.choices(_MIG_MODELS, (5, 4, 1))[0]
        count = min(8, gpus - 8 * number)
        single = memory == 80.0 and rng.random() < 0.15
        choices = [(("3g.40gb", 0), ("3g.40gb", 4)), tuple(("1g.10gb", s) for s in range(7))] if single else None
        layouts = rng.sample(MIG_LAYOUTS[memory], 2) if choices is None else [rng.choice(choices)] * 2
        mig, held = [], []
        for index in range(count):
            layout = layouts[index % 2]
            if layout is None:
                if rng.random() < busy:
                    held.append({"gpu": index, "pod": f"train-{number}-{index}"})
                continue
            for profile, start in layout:
                holder = f"pod-{number}-{index}-{start}" if rng.random() < busy else None
                mig.append({"gpu": index, "profile": profile, "start": start, "holder": holder})
        gpu: dict = {"model": model, "count": count, "memory_gib": memory, "mig": mig, "busy": held}
        if single and layouts[0] is not None:
            gpu |= {"mig_strategy": "single", "mig_profiles": [layouts[0][0][0]]}
        nodes.append({"name": f"mig-{number:05d}", "labels": {"gpu": model}, "gpu": gpu})
    return Cluster.model_validate({"nodes": nodes})
