"""The FGD paper's experiment on the openb trace: inflate the workload to 130% of the cluster's GPUs by sampling
pods, shuffle the arrival order, place each pod once (a pod that fits nowhere is dropped; none leave), and read the
GPU allocation at every arrived percentage. One run = one trace, one policy, one seed.

As in the simulator: the trace's own pods arrive first, shuffled, then pods sampled with replacement until the
next one would pass 130% of the GPU capacity (a trace above 130% loses random pods instead); the allocation at
an arrived percentage x is the mean over the arrivals whose arrived share rounds to x.
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from ..errors import InputError, LimitError
from ..limits import MAX_PODS, at_import
from ..models.cluster import Cluster
from ..planner.gpushare import PodTable, ShareState, share_policy, target_workload
from ..scenarios.openb import MILLI, OpenbNode, OpenbPod, load_openb, openb_cluster
from ..scenarios.openb_variants import apply_variant, parse_variant

__all__ = [
    "CURVE_POINTS",
    "DEFAULT_RATIO",
    "MAX_TASKS",
    "Prepared",
    "RunResult",
    "RunSpec",
    "arrivals",
    "check_arrivals",
    "prepare",
    "require_at_most",
    "run",
    "subset",
]

DEFAULT_RATIO = 1.3
CURVE_POINTS = 131  # arrived 0..130%
MAX_TASKS = at_import("GPUSCHED_MAX_BENCH_RUNS", 20_000)  # runs in one benchmark: a day's work on two cores


class RunSpec(BaseModel):
    """Everything a worker needs to repeat one run: files, not data, so that processes and Ray nodes load them."""

    trace: str = Field(description="pod list CSV")
    nodes: str = Field(description="node list CSV")
    node_count: int | None = Field(None, description="an evenly spaced subset of this many nodes")
    variant: str | None = Field(None, description="a generated variant of the trace, kind:level[@seed]")
    policy: str = Field(description="a share policy, name:key=value:… (planner.gpushare.share_policy)")
    seed: int
    ratio: float = DEFAULT_RATIO


class RunResult(BaseModel):
    trace: str
    policy: str
    seed: int
    arrivals: int
    placed: int
    dropped: int
    arrived_pct: float = Field(description="GPU milli that arrived, % of capacity")
    allocation_pct: float = Field(description="GPU milli allocated at the last arrived percentage, % of capacity")
    curve: list[float | None] = Field(description="allocation % per arrived % 0..130 (None: no arrival there)")
    seconds: float = Field(description="wall time of the decisions")
    decision_us: float = Field(description="CPU time per decision, microseconds (steady when the machine is busy)")


@dataclass(frozen=True)
class Prepared:
    """A trace loaded once per process: its rows, the cluster, the pod table and each pod's GPU milli."""

    name: str
    loaded_pods: list[OpenbPod]
    cluster: Cluster
    table: PodTable
    milli: np.ndarray


def subset(nodes: list[OpenbNode], count: int | None) -> list[OpenbNode]:
    """`count` nodes evenly spaced through the list (which is grouped by model), so the mix is kept."""
    if count is None or count >= len(nodes):
        return nodes
    picks = np.unique(np.round(np.linspace(0, len(nodes) - 1, count)).astype(int))
    return [nodes[i] for i in picks]


@lru_cache(maxsize=8)
def prepare(trace: str, nodes: str, node_count: int | None, variant: str | None = None) -> Prepared:
    """The trace (moved to `variant` when given: named trace+variant), its cluster and pod table."""
    loaded = load_openb(trace, Path(trace).parent, nodes)
    name = loaded.name
    if variant is not None:
        chosen = parse_variant(variant)
        loaded = type(loaded)(name, loaded.nodes, apply_variant(loaded.pods, loaded.nodes, chosen))
        name = f"{name}+{chosen.label}"
    if not any(pod.total_milli for pod in loaded.pods):
        raise InputError(trace, "no pod asks for a GPU: nothing to place")
    if not any(node.gpu for node in loaded.nodes):
        raise InputError(nodes, "no node has a GPU")
    table = PodTable.of(loaded.pods)
    milli = np.array([pod.total_milli for pod in table.pods], dtype=np.int64)
    return Prepared(name, loaded.pods, openb_cluster(subset(loaded.nodes, node_count)), table, milli)


def require_at_most(count: int, limit: int, what: str, variable: str = "GPUSCHED_MAX_BENCH_RUNS") -> None:
    """LimitError when `count` of `what` passes `limit`."""
    if count > limit:
        raise LimitError(what, f"{count} asked for, at most {limit} (set {variable} to raise the limit)")


def check_arrivals(prepared: Prepared, ratio: float) -> None:
    """Refuse, before any run, a protocol whose arrivals would pass MAX_PODS: about ratio × capacity over the
    trace's mean GPU milli per pod (a trace of 1-milli pods at 100 × capacity would be billions of decisions)."""
    capacity = MILLI * sum(node.gpu.count for node in prepared.cluster.nodes if node.gpu)
    expected = max(prepared.milli.size, math.ceil(ratio * capacity / max(float(prepared.milli.mean()), 1e-9)))
    if expected > MAX_PODS:
        raise LimitError(
            prepared.name,
            f"about {expected} pods would arrive ({ratio:g} × the GPU capacity over {prepared.milli.mean():.1f} "
            f"GPU milli per pod), more than {MAX_PODS} (set GPUSCHED_MAX_PODS to raise the limit)",
        )


def arrivals(milli: np.ndarray, capacity: int, ratio: float, seed: int) -> np.ndarray:
    """The arrival order: the trace shuffled, then tuned to `ratio` × capacity by sampling or dropping pods."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(milli.size)
    target = ratio * capacity
    total = int(milli.sum())
    if total > target:
        keep = np.ones(order.size, dtype=bool)
        for drop in rng.permutation(order.size):
            if total <= target:
                break
            keep[drop] = False
            total -= int(milli[order[drop]])
        return order[keep]
    extra: list[int] = []
    while True:
        draws = rng.integers(milli.size, size=1024)
        running = total + np.cumsum(milli[draws])
        over = np.flatnonzero(running > target)
        if over.size:
            extra.extend(draws[: over[0]].tolist())
            return np.concatenate([order, np.array(extra, dtype=np.int64)])
        extra.extend(draws.tolist())
        total = int(running[-1])


def _curve(arrived: np.ndarray, allocated: np.ndarray) -> tuple[list[float | None], float]:
    """Mean allocation per rounded arrived percentage, and the mean at the last one reached."""
    bins = np.round(arrived).astype(int)
    curve: list[float | None] = [None] * CURVE_POINTS
    sums = np.bincount(bins, weights=allocated, minlength=CURVE_POINTS)
    counts = np.bincount(bins, minlength=CURVE_POINTS)
    for x in range(min(CURVE_POINTS, counts.size)):
        if counts[x]:
            curve[x] = round(float(sums[x] / counts[x]), 4)
    last = bins[-1]
    return curve, float(sums[last] / counts[last])


def run(spec: RunSpec) -> RunResult:
    """One policy, one seed: place every arrival once and record the allocation after each."""
    prepared = prepare(spec.trace, spec.nodes, spec.node_count, spec.variant)
    state = ShareState(prepared.cluster, prepared.table)
    order = arrivals(prepared.milli, state.capacity_milli, spec.ratio, spec.seed)
    chosen = share_policy(spec.policy)
    rng = np.random.default_rng([spec.seed, zlib.crc32(chosen.policy.name.encode())])  # arguments keep the draws
    policy = chosen.build(state, prepared.table, target_workload(prepared.table, state), rng)
    pods = prepared.table.pods
    allocated = np.empty(order.size)
    placed = 0
    began, cpu_began = time.perf_counter(), time.process_time()
    for step, index in enumerate(order.tolist()):
        pod = pods[index]
        choice = policy.choose(pod, rng)
        if choice is not None:
            state.bind(pod, *choice)
            placed += 1
        allocated[step] = state.allocated_milli
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    scale = 100.0 / state.capacity_milli
    arrived = np.cumsum(prepared.milli[order]) * scale
    curve, final = _curve(arrived, allocated * scale)
    return RunResult(
        trace=prepared.name,
        policy=chosen.label,
        seed=spec.seed,
        arrivals=int(order.size),
        placed=placed,
        dropped=int(order.size) - placed,
        arrived_pct=round(float(arrived[-1]), 4),
        allocation_pct=round(final, 4),
        curve=curve,
        seconds=round(seconds, 4),
        decision_us=round(1e6 * cpu / max(1, order.size), 2),
    )
