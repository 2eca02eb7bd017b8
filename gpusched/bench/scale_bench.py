"""How `scale up` scales: random backlogs (pods and gangs of many GPU-visible shapes) over random offerings of the
catalogue's cloud instance types, on an empty cluster; gpusched's plan against Karpenter's and CA's rules."""

from __future__ import annotations

import random
import time

from pydantic import BaseModel, Field

from ..models.cluster import Cluster
from ..models.offers import InstanceType, Offers, Price
from ..models.scheduling import Toleration
from ..models.workload import Job, Pod
from ..planner.optimize.scale import scale_up
from ..planner.optimize.solver import SolverConfig
from ..planner.pending import pending_jobs
from ..scenarios.importer.catalogue import catalogue
from ..scenarios.offers import resolve

__all__ = ["ScaleRow", "ScaleBench", "bench_scale", "random_offers", "random_backlog"]

# instance types of the catalogue with their cpu and memory (the clouds' published sizes)
_TYPES = {
    "p4d.24xlarge": (96, "1152Gi"),
    "p4de.24xlarge": (96, "1152Gi"),
    "p5.48xlarge": (192, "2048Gi"),
    "p5e.48xlarge": (192, "2048Gi"),
    "g5.xlarge": (4, "16Gi"),
    "g5.12xlarge": (48, "192Gi"),
    "g5.48xlarge": (192, "768Gi"),
    "g6.xlarge": (4, "16Gi"),
    "g6.12xlarge": (48, "192Gi"),
    "g6.48xlarge": (192, "768Gi"),
    "a2-highgpu-1g": (12, "85Gi"),
    "a2-highgpu-8g": (96, "680Gi"),
    "a3-highgpu-8g": (208, "1872Gi"),
    "Standard_ND96asr_v4": (96, "900Gi"),
    "Standard_ND96isr_H100_v5": (96, "1900Gi"),
}
_PER_GPU = {"A100-SXM4-40GB": 2.8, "A100-SXM4-80GB": 3.6, "H100-80GB-HBM3": 6.9, "H200": 7.9, "A10G": 1.2, "L4": 0.8}
_TOLERATE = [Toleration(key="nvidia.com/gpu", operator="Exists")]


class ScaleRow(BaseModel):
    pending_pods: int
    shapes: int
    offerings: int
    status: str
    gap: float | None
    cost_per_hour: float
    bound_per_hour: float | None
    kept: str
    baselines: dict[str, float] = Field(description="rule -> its cost per hour")
    unplaced: int
    baselines_unplaced: dict[str, int]
    seconds: float = Field(description="wall seconds of the whole run, the autoscalers' rules included")
    cpu_seconds: float = Field(description="processor seconds of gpusched's plan (floor, model, solve, packing)")
    all_cpu_seconds: float = Field(description="processor seconds of the whole run, the rules included")


class ScaleBench(BaseModel):
    seed: int
    time_limit: float
    rows: list[ScaleRow]


def random_offers(count: int, rng: random.Random) -> Offers:
    """`count` offerings: instance types of the catalogue in two zones, on-demand and spot (spot at 30-60%)."""
    known = catalogue()
    kinds: list[InstanceType] = []
    offered = 0
    names = list(_TYPES)
    rng.shuffle(names)
    while offered < count:
        for name in names:
            if offered >= count:
                break
            cpu, memory = _TYPES[name]
            base = InstanceType(name=name, cpu=cpu, memory=memory, prices=[Price(zone="z", per_hour=1)])
            gpu = resolve(base, known).gpu
            assert gpu is not None
            price = round(_PER_GPU.get(gpu.model, 3.0) * gpu.count * rng.uniform(0.9, 1.2), 2)
            existing = next((k for k in kinds if k.name == name), None)
            prices = list(existing.prices) if existing else []
            taken = {(p.capacity_type, p.zone) for p in prices}
            choices = [(c, z) for c in ("on-demand", "spot") for z in ("zone-a", "zone-b") if (c, z) not in taken]
            if not choices:
                continue
            capacity, zone = rng.choice(choices)
            share = 1.0 if capacity == "on-demand" else rng.uniform(0.3, 0.6)
            prices.append(Price(capacity_type=capacity, zone=zone, per_hour=round(price * share, 2)))  # type: ignore[arg-type]
            kind = InstanceType(name=name, gpu=gpu, cpu=cpu, memory=memory, prices=prices)
            kinds = [k for k in kinds if k.name != name] + [kind]
            offered += 1
    return Offers(instance_types=kinds)


def random_backlog(pods: int, rng: random.Random, shapes: int = 60) -> tuple[list[Pod], list[Job]]:
    """`pods` pending pods cut from `shapes` templates (GPUs 1-8, model or not, NVLink, cpu, memory, MIG), a tenth
    of them in gangs of 2-4 pods of 8 GPUs."""
    templates: list[dict] = []
    for _ in range(shapes):
        kind = rng.random()
        if kind < 0.15:
            profile = rng.choice(["1g.10gb", "3g.40gb", "2g.20gb"])
            templates.append({"gpus": 1, "mig_profile": profile, "cpu": rng.choice([2, 4]), "memory": "16Gi"})
            continue
        gpus = rng.choice([1, 1, 1, 2, 4, 8])
        model = rng.choice([None, None, "A100-SXM4-80GB", "H100-80GB-HBM3", "L4", "A10G"]) if gpus < 8 else None
        template: dict = {
            "gpus": gpus,
            "cpu": rng.choice([2, 4, 8, 16]) * gpus,
            "memory": f"{rng.choice([8, 16, 32, 64]) * gpus}Gi",
            "nvlink": gpus > 1 and rng.random() < 0.7,
            "priority": rng.choice([0, 0, 10]),
        }
        if model:
            template["model"] = model
        templates.append(template)
    found_pods: list[Pod] = []
    found_jobs: list[Job] = []
    left = pods
    while left > 0:
        if rng.random() < 0.1 and left >= 2:
            size = min(left, rng.choice([2, 3, 4]))
            found_jobs.append(
                Job(
                    name=f"gang-{len(found_jobs)}",
                    pods=size,
                    gpus_per_pod=8,
                    nvlink=True,
                    cpu=64,
                    memory="512Gi",
                    tolerations=_TOLERATE,
                )  # fmt: skip
            )
            left -= size
            continue
        template = rng.choice(templates)
        found_pods.append(Pod(name=f"pod-{len(found_pods)}", tolerations=_TOLERATE, **template))
        left -= 1
    return found_pods, found_jobs


def bench_scale(sizes: list[int], offerings: int, seed: int, config: SolverConfig, shapes: int = 60) -> ScaleBench:
    rows = []
    for size in sizes:
        rng = random.Random(seed * 100_003 + size)
        offers = random_offers(offerings, rng)
        pods, jobs = random_backlog(size, rng, shapes)
        began, cpu = time.perf_counter(), time.process_time()
        report = scale_up(Cluster(nodes=[]), pending_jobs(pods, jobs), offers, config)
        rows.append(
            ScaleRow(
                pending_pods=report.pending_pods,
                shapes=report.shapes,
                offerings=report.offerings,
                status=report.status,
                gap=report.gap,
                cost_per_hour=report.cost_per_hour,
                bound_per_hour=report.bound_per_hour,
                kept=report.kept,
                baselines={b.name: b.cost_per_hour for b in report.baselines},
                unplaced=len(report.unplaced),
                baselines_unplaced={b.name: len(b.unplaced) for b in report.baselines},
                seconds=time.perf_counter() - began,
                cpu_seconds=report.cpu_seconds,
                all_cpu_seconds=time.process_time() - cpu,
            )
        )
    return ScaleBench(seed=seed, time_limit=config.time_limit, rows=rows)
