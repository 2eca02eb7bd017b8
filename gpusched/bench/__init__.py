"""Benchmarks: measured with a clock here, never inside unit tests."""

from __future__ import annotations

import time

from pydantic import BaseModel

from ..planner.place import place
from ..scenarios.synthetic import synthetic_cluster, synthetic_pods

__all__ = ["PlaceBench", "bench_place"]


class PlaceBench(BaseModel):
    nodes: int
    pods: int
    sizes: list[int]
    view: str
    policy: str
    placed: int
    pending: int
    seconds: float
    pods_per_second: float


def bench_place(
    nodes: int, pods: int, view: str = "gpu", policy: str = "binpack", seed: int = 42, sizes: tuple[int, ...] = (1,)
) -> PlaceBench:
    """Time `place` of generated pods (GPU counts drawn from `sizes`) on a generated cluster."""
    cluster = synthetic_cluster(nodes, seed)
    workload = synthetic_pods(pods, seed, sizes)
    began = time.perf_counter()
    report = place(cluster, workload, view, policy)  # type: ignore[arg-type]
    seconds = time.perf_counter() - began
    pending = len(report.pending)
    return PlaceBench(
        nodes=nodes,
        pods=pods,
        sizes=list(sizes),
        view=view,
        policy=policy,
        placed=pods - pending,
        pending=pending,
        seconds=round(seconds, 3),
        pods_per_second=round(pods / seconds, 1),
    )
