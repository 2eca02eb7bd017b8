"""Human output: the result models rendered as lines and rich tables. The library never prints; this does."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ..planner.allreduce import AllReduce
from ..planner.dra.allocator import allocated_devices
from ..planner.emit import KueueSetup, SchedulerConfig
from ..planner.frag import FragReport
from ..planner.gang import GangReport
from ..planner.place import PlaceReport, PodResult
from ..planner.scheduler.names import NODE_RESOURCES_FIT
from ..planner.scheduler.predict import K8sPrediction
from ..planner.scheduler.queue import QueueReplay
from ..planner.scheduler.scoring import ScoreReport
from .common import new_table


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def scenarios(console: Console, rows: list[Any]) -> None:
    table = new_table("name", "nodes", "pods", "jobs", "description")
    for row in rows:
        table.add_row(row.name, str(row.nodes), str(row.pods), str(row.jobs), row.description)
    console.print(table)


def advertised(console: Console, counts: dict[str, dict[str, int]]) -> None:
    table = new_table("node", "resource", "count")
    for node, resources in counts.items():
        if not resources:
            table.add_row(node, "-", "0")
        for resource, count in sorted(resources.items()):
            table.add_row(node, resource, str(count))
    console.print(table)


def pod_line(result: PodResult) -> str:
    if result.node is None:
        return f"{result.pod} Pending {result.message}"
    line = f"{result.pod} -> {result.node} {result.resource} GPUs {result.gpus} islands {result.islands}"
    if result.mig:
        line += " MIG " + ", ".join(f"GPU {gpu}@{start}" for gpu, start in result.mig)
    return line


def allreduce_line(result: AllReduce) -> str:
    if result.link is None:
        return "a single GPU: nothing to all-reduce"
    return (
        f"all-reduce of {result.gradient_gb:g} GB over {result.gpus} GPUs: {result.seconds:.2g} s per step "
        f"(slowest link {result.link} {result.slowest_gbps:g} GB/s)"
    )


def placement(console: Console, report: PlaceReport) -> None:
    for result in report.results:
        console.print(pod_line(result), markup=False)
        for warning in result.warnings:
            console.print(f"! {warning}", markup=False)
        if result.allreduce:
            console.print(f"  {allreduce_line(result.allreduce)}", markup=False)
    fragmentation(console, report.fragmentation, detail=False)


def _pct(value: float) -> str:
    return f"{value:g}%"


def fragmentation(console: Console, report: FragReport, detail: bool) -> None:
    console.print(
        f"fragmentation of exclusive GPUs: {report.free} free; largest block on one node {report.largest_node}, "
        f"inside one NVLink island {report.largest_island}",
        markup=False,
    )
    table = new_table("size", "pods(count)", "pods(island)", "stranded")
    for row in report.rows:
        table.add_row(
            str(row.size), str(row.pods_by_count), str(row.pods_in_island), f"{row.stranded} ({_pct(row.stranded_pct)})"
        )
    console.print(table)
    if detail and report.nodes:
        blocks = new_table("node", "free", "largest island block", "free GPUs by island")
        for node in report.nodes:
            islands = " ".join(str(members) for members in node.islands)
            blocks.add_row(node.node, str(len(node.free)), str(node.largest_island), islands)
        console.print(blocks)
    for gpu in report.mig:
        used = ", ".join(f"{i.profile}@{i.start}={i.holder}" for i in gpu.used) or "none"
        free = ", ".join(f"{profile} x{count}" for profile, count in gpu.free.items()) or "none"
        addable = ", ".join(gpu.addable) or "nothing"
        console.print(
            f"MIG {gpu.node} GPU {gpu.gpu}: used {used}; free instances {free}; a repartition could add {addable}",
            markup=False,
        )


def frag(console: Console, report: FragReport) -> None:
    fragmentation(console, report, detail=True)


def allreduce(console: Console, results: list[AllReduce]) -> None:
    for result in results:
        console.print(f"{result.ring}: {allreduce_line(result)}", markup=False)


def gang(console: Console, report: GangReport) -> None:
    table = new_table("job", "arrival", "start", "finish", "pods bound")
    for job in report.jobs:
        bound = "never fits" if job.never_fits else f"{job.pods_placed}/{job.pods}"
        table.add_row(job.job, _seconds(job.arrival), _seconds(job.start), _seconds(job.finish), bound)
    console.print(table)
    if report.deadlock:
        lock = report.deadlock
        pods_of = {job.job: job.pods for job in report.jobs}
        holders = ", ".join(f"{job} ({pods}/{pods_of[job]} pods)" for job, pods in lock.held_by.items())
        console.print(
            f"deadlock at t={lock.time:g}: {lock.gpus_held} GPUs held by {holders or 'nobody'}; nothing running",
            markup=False,
        )
    else:
        console.print(f"makespan {_seconds(report.makespan)} s", markup=False)
    console.print(f"GPU-hours held idle by partial gangs: {report.idle_gpu_hours:.2f}", markup=False)


def k8s(console: Console, result: K8sPrediction) -> None:
    for what in result.not_modelled:
        console.print(f"not modelled: {what} (the real verdict may differ)", markup=False)
    if result.never_tried:
        console.print(result.never_tried, markup=False)
        return
    if result.pre_enqueue:
        held = result.pre_enqueue
        shown = held.condition["message"] if held.condition else "no PodScheduled condition"
        console.print(f"never tried ({held.plugin} PreEnqueue: {held.reason}): {shown}", markup=False)
        return
    if result.fits:
        console.print(f"fits: {', '.join(result.feasible)}", markup=False)
        for claim in result.claims:
            console.print(
                f"claim {claim.claim} -> {', '.join(allocated_devices(claim.allocation or {}))}", markup=False
            )
        if result.scores is not None:
            scores(console, result.scores)
        return
    for line in result.details:
        console.print(line, markup=False)
    for claim in result.claims:
        if claim.diagnosis:
            console.print(f"claim {claim.claim}: {claim.diagnosis}", markup=False)
    console.print(f"FailedScheduling: {result.event}", markup=False)
    if result.nomination:
        victims = ", ".join(result.nomination.victims)
        console.print(f"nominated: {result.nomination.node} (preempting {victims})", markup=False)
        others = [choice.node for choice in result.nominations[1:]]
        if others:
            console.print(f"or, at random, one of: {', '.join(others)}", markup=False)


def queue(console: Console, result: QueueReplay) -> None:
    """One line per pending pod in queue order: where it binds (or the tie), or why it stays pending."""
    for number, step in enumerate(result.steps, 1):
        head = f"{number}. {step.pod} (priority {step.priority})"
        if step.node:
            tie = f" (tied: one of {', '.join(step.tied)}; the replay goes on with {step.node})" if step.tied else ""
            console.print(f"{head} -> {step.node}{tie}", markup=False)
        elif step.never_tried:
            console.print(f"{head} never tried: {step.never_tried}", markup=False)
        else:
            nominated = f" (preemption would nominate {step.nominated}; not replayed)" if step.nominated else ""
            console.print(f"{head} pending: {step.message}{nominated}", markup=False)


def scores(console: Console, report: ScoreReport) -> None:
    """Each Score plugin's normalised score per feasible node (its weight in the header), the weighted total, and
    the nodes the scheduler picks from."""
    if report.reason:
        if len(report.top) == 1 and report.scored == [] and report.reason.startswith("one feasible"):
            return  # `fits:` names it already
        console.print(f"binds to {', '.join(report.top)} ({report.reason})", markup=False)
        return
    table = new_table("node", *(f"{p.plugin} x{p.weight}" for p in report.plugins), "total")
    for node in report.scored:
        table.add_row(node, *(str(p.scores[node]) for p in report.plugins), str(report.totals[node]))
    console.print(table)
    if report.skipped:
        console.print(f"skipped at PreScore: {', '.join(report.skipped)}", markup=False)
    if len(report.top) == 1:
        console.print(f"picks: {report.top[0]}", markup=False)
    else:
        console.print(f"picks at random one of: {', '.join(report.top)} (tied)", markup=False)
    if report.sample:
        console.print(f"sample: {report.sample}", markup=False)
    for what in report.not_modelled:
        console.print(f"not modelled in the scores: {what}", markup=False)


def scheduler_config(console: Console, config: SchedulerConfig, target: str) -> None:
    weights = ", ".join(f"{name} {weight}" for name, weight in config.resources.items())
    where = "stdout" if target == "-" else target
    console.print(
        f"KubeSchedulerConfiguration -> {where}: profile {config.scheduler_name}, {NODE_RESOURCES_FIT} {config.strategy} "
        f"({weights}); pods choose it with spec.schedulerName: {config.scheduler_name}",
        markup=False,
    )


def kueue(console: Console, setup: KueueSetup, target: str) -> None:
    flavors = "; ".join(f"{f.name} ({', '.join(f.nodes)})" for f in setup.flavors)
    where = "stdout" if target == "-" else target
    console.print(
        f"Kueue -> {where}: ResourceFlavors {flavors}; ClusterQueue {setup.cluster_queue} "
        f"covering {', '.join(setup.covered)}; LocalQueue {setup.namespace}/{setup.local_queue}",
        markup=False,
    )
    for node, labels in setup.node_labels.items():
        pairs = " ".join(f"{key}={value}" for key, value in labels.items())
        console.print(f"no nvidia.com/gpu.product label: kubectl label node {node} {pairs}", markup=False)
    label = ", ".join(f"{key}: {value}" for key, value in setup.label.items())
    console.print(
        f"label each Job in namespace {setup.namespace} with {label} ({', '.join(job.job for job in setup.jobs)})",
        markup=False,
    )
    for warning in setup.warnings:
        console.print(f"! {warning}", markup=False)
    for job in setup.jobs:
        if job.reason:
            console.print(f"! {job.job}: {job.reason}", markup=False)
