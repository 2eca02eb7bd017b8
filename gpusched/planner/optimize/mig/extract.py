"""plan_mig's extraction and report: the counts per class become layouts per GPU, then the changes, the device
plugin's resources before and after, why the demand is not met, and the heuristics beside the optimum."""

from __future__ import annotations

from ....models.cluster import Cluster, MigInstance, Node
from ...state import ClusterState, advertised
from ...validate import require_valid
from ..solver import SolveReport
from .baselines import all_balanced, first_fit
from .layouts import Layout, MigGpu, NewInstance, RepartitionOutcome, instances_after, outcome
from .migparted import mig_parted, node_layouts
from .model import GpuClass
from .report import GpuChange, InstanceOut, MigPlan, NodeResources, PlanRow, TieBreak
from .validate import layout_violations

__all__ = ["build_report", "extract"]


def extract(classes: list[GpuClass], taken: list[list[int]]) -> dict[str, Layout]:
    """Hand each class's layouts to its GPUs in cluster order, the changes first; returns the changed GPUs."""
    layouts: dict[str, Layout] = {}
    for gpu_class, row in zip(classes, taken, strict=True):
        members = iter(gpu_class.members)
        for option, count in zip(gpu_class.options[1:], row[1:], strict=True):
            for _ in range(count):
                layouts[next(members).name] = option.layout
    return layouts


def _instances(items: list[NewInstance] | None) -> list[InstanceOut] | None:
    return None if items is None else [InstanceOut(profile=p, start=s, holder=h) for p, s, h in items]


def _change(gpu: MigGpu, layout: Layout) -> GpuChange:
    before = instances_after(gpu, gpu.free)
    after = instances_after(gpu, layout) or []
    old, new = set(before or []), set(after)
    return GpuChange(
        node=gpu.node,
        gpu=gpu.index,
        before=_instances(before),
        after=_instances(after) or [],
        destroyed=_instances(sorted(old - new, key=lambda i: i[1])) or [],
        created=_instances(sorted(new - old, key=lambda i: i[1])) or [],
        holders=[holder for _, _, holder in gpu.busy],
    )


def _resources(
    cluster: Cluster, gpus: list[MigGpu], layouts: dict[str, Layout], labels: dict[str, str]
) -> list[NodeResources]:
    """The device plugin's counts on every relabelled node: before, and after under mixed and single strategy."""
    before = ClusterState.from_cluster(cluster)
    by_name = {gpu.name: gpu for gpu in gpus}
    found = []
    for node in cluster.nodes:
        if node.name not in labels or node.gpu is None:
            continue
        layout = node_layouts(node.gpu, node.name, by_name, layouts)
        mig = [
            MigInstance(gpu=i, profile=p, start=s, holder=h)
            for i, items in enumerate(layout)
            for p, s, h in items or []
        ]
        mixed, single = (_advertise(node, mig, strategy) for strategy in ("mixed", "single"))
        problem = _single_problem(layout)
        found.append(
            NodeResources(
                node=node.name,
                strategy=node.gpu.mig_strategy,
                before=advertised(before.node(node.name)),
                mixed=mixed,
                single=None if problem else single,
                single_problem=problem,
            )
        )
    return found


def _advertise(node: Node, mig: list[MigInstance], strategy: str) -> dict[str, int]:
    assert node.gpu is not None
    block = node.gpu.model_copy(update={"mig": mig, "mig_strategy": strategy})
    state = ClusterState.from_cluster(Cluster(nodes=[node.model_copy(update={"gpu": block})]))
    return advertised(state.nodes[0])


def _single_problem(layout: list) -> str | None:
    names = sorted({p for items in layout for p, _, _ in items or []})
    if len(names) > 1:
        return f"profiles {', '.join(names)} on one node"
    if any(items is None for items in layout) and names:
        return "some GPUs have MIG disabled"
    return None


def _message(
    plan_outcome: RepartitionOutcome, demand: dict[str, int], alone: dict[str, int], report: SolveReport
) -> str | None:
    """Why the demand is not met: the most served together, and per profile the most it could get alone."""
    if plan_outcome.met:
        return None
    served = ", ".join(f"{name} {plan_outcome.served[name]} of {count}" for name, count in demand.items())
    first = report.levels[0]
    if first.status == "OPTIMAL":
        text = f"demand cannot be met: the most served together (counted in compute slices) is {served}"
    else:
        text = (
            f"demand not met within the time limit, and not proven impossible (the bound allows "
            f"{first.best_bound:g} compute slices): the best plan found serves {served}"
        )
    short = [f"{alone[name]} {name}" for name, count in demand.items() if alone[name] < count]
    return text + ("; even alone, no plan gives more than " + ", ".join(short) if short else "")


def _alone(classes: list[GpuClass], demand: dict[str, int]) -> dict[str, int]:
    """The most of each demanded profile the GPUs could give if nothing else were asked for (exact: off
    single-strategy nodes GPUs are independent; on one, every GPU must be able to take that profile alone)."""
    most = {}
    for p, (name, count) in enumerate(demand.items()):
        blocked = {
            cl.single_node
            for cl in classes
            if cl.single_node and not any(o.profile in (name, None) for o in cl.options)
        }
        total = sum(
            len(cl.members) * max(o.supply[p] for o in cl.options if not cl.single_node or o.profile in (name, None))
            for cl in classes
            if cl.single_node not in blocked
        )
        most[name] = min(count, total)
    return most


def build_report(
    cluster: Cluster,
    gpus: list[MigGpu],
    classes: list[GpuClass],
    demand: dict[str, int],
    layouts: dict[str, Layout],
    result: RepartitionOutcome,
    report: SolveReport,
    tie_break: TieBreak | None,
    first: dict[str, Layout] | None = None,
) -> MigPlan:
    """The plan's report beside the heuristics' rows (`first`: first-fit's layouts, when already worked out)."""
    config, labels = mig_parted(cluster, gpus, layouts)
    by_name = {gpu.name: gpu for gpu in gpus}
    rows = [PlanRow(plan="optimum", outcome=result)]
    fitted = first_fit(gpus, demand) if first is None else first
    for name, heuristic in (("first-fit", fitted), ("all-balanced", all_balanced(gpus))):
        require_valid(f"the {name} plan", layout_violations(cluster, gpus, heuristic, demand))
        rows.append(PlanRow(plan=name, outcome=outcome(gpus, heuristic, demand)))
    return MigPlan(
        demand=demand,
        outcome=result,
        message=_message(result, demand, _alone(classes, demand), report),
        solve=report,
        tie_break=tie_break,
        gpus=len(gpus),
        classes=len(classes),
        options=sum(len(cl.options) for cl in classes),
        changes=[_change(by_name[name], layout) for name, layout in layouts.items()],
        mig_parted=config,
        labels=labels,
        resources=_resources(cluster, gpus, layouts, labels),
        comparison=rows,
    )
