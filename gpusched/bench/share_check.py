"""The independent check of an offline GPU-sharing placement: recomputed pod by pod from the cluster and the pods.

It shares nothing with the code that built the placement (no ShareState, no pattern): a lower bound counts only
the GPU milli of a placement this check accepts.
"""

from __future__ import annotations

from collections import Counter

from ..models.cluster import Cluster
from ..planner.gpushare import SharePod
from ..scenarios.openb import MILLI

__all__ = ["Placed", "check_share_placement"]

Placed = tuple[int, str, tuple[int, ...]]  # (arrival index, node name, GPU indices on that node)


def check_share_placement(
    cluster: Cluster, specs: list[tuple[str, ...]], arrived: list[SharePod], placed: list[Placed]
) -> list[str]:
    """Every broken rule, in placement order (empty: the placement is real). Each arrival is placed at most once; on
    each node cpu and memory are not exceeded, a pod's GPUs exist, are distinct, are of an allowed model, and no GPU
    carries more than 1000 milli (a whole-GPU pod takes all 1000)."""
    nodes = {node.name: node for node in cluster.nodes}
    cpu: Counter[str] = Counter()
    memory: Counter[str] = Counter()
    milli: Counter[tuple[str, int]] = Counter()
    seen: set[int] = set()
    errors = []
    for index, name, gpus in placed:
        where = f"arrival {index} on {name}"
        if not 0 <= index < len(arrived):
            errors.append(f"{where}: no such arrival")
            continue
        if index in seen:
            errors.append(f"{where}: placed twice")
            continue
        seen.add(index)
        pod, node = arrived[index], nodes.get(name)
        if node is None:
            errors.append(f"{where}: no such node")
            continue
        cpu[name] += pod.cpu
        memory[name] += pod.memory
        if cpu[name] > (node.cpu_milli or 0):
            errors.append(f"{where}: cpu {cpu[name]}m over the node's {node.cpu_milli}m")
        if memory[name] * 2**20 > (node.memory_bytes or 0):
            errors.append(f"{where}: memory {memory[name]} MiB over the node's")
        if len(gpus) != pod.gpus or len(set(gpus)) != len(gpus):
            errors.append(f"{where}: needs {pod.gpus} distinct GPUs, given {list(gpus)}")
            continue
        if not gpus:
            continue
        count = node.gpu.count if node.gpu else 0
        allowed = specs[pod.spec]
        if node.gpu is None or (allowed and node.gpu.model not in allowed):
            errors.append(f"{where}: GPU model not among {list(allowed)}")
        for gpu in gpus:
            key = (name, gpu)
            if not 0 <= gpu < count:
                errors.append(f"{where}: no GPU {gpu}")
                continue
            milli[key] += pod.milli  # a whole-GPU pod counts 1000: nothing else fits beside it
            if milli[key] > MILLI:
                errors.append(f"{where}: GPU {gpu} carries {milli[key]} milli")
    return errors
