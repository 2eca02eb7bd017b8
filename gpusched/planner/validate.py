"""An independent check of a set of placements against the cluster model.

It shares no code with the placers (greedy or CP-SAT): it recounts usage from the model and the placements
alone, so a bug in a placer cannot hide itself. Used on every plan before it is printed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from ..models.cluster import Cluster, Node
from ..models.scheduling import cordon_blocks, selector_matches, untolerated
from ..models.workload import GpuNeeds

__all__ = ["Assignment", "violations"]


@dataclass(frozen=True)
class Assignment:
    pod: str
    needs: GpuNeeds
    node: str
    gpus: tuple[int, ...]  # physical GPU per unit (repeats allowed only for replicas in the integer view)
    mig: tuple[tuple[int, int], ...] = ()
    units: int | None = None  # GPUs (or MIG instances) the pod asked for, when the caller knows it


def violations(cluster: Cluster, assignments: list[Assignment], hardware: bool = True) -> list[str]:
    """Everything wrong with these placements; empty when they are valid.

    hardware=False checks only what kube-scheduler checks (counts, taints, selectors, cpu/memory): the integer
    view is allowed to put a 40 GiB pod on a 24 GiB replica.
    """
    nodes = {node.name: node for node in cluster.nodes}
    problems: list[str] = []
    running: dict[str, list[GpuNeeds]] = {}
    for pod in cluster.running_pods():
        running.setdefault(pod.node, []).append(pod.needs)
    by_node: dict[str, list[Assignment]] = {}
    for a in assignments:
        if a.node not in nodes:
            problems.append(f"{a.pod}: unknown node {a.node}")
            continue
        by_node.setdefault(a.node, []).append(a)
        problems += [f"{a.pod} on {a.node}: {p}" for p in _pod_problems(nodes[a.node], a, hardware)]
    for name, placed in by_node.items():
        problems += [f"{name}: {p}" for p in _capacity_problems(nodes[name], placed, running.get(name, []), hardware)]
    return problems


def _pod_problems(node: Node, a: Assignment, hardware: bool) -> list[str]:
    needs = a.needs
    found = []
    if cordon_blocks(node.unschedulable, needs.tolerations):
        found.append("node is cordoned")
    taint = untolerated(node.taints, needs.tolerations)
    if taint:
        found.append(f"taint {taint.key} not tolerated")
    if not selector_matches(needs.node_selector, node.labels):
        found.append("node selector does not match")
    block = node.gpu
    if block is None:
        return found + (["node has no GPUs"] if a.gpus or a.mig else [])
    given = len(a.mig) or len(a.gpus)
    if a.units is not None and given != a.units:
        found.append(f"given {given} GPU(s), asked for {a.units}")
    wrong = sorted({g for g in [*a.gpus, *(gpu for gpu, _ in a.mig)] if not 0 <= g < block.count})
    if wrong:
        return found + [f"GPU index {', '.join(map(str, wrong))} out of range (the node has GPUs 0..{block.count - 1})"]
    mig_gpus = {m.gpu for m in block.mig}
    instances = {(m.gpu, m.start): m for m in block.mig}
    if needs.mig_profile and not a.mig and a.gpus:
        found.append(f"a MIG pod ({needs.mig_profile}) given whole GPUs")
    if a.mig and not needs.mig_profile and (hardware or block.mig_strategy == "mixed"):
        found.append("a whole-GPU pod given MIG instances")  # the integer view: single-strategy instances are GPUs
    if a.mig and a.gpus and sorted(a.gpus) != sorted(gpu for gpu, _ in a.mig):
        found.append(f"GPUs {list(a.gpus)} are not those of its MIG instances")
    for gpu, start in a.mig:
        instance = instances.get((gpu, start))
        if instance is None:
            found.append(f"no MIG instance at GPU {gpu} slice {start}")
        elif needs.mig_profile and instance.profile != needs.mig_profile:
            found.append(f"MIG instance {instance.profile} is not {needs.mig_profile}")
        elif instance.holder is not None:
            found.append(f"MIG instance {instance.profile}@{start} is held by {instance.holder}")
    if not a.mig and any(g in mig_gpus for g in a.gpus):
        found.append("a whole-GPU placement on a MIG-partitioned GPU")
    if hardware:
        found += _hardware_problems(node, a)
    return found


def _hardware_problems(node: Node, a: Assignment) -> list[str]:
    block = node.gpu
    assert block is not None
    needs = a.needs
    found: list[str] = []
    if a.mig or not a.gpus:
        return found
    if len(set(a.gpus)) != len(a.gpus):
        found.append("two units on one physical GPU")
    if needs.model and needs.model != block.model:
        found.append(f"GPU model {block.model} is not {needs.model}")
    if needs.memory_gib and needs.memory_gib > block.memory_gib:
        found.append(f"GPU memory {block.memory_gib:g} GiB below {needs.memory_gib:g} GiB")
    if block.replicas > 1 and not needs.shared:
        found.append("an exclusive pod on a time-sliced GPU")
    if needs.shared and block.replicas == 1:
        found.append("a shared pod on an exclusive GPU")
    islands = block.island_of()
    if needs.nvlink and len({islands[g] for g in a.gpus}) > 1:
        found.append("NVLink required but the GPUs span islands")
    return found


def _request(needs: GpuNeeds, resource: str) -> int:
    return needs.cpu_milli if resource == "cpu" else needs.memory_bytes


def _capacity_problems(node: Node, placed: list[Assignment], running: list[GpuNeeds], hardware: bool) -> list[str]:
    """Over-used resources: the pods placed plus those already running there (their cpu and memory requests count,
    as kube-scheduler counts them; their GPUs are the node's busy GPUs and held MIG instances)."""
    block = node.gpu
    found = []
    for resource, allocatable in (("cpu", node.cpu_milli), ("memory", node.memory_bytes)):
        asked = sum(_request(a.needs, resource) for a in placed)  # kube-scheduler lets a pod asking none through
        if allocatable is not None and asked and asked + sum(_request(n, resource) for n in running) > allocatable:
            found.append(f"{resource} over allocatable")
    if block is None:
        return found
    units = Counter(g for a in placed if not a.mig for g in a.gpus) + Counter(b.gpu for b in block.busy)
    for gpu, used in sorted(units.items()):
        if used > block.replicas:
            found.append(f"GPU {gpu} holds {used} pods, has {block.replicas} replica(s)")
    if hardware and block.replicas > 1:
        declared: defaultdict[int, float] = defaultdict(float)
        for busy in block.busy:  # every replica's pod declares its own memory
            declared[busy.gpu] += busy.memory_gib
        for a in placed:
            for gpu in a.gpus:
                declared[gpu] += a.needs.memory_gib or 0.0
        touched = {gpu for a in placed for gpu in a.gpus}  # a GPU the plan leaves alone is not the plan's doing
        found += [
            f"GPU {gpu} memory oversubscribed: {gib:g} of {block.memory_gib:g} GiB declared"
            for gpu, gib in sorted(declared.items())
            if gib > block.memory_gib and gpu in touched
        ]
    for (gpu, start), used in Counter(m for a in placed for m in a.mig).items():
        if used > 1:
            found.append(f"MIG instance at GPU {gpu} slice {start} given {used} times")
    return found
