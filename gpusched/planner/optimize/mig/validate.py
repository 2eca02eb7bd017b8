"""An independent check of a MIG repartitioning plan against the cluster model.

`mig_plan_violations` knows nothing of CP-SAT or of how plans are made: it reads the cluster, the new instances
per GPU, the mig-parted config and the labels, recounts what they serve, and uses the geometry check of
gpusched.models.mig. Every plan, optimal or heuristic, passes through it (`layout_violations`) before it is
printed; `disagreements` checks that the plan scores what the solver said.
"""

from __future__ import annotations

from collections import Counter

from ....models.cluster import Cluster, GpuBlock
from ....models.mig import COMPUTE_SLICES, placement_error, profiles_for
from ...validate import Violation
from ..solver import SolveReport
from .layouts import Layout, MigGpu, NewInstance, RepartitionOutcome, compute_of, instances_after, outcome
from .migparted import mig_parted

__all__ = ["disagreements", "layout_violations", "mig_plan_violations"]

After = dict[tuple[str, int], list[NewInstance] | None]  # (node, GPU) -> every instance after; None: MIG disabled


def mig_plan_violations(
    cluster: Cluster,
    demand: dict[str, int],
    after: After,
    claimed: tuple[dict[str, int], int, int],
    mig_configs: dict[str, list[dict]],
    labels: dict[str, str],
) -> list[Violation]:
    """Everything wrong with a plan; empty when it is valid. `claimed` is (served, reconfigured, unused slices)."""
    nodes = {node.name: node for node in cluster.nodes}
    problems: list[Violation] = []
    for (name, index), instances in after.items():
        node = nodes.get(name)
        if node is None or node.gpu is None or index >= node.gpu.count:
            problems.append(Violation("unknown", f"{name}/{index}: no such GPU"))
            continue
        problems += [Violation("mig", f"{name}/{index}: {p}") for p in _gpu_problems(node.gpu, index, instances)]
    if problems:
        return problems
    problems += _single_problems(cluster, after)
    problems += _count_problems(cluster, demand, after, claimed)
    problems += _config_problems(cluster, after, mig_configs, labels)
    return problems


def _before(block: GpuBlock, index: int) -> list[NewInstance] | None:
    instances = [(m.profile, m.start, m.holder) for m in block.mig if m.gpu == index]
    return sorted(instances, key=lambda i: i[1]) if instances else None


def _gpu_problems(block: GpuBlock, index: int, instances: list[NewInstance] | None) -> list[str]:
    profiles = profiles_for(block.model, block.memory_gib)
    if not profiles:
        return [f"{block.model} cannot be MIG-partitioned"]
    if block.replicas > 1:
        return ["a time-sliced GPU cannot be MIG-partitioned"]
    before = _before(block, index)
    if before is None and any(b.gpu == index for b in block.busy):
        return ["a busy whole GPU cannot be repartitioned"]
    found = []
    now = set(instances or [])
    for busy in (i for i in before or [] if i[2] is not None):
        if busy not in now:
            found.append(f"busy instance {busy[0]}@{busy[1]} of {busy[2]} is not kept in place")
    old = {(p, s) for p, s, _ in before or []}
    allowed = block.mig_profiles
    for profile, start, holder in instances or []:
        if (profile, start) not in old:
            if holder is not None:
                found.append(f"new instance {profile}@{start} cannot already have a holder ({holder})")
            if allowed is not None and profile not in allowed:
                found.append(f"new instance {profile}@{start} is not among the node's MIG profiles")
    if instances is not None:
        error = placement_error(profiles, [(p, s) for p, s, _ in instances])
        if error:
            found.append(error)
        if not instances:
            found.append("MIG enabled with no instance")
    return found


def _layout(block: GpuBlock, after: After, name: str, index: int) -> list[NewInstance] | None:
    if (name, index) in after:
        return after[(name, index)]
    return _before(block, index)


def _single_problems(cluster: Cluster, after: After) -> list[Violation]:
    """A node whose device plugin runs the single strategy must end with one profile on all its MIG GPUs."""
    changed = {name for name, _ in after}
    found = []
    for node in cluster.nodes:
        if node.name not in changed or node.gpu is None or node.gpu.mig_strategy != "single":
            continue
        names = {p for i in range(node.gpu.count) for p, _, _ in _layout(node.gpu, after, node.name, i) or []}
        if len(names) > 1:
            left = ", ".join(sorted(names))
            found.append(Violation("mig", f"{node.name}: single strategy, but the plan leaves profiles {left}"))
    return found


def _count_problems(
    cluster: Cluster, demand: dict[str, int], after: After, claimed: tuple[dict[str, int], int, int]
) -> list[Violation]:
    supply: Counter[str] = Counter()
    reconfigured = unused = 0
    for node in cluster.nodes:
        block = node.gpu
        if block is None or not profiles_for(block.model, block.memory_gib):
            continue
        profiles = profiles_for(block.model, block.memory_gib)
        layouts = [_layout(block, after, node.name, index) for index in range(block.count)]
        names = {p for now in layouts for p, _, _ in now or []}
        silent = block.mig_strategy == "single" and len(names) > 1  # the device plugin advertises none of them
        for index in range(block.count):
            now = layouts[index]
            if not silent:
                supply.update(p for p, _, holder in now or [] if holder is None)
            if (node.name, index) in after and _changed(_before(block, index), now):
                reconfigured += 1
                unused += COMPUTE_SLICES - sum(profiles[p].compute for p, _, _ in now or [])
    served = {name: min(count, supply[name]) for name, count in demand.items()}
    recount = (served, reconfigured, unused)
    if recount != claimed:
        return [Violation("claim", f"the plan claims served/reconfigured/unused {claimed}, its layouts give {recount}")]
    return []


def _changed(before: list[NewInstance] | None, now: list[NewInstance] | None) -> bool:
    if before is None or now is None:
        return before != now
    return {(p, s) for p, s, _ in before} != {(p, s) for p, s, _ in now}


def _config_problems(
    cluster: Cluster, after: After, mig_configs: dict[str, list[dict]], labels: dict[str, str]
) -> list[Violation]:
    """Each changed node is labelled with a config that gives each of its GPUs exactly its new instances."""
    found = []
    changed = {name for name, _ in after}
    for node in cluster.nodes:
        if node.name not in changed:
            continue
        config = mig_configs.get(labels.get(node.name, ""))
        if config is None or node.gpu is None:
            found.append(Violation("mig", f"{node.name}: changed but labelled with no config in the mig-parted file"))
            continue
        for index in range(node.gpu.count):
            entries = [entry for entry in config if index in entry["devices"]]
            now = _layout(node.gpu, after, node.name, index)
            wanted = dict(Counter(p for p, _, _ in now)) if now else {}
            if len(entries) != 1:
                found.append(Violation("mig", f"{node.name}/{index}: {len(entries)} mig-parted entries name this GPU"))
            elif entries[0]["mig-enabled"] != bool(now) or entries[0].get("mig-devices", {}) != wanted:
                found.append(
                    Violation("mig", f"{node.name}/{index}: the mig-parted entry does not give its planned instances")
                )
    return found


def disagreements(gpus: list[MigGpu], result: RepartitionOutcome, report: SolveReport) -> list[Violation]:
    """The plan, recounted, scores what the solver said: a proven level exactly, an unproven one or better
    (a later level's solution may improve on it: it is kept no worse, not fixed)."""
    served = sum(compute_of(gpus, name) * count for name, count in result.served.items())
    recount = (served, result.reconfigured, result.unused_slices)
    found = []
    for level, value in zip(
        report.levels, recount, strict=False
    ):  # the levels stop at the first that finds no solution in time
        if level.objective is None:
            continue
        said = round(level.objective)
        worse = value < said if level.sense == "maximize" else value > said
        if worse or (level.status == "OPTIMAL" and value != said):
            found.append(Violation("claim", f"level {level.name}: the solver says {said}, the plan gives {value}"))
    return found


def layout_violations(
    cluster: Cluster, gpus: list[MigGpu], layouts: dict[str, Layout], demand: dict[str, int]
) -> list[Violation]:
    """Run any plan's layouts (optimal or heuristic), with their config, labels and score, past the validator."""
    by_name = {gpu.name: gpu for gpu in gpus}
    after = {
        (by_name[name].node, by_name[name].index): instances_after(by_name[name], layout)
        for name, layout in layouts.items()
    }
    result = outcome(gpus, layouts, demand)
    config, labels = mig_parted(cluster, gpus, layouts)
    claimed = (result.served, result.reconfigured, result.unused_slices)
    return mig_plan_violations(cluster, demand, after, claimed, config["mig-configs"], labels)
