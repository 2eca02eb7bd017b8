"""`gpusched scale`: the cheapest nodes to add for a backlog (scale up), and the nodes that can go (scale down),
proven optimal or bounded, beside Karpenter's and Cluster Autoscaler's own rules."""

from __future__ import annotations

import time

from ....models.cluster import Cluster
from ....models.offers import NODEPOOL, Offers
from ...pending import PendingJob
from ...validate import require_valid
from ..solver import SolverConfig, collector_paused, solve_lexicographic
from .baselines import EXPANDERS, Problem, cluster_autoscaler, karpenter, outcome
from .down import scale_down
from .existing import use_existing
from .extract import extract, hint
from .model import build
from .report import NewNode, Outcome, PodPlacement, ScaleDownReport, ScaleUpReport
from .validate import plan_violations
from .world import PRICE_SCALE, Capacity, Fleet, Group, Offering, groups, offerings

__all__ = ["scale_up", "scale_down", "ScaleUpReport", "ScaleDownReport", "capacity_of", "compatibility"]


def capacity_of(cluster: Cluster, offers: Offers) -> Capacity:
    """The limits left for new nodes: the NodePool's, less what its existing nodes (karpenter.sh/nodepool) use."""
    own = [node for node in cluster.nodes if node.labels.get(NODEPOOL) == offers.nodepool]
    limits = offers.limits
    cpu = None if limits.cpu_milli is None else limits.cpu_milli - sum(n.cpu_milli or 0 for n in own)
    gpus = None if limits.gpus is None else limits.gpus - sum(n.gpu.count for n in own if n.gpu)
    cost = None if limits.cost_per_hour is None else round(limits.cost_per_hour * PRICE_SCALE)
    per_type = {kind.name: kind.max_nodes for kind in offers.instance_types if kind.max_nodes is not None}
    return Capacity(per_type, None if cpu is None else max(cpu, 0), None if gpus is None else max(gpus, 0), cost)


def compatibility(found: list[Group], offers: list[Offering]) -> dict[tuple[int, int], str | None]:
    """(group, offering) -> how one job of the group fits one fresh node: whole GPUs (None) or a MIG profile."""
    probe = Fleet("probe")
    compatible: dict[tuple[int, int], str | None] = {}
    for gi, group in enumerate(found):
        profile = group.needs.mig_profile
        for oi, offering in enumerate(offers):
            if profile is not None and profile not in offering.mig_profiles:
                continue
            if probe.fits_empty(group.first, offering, profile):
                compatible[gi, oi] = profile
    return compatible


def _key(weights: dict[str, int], unplaced: list[str], cost: int, nodes: int) -> tuple[int, int, int]:
    """The lexicographic objective of a plan, smaller is better."""
    return (sum(weights[name] for name in unplaced), cost, nodes)


def scale_up(cluster: Cluster, jobs: list[PendingJob], offers: Offers, config: SolverConfig) -> ScaleUpReport:
    """The cheapest nodes to add so that every pending job fits (as many as any plan can), existing free capacity
    used first; the plan is checked by the validator on the cluster with its nodes added."""
    began = time.process_time()
    with collector_paused():
        existing, rest = use_existing(cluster, jobs)
        found = groups(rest)
        offers_list = offerings(offers)
        capacity = capacity_of(cluster, offers)
        problem = Problem(found, offers_list, compatibility(found, offers_list), capacity)
        lowest = min((job.needs.priority for job in jobs), default=0)
        weights = {job.name: group.weight(lowest) for group in found for job in group.jobs}
        results: list[tuple[Outcome, Fleet, list[str]]] = []

        def run(name: str, solve_with) -> tuple[Outcome, Fleet, list[str]]:
            started = time.process_time()
            fleet, unplaced = solve_with()
            results.append((outcome(name, fleet, unplaced, started), fleet, unplaced))
            return results[-1]

        floor = run("karpenter", lambda: karpenter(problem))  # the heuristic first: the hint and the floor
        solve = None
        kept, fleet, unplaced = f"floor ({floor[0].name})", floor[1], floor[2]
        if found:
            built = build(found, offers_list, problem.compatible, capacity)
            hint(built, problem, floor[1], floor[2])
            solver, solve = solve_lexicographic(built.model, built.levels(lowest), config)
            if solve.levels and solve.levels[0].objective is not None:
                packing = max(1.0, config.time_limit - solve.seconds) / 2
                for dealt in (False, True) if built.partitioned else (False,):
                    mine, left = extract(built, solver, problem, packing, dealt)
                    if _key(weights, left, mine.cost(), len(mine.nodes)) <= _key(
                        weights, unplaced, fleet.cost(), len(fleet.nodes)
                    ):
                        kept, fleet, unplaced = "cp-sat", mine, left
        own = time.process_time() - began
        for expander in EXPANDERS:  # beside it; a better one (never seen yet) would be kept, and say so
            other = run(f"ca-{expander}", lambda e=expander: cluster_autoscaler(problem, e, config.seed))
            if _key(weights, other[2], other[1].cost(), len(other[1].nodes)) < _key(
                weights, unplaced, fleet.cost(), len(fleet.nodes)
            ):
                kept, fleet, unplaced = f"floor ({other[0].name})", other[1], other[2]
        require_valid("a scale-up plan", plan_violations(cluster, existing, fleet, jobs, capacity, unplaced))
        status, bound, gap = _quality(solve, weights, unplaced, fleet, bool(found))
    return ScaleUpReport(
        nodepool=offers.nodepool,
        status=status,
        cost_per_hour=fleet.cost() / PRICE_SCALE,
        bound_per_hour=bound,
        gap=gap,
        kept=kept,
        solve=solve,
        pending_pods=sum(job.pods for job in jobs),
        shapes=len(found),
        offerings=len(offers_list),
        existing=[
            PodPlacement(pod=a.pod, node=a.node, gpus=list(a.gpus), mig=list(a.mig), new=False) for a in existing
        ],
        new_nodes=[_new_node(node) for node in fleet.nodes],
        placements=[
            PodPlacement(pod=a.pod, node=a.node, gpus=list(a.gpus), mig=list(a.mig), new=True)
            for a in fleet.assignments()
        ],
        unplaced=sorted(unplaced),
        baselines=[r[0] for r in results],
        cpu_seconds=own,
    )


def _quality(solve, weights: dict[str, int], unplaced: list[str], fleet: Fleet, work: bool):
    """Status, bound and gap of the plan kept: OPTIMAL only when its placed weight and cost meet what CP-SAT
    proved no plan can beat."""
    if not work:
        return "OPTIMAL", 0.0, 0.0
    if solve is None or len(solve.levels) < 2 or solve.levels[1].best_bound is None:
        return "FEASIBLE", None, None
    placed_level, cost_level = solve.levels[0], solve.levels[1]
    placed = sum(weights.values()) - sum(weights[name] for name in unplaced)
    if placed_level.status != "OPTIMAL" or placed < (placed_level.objective or 0):
        return "FEASIBLE", None, None  # the cost bound holds only for plans that place as much as the optimum
    cost, bound = fleet.cost(), round(cost_level.best_bound)
    gap = 0.0 if cost <= bound else (cost - bound) / max(cost, 1)
    proven = gap == 0.0
    status = "OPTIMAL" if proven and (len(solve.levels) < 3 or _nodes_proven(solve, fleet)) else "FEASIBLE"
    return status, bound / PRICE_SCALE, gap


def _nodes_proven(solve, fleet: Fleet) -> bool:
    nodes = solve.levels[2]
    return nodes.best_bound is not None and len(fleet.nodes) <= round(nodes.best_bound)


def _new_node(node) -> NewNode:
    offering = node.offering
    mig: dict[str, int] = {}
    for gpu in node.state.gpus:
        if gpu.mig:
            mig[gpu.mig[0].profile] = mig.get(gpu.mig[0].profile, 0) + 1
    return NewNode(
        name=node.name,
        offering=offering.key,
        instance_type=offering.kind.name,
        capacity_type=offering.price.capacity_type,
        zone=offering.price.zone,
        per_hour=offering.price.per_hour,
        mig=mig,
        pods=[a.pod for a in node.pods],
    )
