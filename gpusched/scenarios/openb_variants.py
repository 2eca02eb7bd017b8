"""Seeded variants of an openb pod list that shift one share of the workload, the way the trace family does.

The published family (cpu050…cpu200, gpushare40…80, multigpu20…50, gpuspec20…33) is a base trace with one share
moved; a policy tuned on some of them is judged on the rest. These transforms move the same shares, to any level
(well beyond the shipped traces too), so a policy can be checked on traces it was never tuned on:

- `cpu-heavy:L`    CPU-only pods are a share L of all pods (cpu050 is 0.05): CPU-only pods copied or dropped.
- `cpu-share:L`    CPU-only pods ask for a share L of all requested CPU (the default trace is 0.22, cpu050 0.09):
                    CPU-only pods' requests doubled (up to the largest node) or halved, the pod count kept.
- `sharing-heavy:L` GPU-sharing pods ask for a share L of the GPU milli (gpushare40 is 0.4): whole-GPU pods turned
                    into copies of sharing pods (or the reverse), so the pod count stays.
- `multi-gpu-heavy:L` multi-GPU pods ask for a share L of the GPUs (multigpu20 is 0.2): multi-GPU pods copied.
- `gpu-model-constrained:L` a share L of the GPU pods may use one GPU model only (gpuspec33 is 0.33): the model
                    drawn in proportion to the cluster's GPUs of each model that have room for the pod.

Pods are picked and copied with a generator seeded by the variant, so a variant is the same trace on every run.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .openb import MILLI, OpenbNode, OpenbPod

__all__ = ["VARIANT_KINDS", "UnbuildableVariant", "Variant", "apply_variant", "parse_variant"]

DEFAULT_SEED = 0


class UnbuildableVariant(InputError):
    """The trace has none of the pods a variant moves (no CPU-only pod to copy, say): this trace cannot give it."""


@dataclass(frozen=True)
class Variant:
    kind: str
    level: float
    seed: int = DEFAULT_SEED

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.level:g}" + (f"@{self.seed}" if self.seed != DEFAULT_SEED else "")


def _is_cpu(pod: OpenbPod) -> bool:
    return pod.num_gpu == 0


def _shares(pod: OpenbPod) -> bool:
    return pod.num_gpu == 1 and pod.gpu_milli < MILLI


def _copy(pod: OpenbPod, number: int, **changes: object) -> OpenbPod:
    return pod.model_copy(update={"name": f"{pod.name}-v{number}", **changes})


def _pick(pods: list[OpenbPod], test: Callable[[OpenbPod], bool], what: str) -> list[int]:
    found = [i for i, pod in enumerate(pods) if test(pod)]
    if not found:
        raise UnbuildableVariant("variant", f"the trace has no {what} to copy")
    return found


def _cpu_heavy(pods: list[OpenbPod], level: float, rng: np.random.Generator, _: list[OpenbNode]) -> list[OpenbPod]:
    cpu = _pick(pods, _is_cpu, "CPU-only pod")
    others = len(pods) - len(cpu)
    wanted = round(level * others / (1 - level)) if level < 1 else len(cpu)
    if wanted <= len(cpu):
        dropped = set(rng.choice(cpu, size=len(cpu) - wanted, replace=False).tolist())
        return [pod for i, pod in enumerate(pods) if i not in dropped]
    extra = rng.choice(cpu, size=wanted - len(cpu)).tolist()
    return pods + [_copy(pods[i], n) for n, i in enumerate(extra)]


def _cpu_share(pods: list[OpenbPod], level: float, rng: np.random.Generator, nodes: list[OpenbNode]) -> list[OpenbPod]:
    pods = list(pods)
    cpu = _pick(pods, _is_cpu, "CPU-only pod")
    top = max(node.cpu_milli for node in nodes)
    mine = sum(pods[i].cpu_milli for i in cpu)
    total = sum(pod.cpu_milli for pod in pods)
    grow = mine < level * total
    changed = True
    while changed:  # a pass doubles (or halves) each CPU-only pod once; ends at the largest node (or at 1 milli)
        changed = False
        for i in rng.permutation(cpu).tolist():
            if (mine >= level * total) if grow else (mine <= level * total):
                return pods
            old = pods[i].cpu_milli
            new = min(top, 2 * old) if grow else max(1, old // 2)
            if new != old:
                pods[i] = pods[i].model_copy(update={"cpu_milli": new})
                mine, total, changed = mine + new - old, total + new - old, True
    return pods


def _sharing_heavy(pods: list[OpenbPod], level: float, rng: np.random.Generator, _: list[OpenbNode]) -> list[OpenbPod]:
    pods = list(pods)
    sharing = _pick(pods, _shares, "GPU-sharing pod")
    whole = _pick(pods, lambda p: p.num_gpu > 0 and not _shares(p), "whole-GPU pod")
    shared = sum(pods[i].total_milli for i in sharing)
    total = sum(pod.total_milli for pod in pods)
    more = shared < level * total
    victims = rng.permutation(whole if more else sharing).tolist()
    sources = sharing if more else [i for i in whole if pods[i].num_gpu == 1]
    if not sources:
        raise UnbuildableVariant("variant", "the trace has no one-GPU whole pod to copy")
    for n, victim in enumerate(victims):
        if (shared >= level * total) if more else (shared <= level * total):
            break
        source = pods[int(rng.choice(sources))]
        old, new = pods[victim].total_milli, source.total_milli
        pods[victim] = _copy(source, n)
        total += new - old
        shared += new if more else -old
    return pods


def _multi_gpu_heavy(
    pods: list[OpenbPod], level: float, rng: np.random.Generator, _: list[OpenbNode]
) -> list[OpenbPod]:
    multi = _pick(pods, lambda p: p.num_gpu > 1, "multi-GPU pod")
    gpus = sum(pod.num_gpu for pod in pods)
    many = sum(pods[i].num_gpu for i in multi)
    extra: list[OpenbPod] = []
    while many < level * gpus:
        pod = pods[int(rng.choice(multi))]
        extra.append(_copy(pod, len(extra)))
        many += pod.num_gpu
        gpus += pod.num_gpu
    return pods + extra


def _gpu_model_constrained(
    pods: list[OpenbPod], level: float, rng: np.random.Generator, nodes: list[OpenbNode]
) -> list[OpenbPod]:
    pods = list(pods)
    gpu = _pick(pods, lambda p: p.num_gpu > 0, "GPU pod")
    constrained = sum(1 for i in gpu if pods[i].models)
    free = [i for i in rng.permutation(gpu).tolist() if not pods[i].models]
    for i in free[: max(0, round(level * len(gpu)) - constrained)]:
        pod = pods[i]
        gpus: dict[str, int] = {}
        for node in nodes:
            if node.gpu >= pod.num_gpu and node.cpu_milli >= pod.cpu_milli and node.memory_mib >= pod.memory_mib:
                gpus[node.model] = gpus.get(node.model, 0) + node.gpu
        if gpus:
            models = sorted(gpus)
            weights = np.array([gpus[m] for m in models], dtype=float)
            pods[i] = pod.model_copy(
                update={"models": (models[int(rng.choice(len(models), p=weights / weights.sum()))],)}
            )
    return pods


Transform = Callable[[list[OpenbPod], float, np.random.Generator, list[OpenbNode]], list[OpenbPod]]
VARIANT_KINDS: dict[str, Transform] = {
    "cpu-heavy": _cpu_heavy,
    "cpu-share": _cpu_share,
    "sharing-heavy": _sharing_heavy,
    "multi-gpu-heavy": _multi_gpu_heavy,
    "gpu-model-constrained": _gpu_model_constrained,
}


def parse_variant(text: str) -> Variant:
    """`kind:level` or `kind:level@seed` (level a share in [0, 1))."""
    body, _, seed = text.strip().partition("@")
    kind, _, level = body.partition(":")
    if kind not in VARIANT_KINDS:
        raise InputError(f"variant {text!r}", f"unknown kind {kind!r}: expected one of {', '.join(VARIANT_KINDS)}")
    try:
        share = float(level)
        number = int(seed) if seed else DEFAULT_SEED
    except ValueError:
        raise InputError(f"variant {text!r}", "expected kind:level[@seed] like cpu-heavy:0.3") from None
    if not 0 <= share < 1 or number < 0:
        raise InputError(f"variant {text!r}", "the level is a share in [0, 1) and the seed is not negative")
    return Variant(kind, share, number)


def apply_variant(pods: list[OpenbPod], nodes: list[OpenbNode], variant: Variant) -> list[OpenbPod]:
    """The pod list with one share moved to `variant.level`; the same variant gives the same list every time."""
    rng = np.random.default_rng([variant.seed, zlib.crc32(variant.kind.encode())])
    try:
        return VARIANT_KINDS[variant.kind](list(pods), variant.level, rng, nodes)
    except UnbuildableVariant as error:
        raise UnbuildableVariant(f"variant {variant.label}", error.message) from None
