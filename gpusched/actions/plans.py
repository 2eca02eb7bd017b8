"""From a proven plan to the journal of steps that carries it out on the live cluster it was computed from: the plan
and its journal come from one snapshot of the cluster (gpusched.actions.kube.Snapshot).

- preempt: cordon the nodes the pending pod goes to (the run's own NoSchedule taint), evict the victims (Eviction
  API), bind the pending pod there, uncordon. While the node is held, a victim's replacement (its owner re-creates
  it at once) or any other new pod cannot take the room the evictions make, so the preemption converges. A pending
  pod that needs what only kube-scheduler checks (claims, volumes, pod affinity, spread constraints, host ports,
  scheduling gates) is not bound by gpusched: the victims are evicted and kube-scheduler places it, unheld.
- defrag: a moved pod's owner re-creates it and the scheduler places the replacement. To make it land where the
  plan says without editing anything gpusched did not create, the nodes being emptied are cordoned for the run
  (the run's own taint, which only this run removes: always, also after a failure); each move is one
  eviction and a wait for the owner's replacement, which must land on the planned node. A pod without an owner is
  not moved (evicted, it would be gone for good), nor is a move within one node (the device plugin, not gpusched,
  picks the GPUs) or a move that takes a pod off the cluster for a while (its owner re-creates it at once).
- mig plan: per node, cordon, evict the pods on the GPUs to reconfigure, label `nvidia.com/mig.config`, wait for
  mig-manager's `nvidia.com/mig.config.state=success`, uncordon.
- plan: bind each planned pod whose schedulerName is gpusched's profile, a gang's pods one after the other, all or
  nothing: a gang left bound in part when the run stops is rolled back (gpusched.actions.steps). Owned pods are
  deleted and re-created by their owner; pods without an owner are deleted and re-created unbound from the manifest
  the journal keeps, and only when the options allow it (`rollback`): otherwise such a gang is not bound.

Each journal also keeps where the plan puts pods (and, for mig plan, the GPUs it repartitions), with each pod's
needs as the live loader reads them, so the rest of the plan can be re-validated before every step
(gpusched.actions.revalidate); and what the validator finds already now, which is not drift later.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..errors import InputError
from ..models.kube import parse_pod
from ..models.quantity import format_quantity
from ..models.workload import GpuNeeds, Pod
from ..planner.optimize.defrag import DefragReport
from ..planner.optimize.mig.report import MigPlan
from ..planner.optimize.plan.report import PendingJob, PlannedPod, PlanReport
from ..planner.optimize.preempt import PreemptReport
from .journal import Journal, Placement, Step, new_run_id
from .kube import Kube, Snapshot, controller_uid, pod_key
from .revalidate import validator_findings
from .steps import MIG_CONFIG

__all__ = ["GANG_LABEL", "bind_journal", "gpusched_jobs", "defrag_journal", "mig_journal", "preempt_journal"]

GANG_LABEL = "scheduling.x-k8s.io/pod-group"  # the coscheduling plugin's pod-group label: the pods of one gang


def _live(snapshot: Snapshot) -> dict[str, dict]:
    return {pod_key(pod): pod for pod in snapshot.pods}


def _watch(pods: dict[str, dict], nodes: set[str]) -> dict[str, list[str]]:
    """The pods bound to each node the plan uses, not being deleted: any other that appears there is drift."""
    found: dict[str, list[str]] = {node: [] for node in sorted(nodes)}
    for key, pod in pods.items():
        node = (pod.get("spec") or {}).get("nodeName")
        if node in found and not pod["metadata"].get("deletionTimestamp"):
            found[node].append(key)
    return found


def _uid(pods: dict[str, dict], key: str) -> str | None:
    pod = pods.get(key)
    return None if pod is None else str(pod["metadata"]["uid"])


def _journal(kube: Kube, target: tuple[str, str | None, str, str], snapshot: Snapshot, **fields: Any) -> Journal:
    """The journal, with the validator's findings on the plan in the snapshot it was made from: its baseline."""
    kubeconfig, context, command, replan = target
    journal = Journal(
        run=new_run_id(), command=command, replan=replan, kubeconfig=kubeconfig, context=context,
        server=kube.server, **fields,
    )  # fmt: skip
    if journal.steps:
        journal.baseline = validator_findings(journal, 0, snapshot.pods, snapshot.cluster)
    if journal.baseline:
        journal.notes.append("the validator finds, already as planned (not counted as the cluster moving on): "
                             + "; ".join(journal.baseline))  # fmt: skip
    return journal


def _pending_needs(snapshot: Snapshot) -> dict[str, GpuNeeds]:
    """The Pending GPU pods' needs as the live loader reads them (cpu and memory included)."""
    return {pod.name: GpuNeeds.model_validate(pod.model_dump(include=set(GpuNeeds.model_fields)))
            for pod in snapshot.imported.pending.pods}  # fmt: skip


def _moved_needs(running: GpuNeeds | None, pod: dict) -> GpuNeeds:
    """A running pod's needs (the loader's: priority, labels, tolerations, selector) with its cpu and memory
    requests, which its replacement takes to the node it moves to."""
    requests = parse_pod({**pod, "kind": "Pod"}, pod_key(pod)).requests  # items of a list carry no kind
    more = {name: format_quantity(name, int(requests[name])) for name in ("cpu", "memory") if requests.get(name)}
    return (running or GpuNeeds()).model_copy(update=more)


def _needs_the_scheduler(pod: dict) -> str | None:
    """What of the pod only kube-scheduler checks, so that gpusched must not bind it itself; None: nothing."""
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    found = [
        ("resource claims", bool(spec.get("resourceClaims"))),
        ("volume claims", any("persistentVolumeClaim" in v or "ephemeral" in v for v in spec.get("volumes") or [])),
        ("pod affinity", bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))),
        ("topology spread constraints", bool(spec.get("topologySpreadConstraints"))),
        ("host ports", any(port.get("hostPort") for c in spec.get("containers") or [] for port in c.get("ports") or [])),
        ("scheduling gates", bool(spec.get("schedulingGates"))),
    ]  # fmt: skip
    return ", ".join(name for name, present in found if present) or None


def preempt_journal(kube: Kube, snapshot: Snapshot, report: PreemptReport, pending: str,
                    target: tuple[str, str | None, str, str], options: dict) -> Journal:  # fmt: skip
    pods = _live(snapshot)
    preemptor = pods.get(pending)
    unheld = _needs_the_scheduler(preemptor) if preemptor is not None else "it is gone"
    held = sorted({p.node for p in report.placements}) if unheld is None else []
    steps = [Step(kind="cordon", target=node) for node in held]
    steps += [Step(kind="evict", target=v.pod, uid=_uid(pods, v.pod), node=v.node) for v in report.victims]
    needs = _pending_needs(snapshot).get(pending, GpuNeeds())
    placements = []
    for p in report.placements:
        if unheld is None:
            steps.append(Step(kind="place", target=p.pod, uid=_uid(pods, p.pod), node=p.node))
        elif not any(step.kind == "scheduled" for step in steps):
            steps.append(Step(kind="scheduled", target=pending, node=p.node))
        placements.append(Placement(pod=p.pod, node=p.node, needs=needs, gpus=p.gpus, mig=p.mig, step=len(steps) - 1))
    steps += [Step(kind="uncordon", target=node, cleanup=True) for node in held]
    notes = [] if unheld is None else [
        f"not held: {pending} needs what only kube-scheduler checks ({unheld}), so kube-scheduler places it; a "
        "victim's replacement (its owner re-creates it) or another new pod may take the room first"
    ]  # fmt: skip
    nodes = {v.node for v in report.victims}
    return _journal(kube, target, snapshot, steps=steps, watch=_watch(pods, nodes), options=options,
                    placements=placements, notes=notes)  # fmt: skip


def defrag_journal(kube: Kube, snapshot: Snapshot, report: DefragReport, target: tuple[str, str | None, str, str],
                   options: dict) -> Journal:  # fmt: skip
    """The moves as steps; a plan with a move that cannot be carried out gets no steps, and notes saying why."""
    pods = _live(snapshot)
    notes = []
    for move in report.moves:
        pod = pods.get(move.pod)
        if pod is None:
            notes.append(f"not moved: {move.pod} is gone")
        elif controller_uid(pod) is None:
            notes.append(f"not moved: {move.pod} has no owner (evicted, it would be gone for good)")
        elif move.from_node == move.to_node:
            notes.append(f"not moved: {move.pod} moves within {move.from_node} (the device plugin picks the GPUs)")
    if any(step.action != "move" for step in report.steps):
        notes.append("not carried out: the plan takes a pod off the cluster for a while; its owner re-creates it")
    if notes:
        return _journal(kube, target, snapshot, steps=[], notes=notes, options=options)
    sources = {m.from_node for m in report.moves}
    emptied = sorted(sources - {m.to_node for m in report.moves})
    steps = [Step(kind="cordon", target=node) for node in emptied]
    running = snapshot.cluster.running
    placements = []
    for move in report.moves:
        uid, owner = _uid(pods, move.pod), controller_uid(pods[move.pod])
        steps.append(Step(kind="evict", target=move.pod, uid=uid, node=move.from_node))
        steps.append(Step(kind="replacement", target=move.pod, uid=uid, owner=owner, node=move.to_node))
        needs = _moved_needs(running.get(move.pod), pods[move.pod])
        placements.append(Placement(pod=move.pod, node=move.to_node, needs=needs, gpus=move.to_gpus,
                                    step=len(steps) - 1))  # fmt: skip
    shape = GpuNeeds(nvlink=report.shape.island)
    placements += [Placement(pod=t.pod, node=t.node, needs=shape, gpus=t.gpus) for t in report.targets]
    steps += [Step(kind="uncordon", target=node, cleanup=True) for node in emptied]
    shared = sorted(sources - set(emptied))
    if shared:
        notes.append(f"not cordoned: {', '.join(shared)} (pods move there too); a replacement may land back there")
    watch = _watch(pods, sources | {m.to_node for m in report.moves})
    return _journal(kube, target, snapshot, steps=steps, watch=watch, notes=notes, options=options,
                    placements=placements)  # fmt: skip


def mig_journal(kube: Kube, snapshot: Snapshot, plan: MigPlan, target: tuple[str, str | None, str, str],
                options: dict) -> Journal:  # fmt: skip
    pods = _live(snapshot)
    holders: dict[str, list[str]] = defaultdict(list)
    for change in plan.changes:
        for holder in change.holders:
            if holder not in holders[change.node]:
                holders[change.node].append(holder)
    steps = []
    for node, name in plan.labels.items():
        steps.append(Step(kind="cordon", target=node))
        steps += [Step(kind="evict", target=key, uid=_uid(pods, key), node=node) for key in holders[node]]
        before = ((snapshot.node(node) or {}).get("metadata", {}).get("labels") or {}).get(MIG_CONFIG)
        previous = {MIG_CONFIG: before} if before else {}
        steps.append(Step(kind="label", target=node, labels={MIG_CONFIG: name}, previous=previous))
        steps.append(Step(kind="mig-state", target=node, labels={MIG_CONFIG: name}))
        steps.append(Step(kind="uncordon", target=node, cleanup=True))
    notes = [
        "mig-manager applies a config by name: install the emitted mig-parted file (mig plan --emit mig-parted) as "
        "the GPU Operator's MIG config (its ConfigMap, default-mig-parted-config, or the one named by "
        "migManager.config.name) before applying"
    ]
    changes = [change for change in plan.changes if change.node in plan.labels]
    watch = _watch(pods, set(plan.labels))
    return _journal(kube, target, snapshot, steps=steps, watch=watch, notes=notes, options=options,
                    mig_changes=changes, mig_demand=plan.demand)  # fmt: skip


MANIFEST_DROPS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "deletionTimestamp")


def _manifest(pod: dict) -> dict:
    """The pod as it can be created again, unbound: its metadata a user sets, its spec without spec.nodeName."""
    metadata = {key: value for key, value in pod["metadata"].items() if key not in MANIFEST_DROPS}
    spec = {key: value for key, value in (pod.get("spec") or {}).items() if key != "nodeName"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def bind_journal(kube: Kube, snapshot: Snapshot, report: PlanReport, members: dict[str, list[str]],
                 target: tuple[str, str | None, str, str], options: dict) -> Journal:  # fmt: skip
    """Bind steps per planned job (`members`: job -> its pods, in order), and each gang's rollback. A gang with a
    pod that has no owner is bound only when `options["rollback"]` allows re-creating such pods."""
    pods = _live(snapshot)
    needs = _pending_needs(snapshot)
    planned: dict[str, list[PlannedPod]] = defaultdict(list)
    for assignment in report.assignments:
        planned[assignment.job].append(assignment)
    steps, rollback, placements = [], [], []
    notes = [f"not bound: {job} (no room in the plan)" for job in report.unplaced]
    for job, assigned in planned.items():
        keys = members[job]
        bare = [key for key in keys if key in pods and controller_uid(pods[key]) is None]
        if len(assigned) > 1 and bare and not options.get("rollback"):
            notes.append(f"not bound: gang {job}: {', '.join(bare)} {'has' if len(bare) == 1 else 'have'} no owner, "
                         "so an incomplete gang could be undone only by deleting them and re-creating them from "
                         "their manifests (new uids), which this plan is not allowed to do")  # fmt: skip
            continue
        for key, a in zip(keys, assigned, strict=True):
            steps.append(Step(kind="bind", target=key, uid=_uid(pods, key), node=a.node, owner=job))
            placements.append(Placement(pod=key, node=a.node, needs=needs.get(key, GpuNeeds()), gpus=a.gpus,
                                        mig=a.mig, step=len(steps) - 1))  # fmt: skip
            if len(assigned) > 1:
                manifest = _manifest(pods[key]) if key in bare else None
                rollback.append(Step(kind="delete", target=key, uid=_uid(pods, key), owner=job, cleanup=True,
                                     manifest=manifest))  # fmt: skip
    used = {a.node for found in planned.values() for a in found}
    return _journal(kube, target, snapshot, steps=steps + rollback, watch=_watch(pods, used), notes=notes,
                    options=options, placements=placements)  # fmt: skip


def gpusched_jobs(snapshot: Snapshot, scheduler: str) -> tuple[list[PendingJob], dict[str, list[str]]]:
    """The snapshot's pending pods whose schedulerName is `scheduler`, as jobs: the pods of one pod-group label form
    a gang (all-or-nothing), any other pod is a job of one; and each job's pods by name, in the order they are
    bound."""
    live = _live(snapshot)
    groups: dict[str, list[Pod]] = defaultdict(list)
    for pod in snapshot.imported.pending.pods:
        found = live.get(pod.name)
        if found is None or (found.get("spec") or {}).get("schedulerName", "default-scheduler") != scheduler:
            continue
        group = (found["metadata"].get("labels") or {}).get(GANG_LABEL)
        groups[f"{found['metadata'].get('namespace', 'default')}/{group}" if group else pod.name].append(pod)
    jobs, members = [], {}
    for name, pods in sorted(groups.items()):
        pods.sort(key=lambda pod: pod.name)
        if len({(pod.gpus, pod.mig_profile) for pod in pods}) > 1:
            raise InputError(name, "its pods ask for different GPUs; a gang is planned as identical pods", GANG_LABEL)
        jobs.append(PendingJob(name, len(pods), pods[0].gpus, pods[0]))
        members[name] = [pod.name for pod in pods]
    return jobs, members
