"""`bench replay`: the openb trace with its own creation and deletion times, pods arriving and leaving.

Beyond the FGD protocol: a pod that fits nowhere waits (first come, first tried) and is retried whenever a pod
leaves; once placed it runs for its trace lifetime (deletion − creation). The shipped trace is sparse in time (a
few dozen pods at once on 6,212 GPUs: nothing ever waits), so `speedup` divides the arrival times and keeps the
lifetimes: the same pods, arriving faster, overlap more (all of them together ask for 98% of the GPUs), and the
pods that fragmentation leaves without room wait for others to leave.
Allocation is reported over the arrival window (first to last arrival), the same for every policy; waits count
until the last waiting pod has started.
"""

from __future__ import annotations

import heapq
import time
import zlib
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np
from pydantic import BaseModel, Field

from ..files import make_folder
from ..planner.gpushare import SharePod, ShareState, share_policy, target_workload
from ..scenarios.openb import MILLI, trace_files
from .fanout import executor_name, fan_out
from .openb import prepare
from .openb_bench import write_plot_and_document

__all__ = ["ReplayBench", "ReplayPolicy", "ReplaySpec", "TimelinePoint", "bench_replay", "write_replay"]

TIMELINE_POINTS = 200
_DEPART, _ARRIVE = 0, 1  # at equal times pods leave before others arrive


class ReplaySpec(BaseModel):
    trace: str
    nodes: str
    node_count: int | None
    policy: str
    seed: int
    speedup: float


class TimelinePoint(BaseModel):
    seconds: float = Field(description="since the first arrival (after the speedup)")
    allocation_pct: float
    pending: int


class ReplayPolicy(BaseModel):
    policy: str
    mean_allocation_pct: float = Field(description="time-weighted over the arrival window (its sparse start included)")
    last_arrival_pct: float = Field(description="allocation once the last pod has arrived")
    peak_allocation_pct: float = Field(description="the most allocated at any time, queue drained included")
    waited: int = Field(description="pods that did not fit when they arrived")
    mean_wait_s: float = Field(description="over every placed pod (0 for those that fitted at once)")
    p95_wait_s: float
    max_wait_s: float
    never_placed: int = Field(description="pods still waiting when the last pod left (they fit no node)")
    decision_us: float = Field(description="CPU time of the replay per placement attempt, microseconds")
    timeline: list[TimelinePoint]


class ReplayBench(BaseModel):
    trace: str
    nodes: int
    gpus: int
    pods: int
    seconds: float = Field(description="first to last arrival, after the speedup")
    speedup: float = Field(description="arrival times divided by this, lifetimes kept")
    policies: list[ReplayPolicy]
    executor: str
    outputs: list[str] = Field(default_factory=list)


def _times(spec: ReplaySpec) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times (from 0, divided by the speedup) and lifetimes of the pods."""
    pods = prepare(spec.trace, spec.nodes, spec.node_count).loaded_pods
    if any(p.creation_time is None or p.deletion_time is None for p in pods):
        raise ValueError(f"{spec.trace}: replay needs creation_time and deletion_time for every pod")
    created = np.array([p.creation_time for p in pods], dtype=np.float64)
    lifetime = np.maximum(0.0, np.array([p.deletion_time for p in pods], dtype=np.float64) - created)
    return (created - created.min()) / spec.speedup, lifetime


class _Waiting:
    """Pods that fitted nowhere, first come first served, kept per kind of pod: thousands may wait, but a freed
    node is checked against the oldest pod of every kind at once (one vectorised test), not pod by pod."""

    def __init__(self, pods: list[SharePod]) -> None:
        kinds = list(dict.fromkeys(pods))
        self.kind_of = {pod: k for k, pod in enumerate(kinds)}
        self.cpu, self.memory, self.gpus, self.milli, self.spec = (
            np.array([getattr(pod, field) for pod in kinds]) for field in ("cpu", "memory", "gpus", "milli", "spec")
        )
        self.queues: list[deque[int]] = [deque() for _ in kinds]
        self.heads = np.full(len(kinds), np.iinfo(np.int64).max)  # the oldest waiting pod of each kind
        self.count = 0

    def add(self, pod: SharePod, index: int) -> None:
        kind = self.kind_of[pod]
        if not self.queues[kind]:
            self.heads[kind] = index
        self.queues[kind].append(index)
        self.count += 1

    def next_fitting(self, state: ShareState, node: int) -> int | None:
        """The longest-waiting pod that fits the node, taken off the queue."""
        gpu_ok = np.where(
            self.milli < MILLI, state.gpu_most_left[node] >= self.milli, state.gpu_free_whole[node] >= self.gpus
        )
        ok = (self.cpu <= state.cpu_left[node]) & (self.memory <= state.memory_left[node])
        ok &= (self.gpus == 0) | (state.access[self.spec, node] & gpu_ok)
        candidates = np.where(ok, self.heads, np.iinfo(np.int64).max)
        kind = int(np.argmin(candidates))
        if candidates[kind] == np.iinfo(np.int64).max:
            return None
        queue = self.queues[kind]
        index = queue.popleft()
        self.heads[kind] = queue[0] if queue else np.iinfo(np.int64).max
        self.count -= 1
        return index


def _replay(spec: ReplaySpec) -> ReplayPolicy:
    """One policy over the whole trace: arrivals, departures, retries of the waiting pods."""
    prepared = prepare(spec.trace, spec.nodes, spec.node_count)
    state = ShareState(prepared.cluster, prepared.table)
    chosen = share_policy(spec.policy)
    rng = np.random.default_rng([spec.seed, zlib.crc32(chosen.policy.name.encode())])
    policy = chosen.build(state, prepared.table, target_workload(prepared.table, state), rng)
    arrive, lifetime = _times(spec)
    pods = prepared.table.pods
    events: list[tuple[float, int, int, int, tuple[int, ...]]] = [
        (float(t), _ARRIVE, i, -1, ()) for i, t in enumerate(arrive)
    ]
    heapq.heapify(events)
    waiting = _Waiting(pods)
    wait = np.full(len(pods), np.nan)
    trail: list[tuple[float, int, int]] = []  # (time, allocated milli, waiting) after each event
    last_arrival = float(arrive.max())
    attempts = 0
    began = time.process_time()

    def attempt(index: int, now: float) -> bool:
        nonlocal attempts
        attempts += 1
        choice = policy.choose(pods[index], rng)
        if choice is None:
            return False
        state.bind(pods[index], *choice)
        wait[index] = now - arrive[index]
        heapq.heappush(events, (now + float(lifetime[index]), _DEPART, index, choice[0], choice[1]))
        return True

    while events:
        now, kind, index, node, gpus = heapq.heappop(events)
        if now > last_arrival and not waiting.count:
            break  # every pod has started: only departures are left
        if kind == _ARRIVE:
            if not attempt(index, now):
                waiting.add(pods[index], index)
        else:
            state.release(pods[index], node, gpus)
            while (queued := waiting.next_fitting(state, node)) is not None:  # only the freed node changed
                attempt(queued, now)
        trail.append((now, state.allocated_milli, waiting.count))
    cpu_us = 1e6 * (time.process_time() - began) / max(1, attempts)
    busy = float(np.percentile(arrive, 1))  # the trace's first weeks are nearly empty
    return _summary(spec.policy, state, trail, busy, last_arrival, wait[~np.isnan(wait)], waiting.count, cpu_us)


def _summary(
    policy: str,
    state: ShareState,
    trail: list[tuple[float, int, int]],
    busy: float,
    end: float,
    waits: np.ndarray,
    never: int,
    cpu_us: float,
) -> ReplayPolicy:
    """The mean over the arrival window [0, end]; the timeline from `busy` until the last pod started."""
    times = np.array([t for t, _, _ in trail])
    allocated = np.array([a for _, a, _ in trail], dtype=np.float64) * 100.0 / state.capacity_milli
    pending = np.array([w for _, _, w in trail])
    inside = times <= end
    spans = np.diff(np.append(times[inside], end))
    mean = float((allocated[inside] * spans).sum() / spans.sum()) if spans.sum() else float(allocated[inside].mean())
    samples = np.linspace(busy, times[-1], TIMELINE_POINTS)
    at = np.clip(np.searchsorted(times, samples, side="right") - 1, 0, times.size - 1)
    return ReplayPolicy(
        policy=share_policy(policy).label,
        mean_allocation_pct=round(mean, 4),
        last_arrival_pct=round(float(allocated[inside][-1]), 4),
        peak_allocation_pct=round(float(allocated.max()), 4),
        waited=int((waits > 0).sum()),
        mean_wait_s=round(float(waits.mean()), 1) if waits.size else 0.0,
        p95_wait_s=round(float(np.percentile(waits, 95)), 1) if waits.size else 0.0,
        max_wait_s=round(float(waits.max()), 1) if waits.size else 0.0,
        never_placed=never,
        decision_us=round(cpu_us, 1),
        timeline=[
            TimelinePoint(
                seconds=round(float(t), 3), allocation_pct=round(float(allocated[i]), 3), pending=int(pending[i])
            )
            for t, i in zip(samples, at, strict=True)
        ],
    )


def bench_replay(
    trace: str,
    policies: list[str],
    data_dir: str | None = None,
    nodes_file: str | None = None,
    node_count: int | None = None,
    seed: int = 42,
    speedup: float = 1.0,
    workers: int = 1,
    ray: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayBench:
    node_path, (pod_path,) = trace_files([trace], data_dir, nodes_file)
    nodes, file = str(node_path), str(pod_path)
    specs = [
        ReplaySpec(trace=file, nodes=nodes, node_count=node_count, policy=p, seed=seed, speedup=speedup)
        for p in policies
    ]
    arrive, _ = _times(specs[0])  # bad input fails here, before any worker starts
    prepared = prepare(file, nodes, node_count)
    results = fan_out(_replay, specs, workers, ray, progress)
    return ReplayBench(
        trace=prepared.name,
        nodes=len(prepared.cluster.nodes),
        gpus=sum(node.gpu.count for node in prepared.cluster.nodes if node.gpu),
        pods=len(prepared.table.pods),
        seconds=round(float(arrive.max()), 3),
        speedup=speedup,
        policies=results,
        executor=executor_name(workers, ray),
    )


def write_replay(result: ReplayBench, out: Path, plot: Callable[[ReplayBench, IO[bytes]], None]) -> list[str]:
    """replay.csv (the timeline per policy), replay.json and replay.png in `out`."""
    make_folder(out)
    rows = out / "replay.csv"
    lines = ["policy,seconds,allocation_pct,pending"]
    for p in result.policies:
        lines += [f"{p.policy},{point.seconds},{point.allocation_pct},{point.pending}" for point in p.timeline]
    return write_plot_and_document(result, out, "replay", (rows, "\n".join(lines) + "\n"), plot)
