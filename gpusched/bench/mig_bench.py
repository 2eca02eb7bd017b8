"""`mig plan` at scale: a generated cluster of MIG GPUs, a demand that needs repartitioning, timed.

Run: `gpusched bench mig --gpus 1000 [--random-layouts]` (or `python -m gpusched.bench.mig_bench 1000 [--random]`).
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter

from pydantic import BaseModel

from ..models.cluster import Cluster
from ..models.mig import MigProfile, placement_error, profiles_for
from ..planner.optimize.mig import plan_mig
from ..planner.optimize.solver import SolverConfig
from ..scenarios.realistic import MIG_LAYOUTS, realistic_mig_cluster

__all__ = ["MigBench", "bench_demand", "bench_mig", "realistic_demand", "synthetic_mig_cluster"]

_MODELS = (("A100-SXM4-80GB", 80), ("H100-SXM5-80GB", 80))
_LAYOUTS = MIG_LAYOUTS[80.0]  # the A100-80GB / H100-80GB names


class MigBench(BaseModel):
    gpus: int
    random_layouts: bool
    realistic: bool = False
    nodes: int
    classes: int
    options: int
    demand: dict[str, int]
    status: str
    met: bool
    reconfigured: int
    unused_slices: int
    solve_seconds: float  # CP-SAT: the three levels and the tie-break
    seconds: float  # inventory, classes, layouts, solve, extraction, validation and the heuristics
    cpu_seconds: float = 0.0  # the same, as processor time (every solver thread)
    time_limit: float = 0.0
    reconfigured_bound: float | None = None  # the proven lower bound on GPUs reconfigured (None: not reached)
    first_fit_met: bool
    first_fit_reconfigured: int


def synthetic_mig_cluster(gpus: int, seed: int = 42, random_layouts: bool = False) -> Cluster:
    """Nodes of 8 GPUs with the common MIG layouts (or MIG off); each instance busy with probability 1/2.

    random_layouts: every GPU gets instances drawn at random instead, the worst case for classes.
    """
    rng = random.Random(seed)
    nodes = []
    for number in range((gpus + 7) // 8):
        model, memory = rng.choice(_MODELS)
        count = min(8, gpus - 8 * number)
        mig, busy = [], []
        for index in range(count):
            layout = _random_layout(rng, profiles_for(model, memory)) if random_layouts else rng.choice(_LAYOUTS)
            if layout is None:
                if rng.random() < 0.5:
                    busy.append({"gpu": index, "pod": f"train-{number}-{index}"})
                continue
            for profile, start in layout:
                holder = f"pod-{number}-{index}-{start}" if rng.random() < 0.5 else None
                mig.append({"gpu": index, "profile": profile, "start": start, "holder": holder})
        gpu = {"model": model, "count": count, "memory_gib": memory, "mig": mig, "busy": busy}
        nodes.append({"name": f"mig-{number:04d}", "gpu": gpu})
    return Cluster.model_validate({"nodes": nodes})


def _random_layout(rng: random.Random, profiles: dict[str, MigProfile]) -> tuple[tuple[str, int], ...]:
    layout: list[tuple[str, int]] = []
    for _ in range(12):
        name = rng.choice(list(profiles))
        start = rng.choice(profiles[name].starts)
        if placement_error(profiles, layout + [(name, start)]) is None:
            layout.append((name, start))
    return tuple(layout)


def bench_demand(cluster: Cluster) -> dict[str, int]:
    """Half again as many free 3g and 2g instances as there are, and as many 1g as there are: repartitioning is needed."""
    free = Counter(m.profile for node in cluster.nodes if node.gpu for m in node.gpu.mig if m.holder is None)
    return {
        "3g.40gb": max(1, 3 * free["3g.40gb"] // 2),
        "2g.20gb": max(1, 3 * free["2g.20gb"] // 2),
        "1g.10gb": max(1, free["1g.10gb"]),
    }


def realistic_demand(cluster: Cluster) -> dict[str, int]:
    """A four-profile demand past what is free: half again the free 3g, 2g and 1g instances, and one 7g per 64 GPUs."""
    free = Counter(m.profile for node in cluster.nodes if node.gpu for m in node.gpu.mig if m.holder is None)
    gpus = sum(node.gpu.count for node in cluster.nodes if node.gpu)
    return {
        "3g.40gb": max(1, 3 * free["3g.40gb"] // 2),
        "2g.20gb": max(1, 3 * free["2g.20gb"] // 2),
        "1g.10gb": max(1, free["1g.10gb"]),
        "7g.80gb": max(1, gpus // 64),
    }


def bench_mig(
    gpus: int,
    seed: int = 42,
    config: SolverConfig | None = None,
    random_layouts: bool = False,
    realistic: bool = False,
) -> MigBench:
    """Time the whole `mig plan` on a generated cluster (`realistic`: three models, single-strategy nodes, a
    four-profile demand)."""
    config = config or SolverConfig(seed=seed)
    if realistic:
        cluster = realistic_mig_cluster(gpus, seed)
        demand = realistic_demand(cluster)
    else:
        cluster = synthetic_mig_cluster(gpus, seed, random_layouts)
        demand = bench_demand(cluster)
    began, processor = time.perf_counter(), time.process_time()
    plan = plan_mig(cluster, demand, config)
    seconds, cpu_seconds = time.perf_counter() - began, time.process_time() - processor
    levels = plan.solve.levels
    greedy = next(row.outcome for row in plan.comparison if row.plan == "first-fit")
    return MigBench(
        gpus=gpus,
        random_layouts=random_layouts,
        realistic=realistic,
        nodes=len(cluster.nodes),
        classes=plan.classes,
        options=plan.options,
        demand=demand,
        status=plan.solve.status,
        met=plan.outcome.met,
        reconfigured=plan.outcome.reconfigured,
        unused_slices=plan.outcome.unused_slices,
        solve_seconds=round(plan.solve.seconds + (plan.tie_break.seconds if plan.tie_break else 0), 3),
        seconds=round(seconds, 3),
        cpu_seconds=round(cpu_seconds, 3),
        time_limit=config.time_limit,
        reconfigured_bound=levels[1].best_bound if len(levels) > 1 else None,
        first_fit_met=greedy.met,
        first_fit_reconfigured=greedy.reconfigured,
    )


if __name__ == "__main__":
    print(
        bench_mig(
            int(sys.argv[1]) if len(sys.argv) > 1 else 1000, random_layouts="--random" in sys.argv
        ).model_dump_json(indent=2)
    )
