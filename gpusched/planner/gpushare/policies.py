"""Share policies: the online placement rules of the milli model (the FGD paper's experiment), behind one interface
(score the feasible nodes, pick the GPUs) and one registry, SHARE_POLICIES. They are not `place`'s rankings
(`planner/ranking.py`): binpack, spread and topology here are those rankings carried over to GPUs shared in milli.

The FGD paper's six are implemented from their definitions in the paper and its simulator
(hkust-adsl/kubernetes-scheduler-simulator), integer scores included: kube-scheduler scores are integers 0..100,
and the simulator's scheduler gives a tie to the smallest node name, names it prefixes with a random permutation
once per run. So ties go to a random but fixed node order, which packs (every tied pod lands on the same node),
and the truncation is part of each policy's behaviour. gpusched's binpack, spread and topology rank as they do
in `place`, ties to the node name; here a node has no NVLink islands, so topology keeps whole GPUs whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...scenarios.openb import MILLI
from .frag import TargetWorkload
from .state import PodTable, SharePod, ShareState

__all__ = [
    "FGD_POLICIES",
    "GPUSCHED_POLICIES",
    "SHARE_POLICIES",
    "Choice",
    "PolicyArgs",
    "PolicyRegistry",
    "PolicySpec",
    "SharePolicy",
    "share_policy",
]

MAX_SPEC_CPU = 128000  # the simulator's normalisers: the largest node's cpu and GPU milli
MAX_SPEC_GPU = 8 * MILLI
MAX_SCORE = 100

Choice = tuple[int, tuple[int, ...]]  # node, GPUs


def _tightest(state: ShareState, pod: SharePod, node: int) -> tuple[int, ...]:
    """Best fit: a sharing pod goes to the fitting GPU with the least milli left (lowest index on ties)."""
    if pod.shares:
        left = state.gpu_left[node]
        return (int(np.argmin(np.where(left >= pod.milli, left, MILLI + 1))),)
    return state.whole_gpus(node, pod.gpus)


def _loosest(state: ShareState, pod: SharePod, node: int) -> tuple[int, ...]:
    """Worst fit: a sharing pod goes to the GPU with the most milli left."""
    if pod.shares:
        return (int(np.argmax(state.gpu_left[node])),)
    return state.whole_gpus(node, pod.gpus)


class PolicyArgs(BaseModel):
    """A share policy's typed arguments (`name:key=value:…` on the command line); none by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SharePolicy:
    """Scores feasible nodes (higher is better); the best wins, ties to the node first in `order`."""

    name: ClassVar[str]
    Args: ClassVar[type[PolicyArgs]] = PolicyArgs
    shuffled_ties: ClassVar[bool] = True  # ties in a random node order drawn per run (else by node name)

    def __init__(
        self,
        state: ShareState,
        table: PodTable,
        target: TargetWorkload,
        rng: np.random.Generator,
        args: PolicyArgs | None = None,
    ) -> None:
        self.state = state
        self.table = table
        self.target = target
        self.args = args if args is not None else self.Args()
        self.order = rng.permutation(state.size) if self.shuffled_ties else np.arange(state.size)

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def gpus(self, pod: SharePod, node: int, rng: np.random.Generator) -> tuple[int, ...]:
        return _tightest(self.state, pod, node)

    def choose(self, pod: SharePod, rng: np.random.Generator) -> Choice | None:
        nodes = np.flatnonzero(self.state.feasible(pod))
        if not nodes.size:
            return None
        scores = self.scores(pod, nodes)
        best = nodes[scores == scores.max()]
        node = int(best[np.argmin(self.order[best])])
        return node, self.gpus(pod, node, rng)


class Random(SharePolicy):
    """A random feasible node; a sharing pod takes a random GPU with room."""

    name = "Random"

    def choose(self, pod: SharePod, rng: np.random.Generator) -> Choice | None:
        nodes = np.flatnonzero(self.state.feasible(pod))
        if not nodes.size:
            return None
        node = int(nodes[rng.integers(nodes.size)])
        return node, self.gpus(pod, node, rng)

    def gpus(self, pod: SharePod, node: int, rng: np.random.Generator) -> tuple[int, ...]:
        if pod.shares:
            fitting = np.flatnonzero(self.state.gpu_left[node] >= pod.milli)
            return (int(fitting[rng.integers(fitting.size)]),)
        return self.state.whole_gpus(node, pod.gpus)


class DotProd(SharePolicy):
    """Tetris' alignment score on (cpu, GPU milli), normalised by the largest node; the smaller product wins."""

    name = "DotProd"

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        s = self.state
        dot = (s.cpu_left[nodes] / MAX_SPEC_CPU) * (pod.cpu / MAX_SPEC_CPU)
        dot += (s.gpu_total_left[nodes] / MAX_SPEC_GPU) * (pod.total_milli / MAX_SPEC_GPU)
        return np.floor(MAX_SCORE * (1 - dot / 2))


class GpuClustering(SharePolicy):
    """Pods of one sharing class together: nodes holding only that class, then mixed, then empty, then others."""

    name = "GpuClustering"

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        if pod.gpus == 0:
            return np.zeros(nodes.size)
        s = self.state
        present = s.affinity[nodes, 1:] > 0  # column 0 counts CPU-only pods, which carry no affinity
        classes = present.sum(axis=1)
        mine = present[:, pod.tag - 1]
        base = (MAX_SCORE // 4) * (MAX_SPEC_GPU - s.gpu_total_left[nodes]) // MAX_SPEC_GPU
        tier = np.where(mine, np.where(classes == 1, 3, 2), np.where(classes == 0, 1, 0))
        return base + tier * (MAX_SCORE // 4)


class GpuPacking(SharePolicy):
    """Already-shared GPUs first, then free GPUs of used nodes, then empty nodes."""

    name = "GpuPacking"

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        if pod.gpus == 0:
            return np.zeros(nodes.size)
        s = self.state
        free = s.gpu_free_whole[nodes]
        empty = np.maximum(MAX_SCORE // 3 - free, free)
        if pod.shares:
            left = s.gpu_left[nodes]
            tightest = np.where(left >= pod.milli, left, MILLI + 1).min(axis=1)
            shared = np.maximum(MAX_SCORE - (tightest * 100 // MILLI) // 10, MAX_SCORE // 2)
            used = np.where(tightest == MILLI, np.maximum(MAX_SCORE // 2 - 1, MAX_SCORE // 3), shared)
        else:
            used = np.full(nodes.size, max(MAX_SCORE // 2 - pod.gpus, MAX_SCORE // 3))
        return np.where(free == s.gpus[nodes], empty, used)


class BestFit(SharePolicy):
    """The least cpu and GPU milli left over, weighted ½ each, normalised by the largest node."""

    name = "BestFit"

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        s = self.state
        waste = 0.5 * (s.cpu_left[nodes] - pod.cpu) / MAX_SPEC_CPU
        waste += 0.5 * (s.gpu_total_left[nodes] - pod.total_milli) / MAX_SPEC_GPU
        return np.floor((1.0 - waste) * MAX_SCORE)


Judge = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (F now (B,), F after per GPU (B, G)) -> scores (B, G)
Measure = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]  # GPU milli, cpu, memory, nodes


class FragmentationCache:
    """The best score (and GPU) of each node for each pod class, judged from the fragmentation before and after,
    kept until the node changes.

    A node's fragmentation changes only when a pod lands on it, so a decision recomputes only the feasible nodes
    that changed since its pod class was last scored, all of them in one vectorised batch.
    """

    def __init__(
        self, state: ShareState, table: PodTable, target: TargetWorkload, judge: Judge, measure: Measure | None = None
    ) -> None:
        self.state = state
        self.measure = measure or (lambda left, cpu, memory, nodes: target.frag(left, cpu, nodes))
        self.judge = judge
        self.current = self.measure(state.gpu_left, state.cpu_left, state.memory_left, np.arange(state.size))
        shape = (len(table.alike), state.size)
        self.score = np.zeros(shape)
        self.gpu = np.zeros(shape, dtype=np.int64)
        self.valid = np.zeros(shape, dtype=bool)
        self.seen = 0

    def _sync(self) -> None:
        changed = self.state.changed[self.seen :]
        if changed:
            nodes = np.unique(changed)
            self.valid[:, nodes] = False
            s = self.state
            self.current[nodes] = self.measure(s.gpu_left[nodes], s.cpu_left[nodes], s.memory_left[nodes], nodes)
            self.seen = len(self.state.changed)

    def best(self, pod: SharePod, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per node: the best score for the pod, and the GPU a sharing pod would take for it."""
        self._sync()
        stale = nodes[~self.valid[pod.alike, nodes]]
        if stale.size:
            scores = self.judge(self.current[stale], self._after(pod, stale))
            first = scores.argmax(axis=1)
            self.score[pod.alike, stale] = scores[np.arange(stale.size), first]
            self.gpu[pod.alike, stale] = first
            self.valid[pod.alike, stale] = True
        return self.score[pod.alike, nodes], self.gpu[pod.alike, nodes]

    def _after(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        """(nodes, G): fragmentation after placing the pod; a sharing pod per GPU (inf where it has no room)."""
        s = self.state
        left = s.gpu_left[nodes]
        width = left.shape[1]
        cpu = s.cpu_left[nodes] - pod.cpu
        memory = s.memory_left[nodes] - pod.memory
        if not pod.shares:
            free = left == MILLI
            taken = free & (np.cumsum(free, axis=1) <= pod.gpus) if pod.gpus else np.zeros_like(free)
            after = self.measure(np.where(taken, 0, left), cpu, memory, nodes)
            return after[:, None]
        options = np.repeat(left[:, None, :], width, axis=1)
        diagonal = np.arange(width)
        options[:, diagonal, diagonal] -= pod.milli
        after = self.measure(
            options.reshape(-1, width), np.repeat(cpu, width), np.repeat(memory, width), np.repeat(nodes, width)
        )
        return np.where(left >= pod.milli, after.reshape(-1, width), np.inf)


def fgd_score(current: np.ndarray, after: np.ndarray) -> np.ndarray:
    """⌊100·sigmoid((F_before − F_after)/1000)⌋, as the simulator scores; −1 where the pod has no room."""
    with np.errstate(over="ignore"):
        score = np.floor(1.0 / (1.0 + np.exp((after - current[:, None]) / 1000)) * MAX_SCORE)
    return np.where(np.isinf(after), -1.0, score)


class Fgd(SharePolicy):
    """Fragmentation Gradient Descent: the node (and GPU) where the expected fragmentation grows least.

    A sharing pod takes the first GPU with the node's best score.
    """

    name = "FGD"

    def __init__(
        self,
        state: ShareState,
        table: PodTable,
        target: TargetWorkload,
        rng: np.random.Generator,
        args: PolicyArgs | None = None,
    ) -> None:
        super().__init__(state, table, target, rng, args)
        self.cache = FragmentationCache(state, table, target, fgd_score, self.measure)
        self._gpus = np.zeros(0, dtype=np.int64)
        self._nodes = np.zeros(0, dtype=np.int64)

    def measure(self, left: np.ndarray, cpu: np.ndarray, memory: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """The fragmentation a decision minimises: FGD's own (memory plays no part in it)."""
        return self.target.frag(left, cpu, nodes)

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        scores, self._gpus = self.cache_for(pod).best(pod, nodes)
        self._nodes = nodes
        return scores

    def cache_for(self, pod: SharePod) -> FragmentationCache:
        return self.cache

    def gpus(self, pod: SharePod, node: int, rng: np.random.Generator) -> tuple[int, ...]:
        if pod.shares:
            return (int(self._gpus[np.searchsorted(self._nodes, node)]),)
        return self.state.whole_gpus(node, pod.gpus)


class GpuschedArgs(PolicyArgs):
    strand: float = Field(
        1.0, ge=0, le=100, allow_inf_nan=False, description="fragment milli per GPU milli stranded by CPU"
    )


class Gpusched(Fgd):
    """gpusched's own: FGD on a fragmentation measure over GPU milli, CPU and memory together.

    The measure is FGD's F_n plus `strand` × the free GPU milli that the node's free CPU and memory cannot feed at
    the expected GPU pods' CPU and memory per GPU milli (`TargetWorkload.stranded`). FGD alone sees a node with eight
    free GPUs and CPU for one pod as unfragmented for every class that still fits once, so it lets CPU-only and
    CPU-hungry pods eat the CPU of GPU-rich nodes; this measure makes that cost visible. Where the workload, CPU-only
    pods included, asks more CPU per GPU than the cluster has (`TargetWorkload.cpu_scarce`), CPU-only pods are placed
    on FGD's own measure instead: CPU runs out everywhere then, and steering them to the nodes whose CPU looks spare
    at the mean ratio only moves the shortage there, while FGD spreads them over the nodes where no class stops
    fitting (a smooth stand-in, the ratio scaled down by the cluster's CPU over the workload's, did worse where the
    switch acts; it never acts on the five shipped traces). Score, GPU choice and ties are FGD's. Everything comes
    from the target workload and the cluster, nothing from the arrival order; `strand` was chosen by
    leave-one-trace-out on the five shipped traces.
    """

    name = "gpusched"

    Args = GpuschedArgs

    def __init__(
        self,
        state: ShareState,
        table: PodTable,
        target: TargetWorkload,
        rng: np.random.Generator,
        args: PolicyArgs | None = None,
    ) -> None:
        args = GpuschedArgs() if args is None else args
        if not isinstance(args, GpuschedArgs):
            raise TypeError(f"gpusched takes GpuschedArgs, not {type(args).__name__}")
        self.strand = args.strand  # before FGD's cache measures the nodes
        super().__init__(state, table, target, rng, args)
        self.cpu_only_cache = FragmentationCache(state, table, target, fgd_score) if target.cpu_scarce else None

    def measure(self, left: np.ndarray, cpu: np.ndarray, memory: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        return self.target.frag(left, cpu, nodes) + self.strand * self.target.stranded(left, cpu, memory)

    def cache_for(self, pod: SharePod) -> FragmentationCache:
        return self.cpu_only_cache if self.cpu_only_cache is not None and not pod.gpus else self.cache


class Binpack(SharePolicy):
    """gpusched's binpack: the least GPU milli left on the node afterwards."""

    name = "binpack"
    shuffled_ties = False

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        return -(self.state.gpu_total_left[nodes] - pod.total_milli).astype(np.float64)


class Spread(SharePolicy):
    """gpusched's spread: the most GPU milli left afterwards; a sharing pod takes the emptiest GPU."""

    name = "spread"
    shuffled_ties = False

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        return (self.state.gpu_total_left[nodes] - pod.total_milli).astype(np.float64)

    def gpus(self, pod: SharePod, node: int, rng: np.random.Generator) -> tuple[int, ...]:
        return _loosest(self.state, pod, node)


class Topology(SharePolicy):
    """gpusched's topology without islands: the fewest whole GPUs left free on the node, then the least milli."""

    name = "topology"
    shuffled_ties = False

    def scores(self, pod: SharePod, nodes: np.ndarray) -> np.ndarray:
        s = self.state
        whole = s.gpu_free_whole[nodes]
        if pod.shares:
            left = s.gpu_left[nodes]
            breaks = np.where(left >= pod.milli, left, MILLI + 1).min(axis=1) == MILLI
            whole = whole - breaks
        else:
            whole = whole - pod.gpus
        return -(whole * (MAX_SPEC_GPU + MILLI) + s.gpu_total_left[nodes] - pod.total_milli).astype(np.float64)


P = TypeVar("P", bound=type[SharePolicy])


class PolicyRegistry:
    """Share policies by name, case-insensitively; a name registered twice is refused (a policy shadowing another
    would change every benchmark that names it)."""

    def __init__(self) -> None:
        self._policies: dict[str, type[SharePolicy]] = {}

    def register(self, policy: P) -> P:
        key = policy.name.lower()
        if key in self._policies:
            raise ValueError(f"share policy {policy.name!r} is registered twice ({self._policies[key].__qualname__})")
        self._policies[key] = policy
        return policy

    def __iter__(self) -> Iterator[str]:
        return (policy.name for policy in self._policies.values())

    def __len__(self) -> int:
        return len(self._policies)

    def get(self, name: str) -> type[SharePolicy]:
        found = self._policies.get(name.lower())
        if found is None:
            raise ValueError(f"unknown policy {name!r}: expected one of {', '.join(self)}")
        return found

    def spec(self, text: str) -> PolicySpec:
        """`name` or `name:key=value:…`, the values checked against the policy's Args (ValueError naming them)."""
        name, *pairs = (part.strip() for part in text.strip().split(":"))
        policy = self.get(name)
        given: dict[str, str] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"policy {policy.name}: expected key=value, got {pair!r}")
            if key.strip() in given:
                raise ValueError(f"policy {policy.name}: {key.strip()} given twice")
            given[key.strip()] = value.strip()
        try:
            args = policy.Args.model_validate(given)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in error.errors())
            fields = ", ".join(policy.Args.model_fields) or "none"
            raise ValueError(f"policy {policy.name}: {problems} (arguments: {fields})") from None
        return PolicySpec(policy, args)


@dataclass(frozen=True)
class PolicySpec:
    """A share policy with its arguments: what a run names (`label`) and builds."""

    policy: type[SharePolicy]
    args: PolicyArgs

    @property
    def label(self) -> str:
        """The name, then each argument set away from its default, in the Args' order: `gpusched:strand=0.5`."""
        given = self.args.model_dump(exclude_defaults=True)
        return ":".join(
            [
                self.policy.name,
                *(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}" for key, value in given.items()),
            ]
        )

    def build(
        self, state: ShareState, table: PodTable, target: TargetWorkload, rng: np.random.Generator
    ) -> SharePolicy:
        return self.policy(state, table, target, rng, self.args)


SHARE_POLICIES = PolicyRegistry()
FGD_POLICIES: tuple[type[SharePolicy], ...] = (Random, DotProd, GpuClustering, GpuPacking, BestFit, Fgd)
GPUSCHED_POLICIES: tuple[type[SharePolicy], ...] = (Binpack, Spread, Topology, Gpusched)
for _policy in FGD_POLICIES + GPUSCHED_POLICIES:
    SHARE_POLICIES.register(_policy)


def share_policy(text: str) -> PolicySpec:
    """A registered share policy with its arguments, from `name` or `name:key=value:…`."""
    return SHARE_POLICIES.spec(text)
