"""Run independent benchmark tasks in this process, in local processes, or on a Ray cluster; results in task order.

Tasks are small pydantic specs naming files, never data, so a process or a Ray worker loads what it needs once
(and caches it); each task seeds its own generators, so results do not depend on where or in what order it ran.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

from ..errors import require

__all__ = ["LOCAL_RAY", "executor_name", "fan_out"]

Task = TypeVar("Task")
Result = TypeVar("Result")
Progress = Callable[[int, int], None]  # (done, total)
LOCAL_RAY = "local"  # --ray without an address: start a Ray instance on this machine


def executor_name(workers: int, ray: str | None) -> str:
    if ray is not None:
        return "ray" if ray == LOCAL_RAY else f"ray at {ray}"
    return "inline" if workers == 1 else f"{workers} processes"


def fan_out(
    work: Callable[[Task], Result],
    tasks: Sequence[Task],
    workers: int = 1,
    ray: str | None = None,
    progress: Progress | None = None,
) -> list[Result]:
    """`work` over every task: Ray when `ray` is given, else `workers` processes (1: here, in order)."""
    report = progress or (lambda done, total: None)
    report(0, len(tasks))
    if ray is not None:
        return _on_ray(work, tasks, ray, report)
    if workers == 1 or len(tasks) <= 1:
        results = []
        for task in tasks:
            results.append(work(task))
            report(len(results), len(tasks))
        return results
    found: dict[int, Any] = {}
    context = multiprocessing.get_context("forkserver")  # fork from a threaded process (BLAS, OR-tools) may hang
    context.set_forkserver_preload([work.__module__])
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context) as pool:
        futures = {pool.submit(work, task): index for index, task in enumerate(tasks)}
        for future in as_completed(futures):
            found[futures[future]] = future.result()
            report(len(found), len(tasks))
    return [found[index] for index in range(len(tasks))]


def _on_ray(work: Callable[[Task], Result], tasks: Sequence[Task], address: str, report: Progress) -> list[Result]:
    """Ray tasks (the `ray` extra); `local` starts a private instance."""
    ray = require("ray", "ray")
    started = not ray.is_initialized()
    if started:
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        ray.init(address=None if address == LOCAL_RAY else address, **options)
    try:
        remote = ray.remote(work)
        pending = {remote.remote(task): index for index, task in enumerate(tasks)}
        found: dict[int, Any] = {}
        waiting = list(pending)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            found[pending[ready[0]]] = ray.get(ready[0])
            report(len(found), len(tasks))
        return [found[index] for index in range(len(tasks))]
    finally:
        if started:
            ray.shutdown()
