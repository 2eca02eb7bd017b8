"""Benchmarks for preempt and defrag: a generated cluster made busy by placing generated pods, then one question.

The busy cluster is built by gpusched's own `place` (spread, as the default scheduler does), so the running pods
sit where a scheduler would have put them; priorities and team labels are drawn from the seed.
"""

from __future__ import annotations

import random
import time

from pydantic import BaseModel

from ..models.cluster import Cluster
from ..models.workload import Job, Pod
from ..planner.optimize.defrag import DefragReport, defrag, parse_shape
from ..planner.optimize.preempt import PreemptReport, preempt
from ..planner.optimize.solver import SolverConfig
from ..planner.place import place
from ..scenarios.realistic import realistic_cluster
from ..scenarios.synthetic import synthetic_cluster, synthetic_pods

__all__ = ["FILL", "ExplainBench", "RepairBench", "bench_defrag", "bench_explain", "bench_preempt", "busy_cluster"]

PRIORITIES = (0, 0, 10, 50, 1000)  # notebooks and batch mostly; some production pods that never go


class RepairBench(BaseModel):
    command: str
    nodes: int
    running: int
    kinds: int
    feasible: bool
    status: str
    objective: str
    solve_seconds: float
    seconds: float
    cpu_seconds: float = 0.0  # processor time of the same call (every solver thread): what load does not stretch
    time_limit: float = 0.0


FILL = 1.3  # generated pods ask for 1.3 times the exclusive GPUs: spread leaves the nodes nearly full


def busy_cluster(nodes: int, seed: int = 42, fill: float = FILL) -> Cluster:
    """Generated nodes whose exclusive GPUs `fill` times over are asked for by generated pods, placed with spread
    (the pods that do not fit are dropped)."""
    cluster = synthetic_cluster(nodes, seed)
    exclusive = sum(n.gpu.count for n in cluster.nodes if n.gpu and n.gpu.replicas == 1)
    pods = synthetic_pods(int(exclusive * fill / 2.4), seed)  # 2.4: the mean of the generator's sizes
    report = place(cluster, pods, "gpu", "spread")
    rng = random.Random(seed)
    needs = {pod.name: pod for pod in pods}
    data = cluster.model_dump(exclude_unset=True)
    by_name = {node["name"]: node for node in data["nodes"]}
    running = {}
    for result in report.results:
        if result.node is None:
            continue
        pod = needs[result.pod]
        block = by_name[result.node]["gpu"]
        block.setdefault("busy", []).extend(
            {"gpu": g, "pod": pod.name, "memory_gib": pod.memory_gib or 0.0} for g in result.gpus
        )
        running[pod.name] = pod.model_dump(exclude={"name", "gpus"}, exclude_unset=True) | {
            "priority": rng.choice(PRIORITIES),
            "labels": {"team": rng.choice("abcd")},
        }
    data["running"] = running
    data["disruption_budgets"] = [{"name": "team-a", "selector": {"team": "a"}, "max_unavailable": 2}]
    return Cluster.model_validate(data)


def _result(
    command: str,
    nodes: int,
    cluster: Cluster,
    report: PreemptReport | DefragReport,
    objective: str,
    seconds: tuple[float, float],
    config: SolverConfig | None,
) -> RepairBench:
    """One timed run of preempt or defrag, as a benchmark row."""
    return RepairBench(
        command=command,
        nodes=nodes,
        running=len(cluster.running),
        kinds=report.kinds,
        feasible=report.feasible,
        status=report.solve.status if report.solve else "-",
        objective=objective,
        solve_seconds=round(report.solve.seconds, 3) if report.solve else 0.0,
        seconds=round(seconds[0], 3),
        cpu_seconds=round(seconds[1], 3),
        time_limit=(config or SolverConfig()).time_limit,
    )


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(began: tuple[float, float]) -> tuple[float, float]:
    """Wall and processor seconds since `_clock()`."""
    return time.perf_counter() - began[0], time.process_time() - began[1]


def bench_preempt(
    nodes: int, seed: int = 42, pods: int = 2, gpus: int = 8, config: SolverConfig | None = None, fill: float = FILL
) -> RepairBench:
    """Time `preempt` of a priority-100 NVLink job (pods x gpus) on a busy generated cluster."""
    cluster = busy_cluster(nodes, seed, fill)
    job = Job(name="llm", pods=pods, gpus_per_pod=gpus, nvlink=True, priority=100, duration=3600)
    began = _clock()
    report = preempt(cluster, job, config)
    seconds = _since(began)
    cost = report.cost
    objective = (
        "-" if cost is None else f"top priority {cost.highest_priority}, GPUs {cost.units}, victims {cost.victims}"
    )
    return _result(f"preempt {pods}x{gpus} NVLink job", nodes, cluster, report, objective, seconds, config)


def bench_defrag(
    nodes: int,
    seed: int = 42,
    shape: str = "8x2@island",
    max_moves: int | None = None,
    config: SolverConfig | None = None,
    fill: float = FILL,
    realistic: bool = False,
) -> RepairBench:
    """Time `defrag --for shape` on a busy generated cluster (`realistic`: GPUs that differ, half busy)."""
    cluster = realistic_cluster(nodes, seed) if realistic else busy_cluster(nodes, seed, fill)
    began = _clock()
    report = defrag(cluster, parse_shape(shape), max_moves, config)
    seconds = _since(began)
    objective = f"moves {len(report.moves)}, GPUs moved {report.gpus_moved}, target pods {len(report.targets)}"
    if not report.feasible:
        objective = f"no plan: {report.reason}"
    what = f"defrag --for {shape}" + (" (realistic)" if realistic else "")
    return _result(what, nodes, cluster, report, objective, seconds, config)


class ExplainBench(BaseModel):
    nodes: int
    running: int
    fits: bool
    verdict: str
    changes: list[str]
    seconds: float


def bench_explain(
    nodes: int, seed: int = 42, gpus: int = 8, config: SolverConfig | None = None, fill: float = FILL
) -> ExplainBench:
    """Time `explain` of a priority-100 NVLink pod (gpus GPUs) on a busy generated cluster: every planner runs."""
    # CEL and the DRA allocator (behind explain's claims) load only for this benchmark
    from ..planner.explain import explain_pod

    cluster = busy_cluster(nodes, seed, fill)
    pod = Pod(name="llm", gpus=gpus, nvlink=True, priority=100)
    began = time.perf_counter()
    result = explain_pod(cluster, pod, config)
    seconds = time.perf_counter() - began
    return ExplainBench(
        nodes=nodes,
        running=len(cluster.running),
        fits=result.fits,
        verdict=result.capacity.verdict if result.capacity else "-",
        changes=[change.kind for change in result.changes],
        seconds=round(seconds, 3),
    )
