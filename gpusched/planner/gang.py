"""Training jobs on a virtual clock: what the default scheduler does to gangs, and what gang admission does.

pod mode is kube-scheduler: pods of queued jobs interleave one at a time and each one that fits is bound; a job
runs only when all its pods are bound. gang mode admits a job's pods together: with timeout 0 a job that does not
fit completely gives everything back at once (Kueue admission); with a timeout it may hold a partial reservation
that long (a coscheduling PodGroup's scheduleTimeoutSeconds), then releases it and goes to the back of the queue.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from ..errors import InputError
from ..models.cluster import Cluster
from ..models.workload import Job
from .place import Placer
from .ranking import Ranking
from .scheduler.framework import Diagnosis
from .scheduler.plugins.gpudevices import GpuChoice
from .state import ClusterState

__all__ = ["Mode", "JobOutcome", "Deadlock", "GangReport", "simulate"]

Mode = Literal["pod", "gang"]


class JobOutcome(BaseModel):
    job: str
    arrival: float
    start: float | None
    finish: float | None
    pods_placed: int
    pods: int
    never_fits: bool = False  # the job does not fit even on the empty cluster


class Deadlock(BaseModel):
    time: float
    gpus_held: int
    held_by: dict[str, int]  # job -> pods bound


class GangReport(BaseModel):
    mode: Mode
    timeout: float
    policy: str
    jobs: list[JobOutcome]
    makespan: float | None  # None unless every job finished
    idle_gpu_hours: float  # GPUs held by jobs that were not running, over time
    deadlock: Deadlock | None


@dataclass
class _Run:
    job: Job
    bound: list[tuple[str, GpuChoice]] = field(default_factory=list)
    start: float | None = None
    finish: float | None = None
    deadline: float | None = None
    never_fits: bool = False

    @property
    def complete(self) -> bool:
        return len(self.bound) == self.job.pods

    @property
    def gpus_held(self) -> int:
        return len(self.bound) * self.job.gpus_per_pod


def _confined(job: Job) -> bool:
    """A gang whose pods must share one NVLink domain (a lone pod is always in one)."""
    return job.nvlink_domain and job.pods > 1


class _Simulator:
    def __init__(self, cluster: Cluster, mode: Mode, timeout: float, policy: Ranking) -> None:
        self.cluster = cluster
        self.placer = Placer(ClusterState.from_cluster(cluster), "gpu", policy)
        self.mode = mode
        self.domain_of = cluster.domain_of()
        self.domains: dict[str, set[str]] = {}
        for node, domain in self.domain_of.items():
            self.domains.setdefault(domain, set()).add(node)
        self.timeout = timeout
        self.events: list[tuple[float, int, str, _Run]] = []
        self.queue: list[_Run] = []
        self.running = 0
        self.idle_gpu_seconds = 0.0
        self._sequence = 0

    def push(self, time: float, kind: str, run: _Run) -> None:
        self._sequence += 1
        heapq.heappush(self.events, (time, self._sequence, kind, run))

    def fits_empty(self, job: Job) -> bool:
        trial = Placer(ClusterState.from_cluster(self.cluster), "gpu", self.placer.policy)
        if not _confined(job):
            return self._fill(trial, job, []) == job.pods
        for members in self.domains.values():
            bound: list[tuple[str, GpuChoice]] = []
            if self._fill(trial, job, bound, members) == job.pods:
                return True
            for name, option in bound:
                trial.release(name, job, option.node)
        return False

    @staticmethod
    def _fill(placer: Placer, job: Job, bound: list[tuple[str, GpuChoice]], within: set[str] | None = None) -> int:
        """Bind the job's remaining pods while they fit (inside `within`); returns how many are bound."""
        while len(bound) < job.pods:
            option = placer.best(job, job.gpus_per_pod, within)
            if isinstance(option, Diagnosis):
                break
            name = f"{job.name}-{len(bound)}"
            placer.bind(name, job, option)
            bound.append((name, option))
        return len(bound)

    def within(self, run: _Run) -> set[str] | None:
        """Where the run's next pod may go: a domain job's pods follow its first pod's NVLink domain."""
        if not _confined(run.job) or not run.bound:
            return None
        return self.domains[self.domain_of[run.bound[0][1].node.name]]

    def bind_next(self, run: _Run) -> bool:
        option = self.placer.best(run.job, run.job.gpus_per_pod, self.within(run))
        if isinstance(option, Diagnosis):
            return False
        name = f"{run.job.name}-{len(run.bound)}"
        self.placer.bind(name, run.job, option)
        run.bound.append((name, option))
        return True

    def bind_gang(self, run: _Run) -> None:
        """Bind as much of the gang as fits; a domain job with nothing bound yet tries each NVLink domain (the
        policy's first choice first) and keeps the first that takes it whole, else the one that took most."""
        if not _confined(run.job) or run.bound:
            self._fill(self.placer, run.job, run.bound, self.within(run))
            return
        first = self.placer.best(run.job, run.job.gpus_per_pod)
        if isinstance(first, Diagnosis):
            return
        preferred = self.domain_of[first.node.name]
        order = [preferred] + [d for d in self.domains if d != preferred]
        most: tuple[int, str] = (0, preferred)
        for domain in order:
            if self._fill(self.placer, run.job, run.bound, self.domains[domain]) == run.job.pods:
                return
            most = max(most, (len(run.bound), domain), key=lambda entry: entry[0])
            self.release(run)
        if self.timeout > 0:  # hold a partial reservation where most of the gang fitted
            self._fill(self.placer, run.job, run.bound, self.domains[most[1]])

    def release(self, run: _Run) -> None:
        for name, option in run.bound:
            self.placer.release(name, run.job, option.node)
        run.bound = []
        run.deadline = None

    def start(self, run: _Run, now: float) -> None:
        run.start = now
        self.queue.remove(run)
        self.running += 1
        assert run.job.duration is not None  # simulate refuses a job without one
        self.push(now + run.job.duration, "finish", run)

    def schedule(self, now: float) -> None:
        if self.mode == "pod":
            progress = True
            while progress:
                progress = False
                for run in self.queue:
                    if not run.complete and self.bind_next(run):
                        progress = True
        else:
            for run in self.queue:
                self.bind_gang(run)
                if run.bound and not run.complete:
                    if self.timeout <= 0:
                        self.release(run)
                    elif run.deadline is None:
                        run.deadline = now + self.timeout
                        self.push(run.deadline, "timeout", run)
        for run in [run for run in self.queue if run.complete]:
            self.start(run, now)

    def handle(self, kind: str, run: _Run, now: float) -> None:
        if kind == "arrival":
            run.never_fits = not self.fits_empty(run.job)
            if not run.never_fits:
                self.queue.append(run)
        elif kind == "finish":
            run.finish = now
            self.running -= 1
            self.release(run)
        elif run.start is None and run.deadline == now:  # a partial reservation timed out
            self.release(run)
            self.queue.remove(run)
            self.queue.append(run)

    def held_idle(self) -> int:
        return sum(run.gpus_held for run in self.queue)

    def run(self, jobs: list[Job]) -> tuple[list[_Run], Deadlock | None]:
        runs = [_Run(job) for job in jobs]
        for run in runs:
            self.push(run.job.arrival, "arrival", run)
        now = 0.0
        stalled = 0  # timeouts in a row with nothing running and nothing started: reservations only swapping
        while self.events:
            time = self.events[0][0]
            self.idle_gpu_seconds += self.held_idle() * (time - now)
            now = time
            kinds = set()
            while self.events and self.events[0][0] == now:
                _, _, kind, run = heapq.heappop(self.events)
                self.handle(kind, run, now)
                kinds.add(kind)
            started = self.running
            self.schedule(now)
            stalled = stalled + 1 if kinds == {"timeout"} and self.running == started == 0 else 0
            if self.queue and not self.running and self._only_timeouts_left() and stalled > len(self.queue):
                return runs, self._deadlock(now)
            if self.queue and not self.events:
                return runs, self._deadlock(now)
        return runs, None

    def _only_timeouts_left(self) -> bool:
        return all(kind == "timeout" for _, _, kind, _ in self.events)

    def _deadlock(self, now: float) -> Deadlock:
        held = {run.job.name: len(run.bound) for run in self.queue if run.bound}
        return Deadlock(time=now, gpus_held=self.held_idle(), held_by=held)


def simulate(
    cluster: Cluster, jobs: list[Job], mode: Mode = "gang", timeout: float = 0.0, policy: Ranking = "binpack"
) -> GangReport:
    if mode == "pod" and timeout:
        raise InputError("gang", "a timeout applies to mode gang: the default scheduler never gives a bound pod back")
    untimed = [job.name for job in jobs if job.duration is None]
    if untimed:
        raise InputError("jobs", f"the gang simulator runs a clock: give a duration (seconds) to {', '.join(untimed)}")
    simulator = _Simulator(cluster, mode, timeout, policy)
    runs, deadlock = simulator.run(jobs)
    finished = [run.finish for run in runs if run.finish is not None]
    return GangReport(
        mode=mode,
        timeout=timeout,
        policy=policy,
        jobs=[
            JobOutcome(
                job=run.job.name,
                arrival=run.job.arrival,
                start=run.start,
                finish=run.finish,
                pods_placed=run.job.pods if run.start is not None else len(run.bound),
                pods=run.job.pods,
                never_fits=run.never_fits,
            )
            for run in runs
        ],
        makespan=max(finished) if len(finished) == len(runs) else None,
        idle_gpu_hours=simulator.idle_gpu_seconds / 3600,
        deadlock=deadlock,
    )
