"""An independent check of a set of placements against the cluster model, and the one contract of every planner's
validator: a list of typed violations, empty when the plan is valid.

It shares no code with the placers (greedy or CP-SAT): it recounts usage from the model and the placements
alone, so a bug in a placer cannot hide itself. Every planner (plan, preempt, defrag, mig plan) runs its plan
through its validator and `require_valid` before it is printed; `gpusched validate` prints the same list.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..models.cluster import Cluster, Node
from ..models.scheduling import cordon_blocks, selector_matches, untolerated
from ..models.workload import GpuNeeds

__all__ = ["Assignment", "Kind", "Violation", "require_valid", "violations"]

Kind = Literal[
    "unknown",  # names a node, job, pod or GPU the plan or the cluster does not have
    "constraint",  # a pod's own rule: taint, cordon, selector, model, GPU memory, NVLink island or domain
    "device",  # the wrong devices: count, index, whole GPU against MIG instance, exclusive against shared
    "capacity",  # more than a node or GPU holds: cpu, memory, replicas, declared GPU memory, an instance twice
    "gang",  # a job not all or nothing, a pod placed twice, the jobs left out misstated
    "mig",  # a MIG layout the hardware, the device plugin's strategy or the mig-parted file cannot give
    "budget",  # a disruption budget or a priority an eviction breaks, at any step
    "claim",  # the plan does not score what its report says
]


@dataclass(frozen=True)
class Violation:
    """One rule a plan breaks: which kind of rule, and in words where (`str` gives the words)."""

    kind: Kind
    message: str

    def __str__(self) -> str:
        return self.message

    def at(self, where: str) -> Violation:
        return Violation(self.kind, f"{where}: {self.message}")


def require_valid(what: str, found: Sequence[Violation]) -> None:
    """Every planner's last step before it prints: a plan its own validator refuses is a gpusched bug (exit 3),
    never the user's."""
    if found:
        raise RuntimeError(f"internal error: {what} failed validation: " + "; ".join(map(str, found[:5])))


@dataclass(frozen=True)
class Assignment:
    pod: str
    needs: GpuNeeds
    node: str
    gpus: tuple[int, ...]  # physical GPU per unit (repeats: replicas in the integer view, or MIG instances on one GPU)
    mig: tuple[tuple[int, int], ...] = ()
    units: int | None = None  # GPUs (or MIG instances) the pod asked for, when the caller knows it


def violations(cluster: Cluster, assignments: list[Assignment], hardware: bool = True) -> list[Violation]:
    """Everything wrong with these placements; empty when they are valid.

    hardware=False checks only what kube-scheduler checks (counts, taints, selectors, cpu/memory): the integer
    view is allowed to put a 40 GiB pod on a 24 GiB replica.
    """
    nodes = {node.name: node for node in cluster.nodes}
    problems: list[Violation] = []
    running: dict[str, list[GpuNeeds]] = {}
    for pod in cluster.running_pods():
        running.setdefault(pod.node, []).append(pod.needs)
    by_node: dict[str, list[Assignment]] = {}
    for a in assignments:
        if a.node not in nodes:
            problems.append(Violation("unknown", f"{a.pod}: unknown node {a.node}"))
            continue
        by_node.setdefault(a.node, []).append(a)
        problems += [p.at(f"{a.pod} on {a.node}") for p in _pod_problems(nodes[a.node], a, hardware)]
    for name, placed in by_node.items():
        problems += [p.at(name) for p in _capacity_problems(nodes[name], placed, running.get(name, []), hardware)]
    return problems


def _pod_problems(node: Node, a: Assignment, hardware: bool) -> list[Violation]:
    needs = a.needs
    found: list[Violation] = []
    if cordon_blocks(node.unschedulable, needs.tolerations):
        found.append(Violation("constraint", "node is cordoned"))
    taint = untolerated(node.taints, needs.tolerations)
    if taint:
        found.append(Violation("constraint", f"taint {taint.key} not tolerated"))
    if not selector_matches(needs.node_selector, node.labels):
        found.append(Violation("constraint", "node selector does not match"))
    block = node.gpu
    if block is None:
        return found + ([Violation("device", "node has no GPUs")] if a.gpus or a.mig else [])
    given = len(a.mig) or len(a.gpus)
    if a.units is not None and given != a.units:
        found.append(Violation("device", f"given {given} GPU(s), asked for {a.units}"))
    wrong = sorted({g for g in [*a.gpus, *(gpu for gpu, _ in a.mig)] if not 0 <= g < block.count})
    if wrong:
        listed = ", ".join(map(str, wrong))
        return [
            *found,
            Violation("unknown", f"GPU index {listed} out of range (the node has GPUs 0..{block.count - 1})"),
        ]
    mig_gpus = {m.gpu for m in block.mig}
    instances = {(m.gpu, m.start): m for m in block.mig}
    if needs.mig_profile and not a.mig and a.gpus:
        found.append(Violation("device", f"a MIG pod ({needs.mig_profile}) given whole GPUs"))
    if a.mig and not needs.mig_profile and (hardware or block.mig_strategy == "mixed"):
        found.append(
            Violation("device", "a whole-GPU pod given MIG instances")
        )  # the integer view: single-strategy instances are GPUs
    if a.mig and a.gpus and sorted(a.gpus) != sorted(gpu for gpu, _ in a.mig):
        found.append(Violation("device", f"GPUs {list(a.gpus)} are not those of its MIG instances"))
    for gpu, start in a.mig:
        instance = instances.get((gpu, start))
        if instance is None:
            found.append(Violation("device", f"no MIG instance at GPU {gpu} slice {start}"))
        elif needs.mig_profile and instance.profile != needs.mig_profile:
            found.append(Violation("device", f"MIG instance {instance.profile} is not {needs.mig_profile}"))
        elif instance.holder is not None:
            found.append(Violation("capacity", f"MIG instance {instance.profile}@{start} is held by {instance.holder}"))
    if not a.mig and any(g in mig_gpus for g in a.gpus):
        found.append(Violation("device", "a whole-GPU placement on a MIG-partitioned GPU"))
    if hardware:
        found += _hardware_problems(node, a)
    return found


def _hardware_problems(node: Node, a: Assignment) -> list[Violation]:
    block = node.gpu
    assert block is not None
    needs = a.needs
    found: list[Violation] = []
    if a.mig or not a.gpus:
        return found
    if len(set(a.gpus)) != len(a.gpus):
        found.append(Violation("device", "two units on one physical GPU"))
    if needs.model and needs.model != block.model:
        found.append(Violation("constraint", f"GPU model {block.model} is not {needs.model}"))
    if needs.memory_gib and needs.memory_gib > block.memory_gib:
        found.append(Violation("constraint", f"GPU memory {block.memory_gib:g} GiB below {needs.memory_gib:g} GiB"))
    if block.replicas > 1 and not needs.shared:
        found.append(Violation("device", "an exclusive pod on a time-sliced GPU"))
    if needs.shared and block.replicas == 1:
        found.append(Violation("device", "a shared pod on an exclusive GPU"))
    islands = block.island_of()
    if needs.nvlink and len({islands[g] for g in a.gpus}) > 1:
        found.append(Violation("constraint", "NVLink required but the GPUs span islands"))
    return found


def _request(needs: GpuNeeds, resource: str) -> int:
    return needs.cpu_milli if resource == "cpu" else needs.memory_bytes


def _capacity_problems(
    node: Node, placed: list[Assignment], running: list[GpuNeeds], hardware: bool
) -> list[Violation]:
    """Over-used resources: the pods placed plus those already running there (their cpu and memory requests count,
    as kube-scheduler counts them; their GPUs are the node's busy GPUs and held MIG instances)."""
    block = node.gpu
    found: list[Violation] = []
    for resource, allocatable in (("cpu", node.cpu_milli), ("memory", node.memory_bytes)):
        asked = sum(_request(a.needs, resource) for a in placed)  # kube-scheduler lets a pod asking none through
        if allocatable is not None and asked and asked + sum(_request(n, resource) for n in running) > allocatable:
            found.append(Violation("capacity", f"{resource} over allocatable"))
    if block is None:
        return found
    units = Counter(g for a in placed if not a.mig for g in a.gpus) + Counter(b.gpu for b in block.busy)
    for gpu, used in sorted(units.items()):
        if used > block.replicas:
            found.append(Violation("capacity", f"GPU {gpu} holds {used} pods, has {block.replicas} replica(s)"))
    if hardware and block.replicas > 1:
        declared: defaultdict[int, float] = defaultdict(float)
        for busy in block.busy:  # every replica's pod declares its own memory
            declared[busy.gpu] += busy.memory_gib
        for a in placed:
            for gpu in a.gpus:
                declared[gpu] += a.needs.memory_gib or 0.0
        touched = {gpu for a in placed for gpu in a.gpus}  # a GPU the plan leaves alone is not the plan's doing
        found += [
            Violation("capacity", f"GPU {gpu} memory oversubscribed: {gib:g} of {block.memory_gib:g} GiB declared")
            for gpu, gib in sorted(declared.items())
            if gib > block.memory_gib and gpu in touched
        ]
    for (gpu, start), used in Counter(m for a in placed for m in a.mig).items():
        if used > 1:
            found.append(Violation("capacity", f"MIG instance at GPU {gpu} slice {start} given {used} times"))
    return found
