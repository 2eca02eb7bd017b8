"""GPU fragmentation as the FGD paper defines it: free GPU milli that the expected workload cannot use.

For a node n and a task class m (g_i the free milli of GPU i):
  m CPU-only, or n's model not allowed, or m does not fit (too few GPUs with g_i ≥ milli_m, or too little cpu):
      F_n(m) = Σ g_i                       (all of the node's free GPU milli is fragment for m)
  m fits:
      F_n(m) = Σ_{g_i < milli_m} g_i       (the GPUs too full for m)
F_n = Σ_m p_m F_n(m), p_m the popularity of m in the target workload: the most popular classes of the trace that
together cover ≥ 95% of its pods, renormalised (the simulator's typical pods, CPU-only pods included).

F_n counts CPU only through "m does not fit" and memory not at all: a node with eight free GPUs and CPU for one pod
counts no fragment. `stranded` adds what that misses: the free GPU milli that the node's free CPU and memory cannot
feed at the expected GPU pods' CPU and memory per GPU milli. Where CPU is short (many CPU-only pods, CPU-hungry GPU
pods) this is where GPUs are lost.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .state import PodTable, ShareState

__all__ = ["DEFAULT_COVERAGE", "TargetWorkload", "target_workload"]

DEFAULT_COVERAGE = 0.95


@dataclass(frozen=True)
class TargetWorkload:
    """The expected task classes as arrays: cpu, GPUs, milli, popularity and node access per class."""

    cpu: np.ndarray  # (M,) GPU classes only
    gpus: np.ndarray
    milli: np.ndarray
    popularity: np.ndarray
    access: np.ndarray  # (M, nodes)
    cpu_only: float  # popularity of the CPU-only classes together
    levels: np.ndarray  # distinct milli values
    level_of: np.ndarray  # (M,) index into levels
    cpu_per_milli: float  # CPU milli the expected GPU pods ask per GPU milli (popularity-weighted)
    memory_per_milli: float  # MiB likewise
    cpu_scarce: bool  # the expected pods, CPU-only ones included, ask more CPU per GPU milli than the cluster has

    def frag(self, left: np.ndarray, cpu: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """F_n for S hypothetical node states: free milli per GPU (S, G), free cpu (S,), which node each is (S,)."""
        total = left.sum(axis=1)
        if not self.milli.size:
            return self.cpu_only * total
        fits = left[:, None, :] >= self.levels[None, :, None]  # (S, D, G)
        count = fits.sum(axis=2)[:, self.level_of]  # GPUs with room for the class
        room = (fits * left[:, None, :]).sum(axis=2)[:, self.level_of]
        ok = (count >= self.gpus) & (cpu[:, None] >= self.cpu) & self.access[:, nodes].T
        per_class = np.where(ok, total[:, None] - room, total[:, None])
        return per_class @ self.popularity + self.cpu_only * total

    def stranded(self, left: np.ndarray, cpu: np.ndarray, memory: np.ndarray | None = None) -> np.ndarray:
        """Free GPU milli beyond what the free CPU (and memory, when given) can feed at the workload's ratios:
        (S, G), (S,), (S,) -> (S,)."""
        total = left.sum(axis=1)
        fed = np.full(total.shape, np.inf)
        if self.cpu_per_milli:
            fed = cpu / self.cpu_per_milli
        if memory is not None and self.memory_per_milli:
            fed = np.minimum(fed, memory / self.memory_per_milli)
        return np.maximum(0.0, total - fed)


def target_workload(table: PodTable, state: ShareState, coverage: float = DEFAULT_COVERAGE) -> TargetWorkload:
    """The classes that cover `coverage` of the trace's pods, most popular first, popularity renormalised."""
    counts = Counter(pod.klass for pod in table.pods)
    memory = Counter[int]()
    for pod in table.pods:
        memory[pod.klass] += pod.memory
    # most popular first; equal counts: the larger class first, as the simulator sorts them
    order = sorted(
        counts, key=lambda k: (counts[k], table.classes[k][0], table.classes[k][2], table.classes[k][1]), reverse=True
    )
    chosen, covered = [], 0
    for klass in order:
        chosen.append(klass)
        covered += counts[klass]
        if covered >= coverage * len(table.pods):
            break
    weights = {k: counts[k] / covered for k in chosen}
    gpu_classes = [k for k in chosen if table.classes[k][1] > 0]
    cpu, gpus, milli, spec = (np.array([table.classes[k][i] for k in gpu_classes], dtype=np.int64) for i in range(4))
    levels, level_of = np.unique(milli, return_inverse=True)
    popularity = np.array([weights[k] for k in gpu_classes], dtype=np.float64)
    asked = float(popularity @ (milli * gpus)) if gpu_classes else 0.0
    cpu_asked = sum(weights[k] * table.classes[k][0] for k in chosen)  # CPU-only classes included
    memory_asked = sum(weights[k] * memory[k] / counts[k] for k in gpu_classes)  # a class's mean memory
    cluster_ratio = float(state.cpu_capacity.sum()) / state.capacity_milli if state.capacity_milli else 0.0
    return TargetWorkload(
        cpu=cpu,
        gpus=gpus,
        milli=milli,
        popularity=popularity,
        access=state.access[spec] if gpu_classes else np.zeros((0, state.size), dtype=bool),
        cpu_only=sum(weights[k] for k in chosen if table.classes[k][1] == 0),
        levels=levels.astype(np.int64),
        level_of=level_of.reshape(-1),
        cpu_per_milli=float(popularity @ cpu) / asked if asked else 0.0,
        memory_per_milli=memory_asked / asked if asked else 0.0,
        cpu_scarce=bool(asked) and cpu_asked / asked >= cluster_ratio,
    )
