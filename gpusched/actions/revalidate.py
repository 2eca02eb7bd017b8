"""Before each step of a run: has the cluster moved on? The cluster is read again with the live loader the command
planned from (`Kube.imported`: gpusched.scenarios.importer), and the rest of the plan is checked against it.

- The objects the rest of the plan acts on: each pod still there, with the uid and on the node the plan saw; no
  pod the plan did not expect bound to a node it uses.
- Where the rest of the plan puts pods (moves, bindings, the pending pod a preemption makes room for, the room a
  defrag makes): the independent validator (gpusched.planner.validate, through disrupt.problems as preempt and
  defrag use it) on the cluster as it is now, with the pods still to be evicted off it. It sees cpu, memory, GPUs,
  MIG instances, cordons, taints and node selectors. This run's own cordon taint is not counted (it is there so
  that replacements and other new pods keep off the node; the run binds or moves its own pods past it). GPU indices are gpusched's own (the importer assigns those of running
  pods, the device plugin picks the real ones), so a placement keeps its planned GPUs when they are free and takes
  other free GPUs of the node when not. Not modelled: the node's pod count (allocatable pods).
- mig plan: each GPU still to repartition has the MIG layout the plan started from, and the plan's layouts pass
  the MIG plan validator (gpusched.planner.optimize.mig.validate) on the cluster as it is now.

What the validator found already when the plan was made (its baseline, kept in the journal and shown as a note)
is not drift.
"""

from __future__ import annotations

from collections import Counter

from ..models.cluster import Cluster, GpuBlock
from ..models.scheduling import Taint
from ..planner.optimize.disrupt import problems, without
from ..planner.optimize.mig import layout_violations
from ..planner.optimize.mig.layouts import inventory
from ..planner.optimize.mig.report import GpuChange
from ..planner.validate import Assignment
from .journal import Journal, Placement
from .kube import CORDON_TAINT, controller_uid, pod_key

__all__ = ["alive", "moved_on", "validator_findings"]


def alive(pod: dict) -> bool:
    status = pod.get("status") or {}
    return not pod["metadata"].get("deletionTimestamp") and status.get("phase") not in ("Succeeded", "Failed")


def _todo(journal: Journal, index: int) -> set[int]:
    """The steps from `index` on that have yet to happen (cleanup steps undo, they do not carry the plan out)."""
    return {
        i for i, step in enumerate(journal.steps)
        if i >= index and step.state not in ("done", "skipped") and not step.cleanup
    }  # fmt: skip


def moved_on(journal: Journal, index: int, pods: list[dict], cluster: Cluster) -> list[str]:
    """Everything that changed so that the plan's steps from `index` on no longer hold; empty: it still holds."""
    findings = _objects(journal, index, pods) + _mig_layouts(journal, _todo(journal, index), cluster)
    checked = validator_findings(journal, index, pods, cluster)
    return findings + [f"the validator on the rest of the plan: {f}" for f in checked if f not in journal.baseline]


# --- the objects the plan acts on --------------------------------------------------------------------------------


def _objects(journal: Journal, index: int, pods: list[dict]) -> list[str]:
    """The pods the plan's steps from `index` on act on, and the pods on its nodes, as they are now (`pods`)."""
    by_key = {pod_key(pod): pod for pod in pods}
    todo = _todo(journal, index)
    owners = {s.owner for s in journal.steps if s.kind == "replacement" and s.owner}
    expected = {s.target for s in journal.steps if s.kind in ("bind", "place", "scheduled")}
    found = []
    for pod in pods:
        node, key = (pod.get("spec") or {}).get("nodeName"), pod_key(pod)
        if node in journal.watch and alive(pod) and key not in journal.watch[node] and key not in expected:
            if controller_uid(pod) not in owners:
                found.append(f"pod {key} now runs on {node} (spec.nodeName), which the plan did not expect")
    for number in sorted(todo):
        step = journal.steps[number]
        now = by_key.get(step.target)
        if step.kind not in ("evict", "bind"):
            continue
        if now is None:  # a step that started before (then resumed) may have evicted it: gone is its own doing
            if step.kind == "bind" or step.started is None:
                found.append(f"pod {step.target} is gone (deleted by someone else; the plan {step.kind}s it at step "
                             f"{number + 1})")  # fmt: skip
            continue
        if step.started is None and now["metadata"].get("deletionTimestamp"):
            found.append(f"pod {step.target} is being deleted by someone else (metadata.deletionTimestamp); the plan "
                         f"{step.kind}s it at step {number + 1}")  # fmt: skip
            continue
        if step.uid and now["metadata"]["uid"] != step.uid:
            found.append(f"pod {step.target} is another pod now (metadata.uid {now['metadata']['uid']}, "
                         f"planned {step.uid})")  # fmt: skip
            continue
        bound = now["spec"].get("nodeName")
        if step.kind == "evict" and bound != step.node:
            found.append(f"pod {step.target} runs on {bound} (spec.nodeName), the plan saw it on {step.node}")
        if step.kind == "bind" and bound and bound != step.node:
            found.append(f"pod {step.target} is bound to {bound} already (spec.nodeName), the plan binds it to "
                         f"{step.node}")  # fmt: skip
    return found


# --- the independent validator on the rest of the plan -----------------------------------------------------------


def validator_findings(journal: Journal, index: int, pods: list[dict], cluster: Cluster) -> list[str]:
    """What the validators find wrong with the plan's steps from `index` on, on `cluster` (read just now)."""
    todo = _todo(journal, index)
    found = _placements(journal, todo, pods, cluster)
    return found + _mig(journal, todo, cluster)


def _there(journal: Journal, placement: Placement, by_key: dict[str, dict], pods: list[dict]) -> bool:
    """The pod the placement is for is bound already (the step that waits for it says where)."""
    assert placement.step is not None
    step = journal.steps[placement.step]
    if step.kind != "replacement":
        return bool(((by_key.get(placement.pod) or {}).get("spec") or {}).get("nodeName"))
    claimed = {s.result.split(" ")[0] for s in journal.steps if s.kind == "replacement" and s.result}
    return any(
        controller_uid(pod) == step.owner and pod["metadata"]["uid"] != step.uid and alive(pod)
        and pod["spec"].get("nodeName") and pod_key(pod) not in claimed
        for pod in pods
    )  # fmt: skip


def _placements(journal: Journal, todo: set[int], pods: list[dict], cluster: Cluster) -> list[str]:
    by_key = {pod_key(pod): pod for pod in pods}
    placed = [
        p for p in journal.placements
        if p.step is None or (p.step in todo and not _there(journal, p, by_key, pods))
    ]  # fmt: skip
    if not placed:
        return []
    gone = {journal.steps[i].target for i in todo if journal.steps[i].kind in ("evict", "replacement")}
    model = _without_our_cordons(cluster, journal)
    return [str(v) for v in problems(model, gone, _assign(without(model, gone), placed))]


def _without_our_cordons(cluster: Cluster, journal: Journal) -> Cluster:
    """The cluster without this run's cordon taints, wherever they are (also one a killed run set before it could
    journal it): they only keep other new pods off the nodes for the run."""

    def ours(taint: Taint) -> bool:
        return taint.key == CORDON_TAINT and taint.value == journal.run

    nodes = [n.model_copy(update={"taints": [t for t in n.taints if not ours(t)]}) if any(map(ours, n.taints))
             else n for n in cluster.nodes]  # fmt: skip
    return cluster.model_copy(update={"nodes": nodes})


def _assign(cluster: Cluster, placed: list[Placement]) -> list[Assignment]:
    """The placements as the validator's assignments, each on its planned GPUs (MIG instances) when they are free,
    else on other free ones of the node, else on the planned ones (the validator then says what is over-used)."""
    nodes = {node.name: node for node in cluster.nodes}
    free: dict[str, Counter[int]] = {}
    open_mig: dict[str, set[tuple[int, int]]] = {}
    for node in cluster.nodes:
        block = node.gpu
        if block is None:
            continue
        mig_gpus = {m.gpu for m in block.mig}
        busy = Counter(b.gpu for b in block.busy)
        free[node.name] = Counter({g: block.replicas - busy[g] for g in range(block.count) if g not in mig_gpus})
        open_mig[node.name] = {(m.gpu, m.start) for m in block.mig if m.holder is None}
    assignments = []
    for p in placed:
        target = nodes.get(p.node)
        gpus, mig = tuple(p.gpus), tuple(p.mig)
        if target is not None and target.gpu is not None:
            if p.mig:
                mig = _take_mig(target.gpu, open_mig[p.node], p)
                gpus = tuple(gpu for gpu, _ in mig) if p.gpus else ()  # re-picked instances bring their GPUs
            elif p.gpus:
                gpus = _take_gpus(target.gpu.island_of(), free[p.node], p)
        assignments.append(Assignment(p.pod, p.needs, p.node, gpus, mig, len(p.mig) or len(p.gpus)))
    return assignments


def _take_gpus(islands: dict[int, int], free: Counter[int], p: Placement) -> tuple[int, ...]:
    wanted = Counter(p.gpus)
    if all(free[g] >= n for g, n in wanted.items()):
        chosen = list(p.gpus)
    else:
        groups = [[g for g in sorted(free) if free[g] > 0 and islands.get(g) == island] for island in
                  sorted(set(islands.values()))] if p.needs.nvlink else [[g for g in sorted(free) if free[g] > 0]]  # fmt: skip
        chosen = next((group[: len(p.gpus)] for group in groups if len(group) >= len(p.gpus)), list(p.gpus))
    for g in chosen:
        free[g] -= 1
    return tuple(chosen)


def _take_mig(block: GpuBlock, open_slots: set[tuple[int, int]], p: Placement) -> tuple[tuple[int, int], ...]:
    profile = {(m.gpu, m.start): m.profile for m in block.mig}
    if all(slot in open_slots for slot in p.mig):
        chosen = list(p.mig)
    else:
        matching = sorted(s for s in open_slots if profile[s] == p.needs.mig_profile)
        chosen = matching[: len(p.mig)] if len(matching) >= len(p.mig) else list(p.mig)
    open_slots.difference_update(chosen)
    return tuple(chosen)


def _mig_waiting(journal: Journal, todo: set[int]) -> list[GpuChange]:
    """The GPU changes of the nodes not yet relabelled."""
    waiting = {journal.steps[i].target for i in todo if journal.steps[i].kind == "label"}
    return [change for change in journal.mig_changes if change.node in waiting]


def _now(cluster: Cluster, change: GpuChange) -> list[tuple[str, int]] | None:
    """The GPU's MIG instances as the loader reads them now (from the device plugin's nvidia.com/mig-* counts);
    None when the node or its GPUs are no longer read."""
    node = next((n for n in cluster.nodes if n.name == change.node), None)
    if node is None or node.gpu is None:
        return None
    return sorted((m.profile, m.start) for m in node.gpu.mig if m.gpu == change.gpu)


def _mig_layouts(journal: Journal, todo: set[int], cluster: Cluster) -> list[str]:
    """Each GPU still to repartition has the layout the plan started from."""
    found = []
    for change in _mig_waiting(journal, todo):
        now, then = _now(cluster, change), sorted((i.profile, i.start) for i in change.before or [])
        if now is None:
            found.append(f"node {change.node}: gone, or its GPUs are no longer read")
        elif now != then:
            found.append(f"node {change.node} GPU {change.gpu}: MIG layout is now {_layout(now)} (status.allocatable "
                         f"nvidia.com/mig-*), the plan started from {_layout(then)}")  # fmt: skip
    return found


def _mig(journal: Journal, todo: set[int], cluster: Cluster) -> list[str]:
    """The MIG plan validator on the new layouts of the GPUs still to repartition (those whose layout changed
    under the plan are reported as such, by _mig_layouts)."""
    gpus = {gpu.name: gpu for gpu in inventory(cluster)}
    layouts, found = {}, []
    for change in _mig_waiting(journal, todo):
        if _now(cluster, change) != sorted((i.profile, i.start) for i in change.before or []):
            continue
        gpu = gpus.get(f"{change.node}/{change.gpu}")
        if gpu is None:
            found.append(f"node {change.node} GPU {change.gpu}: no longer a GPU a MIG plan may change")
            continue
        kept = set(gpu.kept)
        free = [(i.profile, i.start) for i in change.after if (i.profile, i.start) not in kept]
        layouts[gpu.name] = tuple(sorted(free, key=lambda i: i[1])) if change.after else None
    if not layouts:
        return found
    return found + [str(v) for v in layout_violations(cluster, list(gpus.values()), layouts, journal.mig_demand)]


def _layout(instances: list[tuple[str, int]]) -> str:
    return ", ".join(f"{profile}@{start}" for profile, start in instances) or "MIG disabled"
