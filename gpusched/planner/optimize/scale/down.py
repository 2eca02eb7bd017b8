"""`gpusched scale down`: nodes to remove (their pods moved to the nodes kept) or to replace by a cheaper offering,
with the fewest and least important evictions, within the disruption budgets; beside Karpenter's consolidation
(empty nodes, then single-node delete or replace) and Cluster Autoscaler's utilisation-threshold scale-down.

Rules every answer keeps: a node or pod marked `karpenter.sh/do-not-disrupt: "true"` stays; a pod a budget lets no
eviction stays; a gang (running pods sharing the `gpusched.io/gang` label) spread over several nodes stays (moved
whole only; not modelled); a pod that fits no kept node stays, and so does its node. Moves go through the
scheduler's filters (`evaluate`) onto nodes kept, first fit; a node that takes moved pods is kept.

gpusched's answer is the best of its own order (the most saved per eviction first) and the autoscalers' rules; its
bound is a CP-SAT relaxation (budgets, the GPUs freed against the GPUs left free), so the gap says how far any
answer could still go.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from ....models.cluster import Cluster, Node, RunningPod
from ....models.offers import CAPACITY_TYPE, DO_NOT_DISRUPT, INSTANCE_TYPE, ZONE, Offers
from ...pending import PendingJob, weight_of
from ...scheduler.plugins.gpudevices import GpuChoice
from ...scheduler.views import evaluate
from ...state import ClusterState, NodeState
from ...validate import Assignment, require_valid
from ..disrupt import Budgets, problems
from ..solver import SolverConfig, collector_paused, solve_lexicographic
from .report import DownOutcome, PodPlacement, Removal, ScaleDownReport
from .world import PRICE_SCALE, Fleet, Offering, offerings

__all__ = ["GANG_LABEL", "scale_down"]

GANG_LABEL = "gpusched.io/gang"
UTILISATION_THRESHOLD = 0.5  # Cluster Autoscaler's --scale-down-utilization-threshold default


@dataclass
class _Plan:
    removed: list[str] = field(default_factory=list)
    replaced: dict[str, Offering] = field(default_factory=dict)
    moves: list[Assignment] = field(default_factory=list)
    evicted: list[RunningPod] = field(default_factory=list)

    def saves(self, prices: dict[str, int]) -> int:
        replaced = sum(prices.get(n, 0) - o.cost for n, o in self.replaced.items())
        return sum(prices.get(n, 0) for n in self.removed) + replaced

    def key(self, prices: dict[str, int], weights: dict[str, int]) -> tuple[int, int, int]:
        """Larger is better: saved, then nodes gone, then fewer (priority-weighted) evictions."""
        return (self.saves(prices), len(self.removed), -sum(weights[p.name] for p in self.evicted))


def node_prices(cluster: Cluster, offers: Offers | None) -> dict[str, int]:
    """Each node's price (PRICE_SCALE units) from the offering its labels name: instance type, capacity type
    (on-demand when unlabelled), zone (the cheapest zone when unlabelled); unpriced nodes are left out."""
    if offers is None:
        return {}
    found = {}
    table = offerings(offers)
    for node in cluster.nodes:
        kind = node.labels.get(INSTANCE_TYPE)
        capacity = node.labels.get(CAPACITY_TYPE, "on-demand")
        zone = node.labels.get(ZONE)
        prices = [
            o.cost
            for o in table
            if o.kind.name == kind and o.price.capacity_type == capacity and zone in (None, o.price.zone)
        ]
        if prices:
            found[node.name] = min(prices)
    return found


def _blocked(cluster: Cluster, on: dict[str, list[RunningPod]], budgets: Budgets) -> dict[str, str]:
    """Nodes no answer may take, and why."""
    gangs: dict[str, set[str]] = {}
    for pods in on.values():
        for pod in pods:
            if GANG_LABEL in pod.needs.labels:
                gangs.setdefault(pod.needs.labels[GANG_LABEL], set()).add(pod.node)
    why = {}
    for node in cluster.nodes:
        if node.labels.get(DO_NOT_DISRUPT) == "true":
            why[node.name] = f"the node has {DO_NOT_DISRUPT}"
            continue
        for pod in on.get(node.name, []):
            if pod.needs.labels.get(DO_NOT_DISRUPT) == "true":
                why[node.name] = f"{pod.name} has {DO_NOT_DISRUPT}"
            elif budgets.pinned(pod):
                names = [budgets.names[i] for i in budgets.selecting(pod) if budgets.allowed[i] == 0]
                why[node.name] = f"{pod.name}: disruption budget {names[0]} allows no eviction"
            elif len(gangs.get(pod.needs.labels.get(GANG_LABEL, ""), set())) > 1:
                why[node.name] = f"{pod.name}: its gang spans nodes (moved whole only)"
            if node.name in why:
                break
    return why


class _Mover:
    """The cluster as pods move off removed nodes: first fit onto nodes kept, through the scheduler's filters."""

    def __init__(
        self, cluster: Cluster, on: dict[str, list[RunningPod]], budgets: Budgets, targets: Sequence[str] = ()
    ) -> None:
        self.state = ClusterState.from_cluster(cluster)
        self.targets = [self.state.node(n) for n in targets] if targets else self.state.nodes
        self.on = on
        self.budgets = budgets
        self.gone: set[str] = set()
        self.receiving: set[str] = set()
        self.used: Counter[int] = Counter()

    def _free(self, node: NodeState) -> int:
        return sum(len([s for s in g.mig if s.holder is None]) if g.mig else g.free_replicas for g in node.gpus)

    def try_remove(self, name: str, plan: _Plan) -> bool:
        pods = self.on.get(name, [])
        use = Counter(i for pod in pods for i in self.budgets.selecting(pod))
        if any(self.used[i] + n > self.budgets.allowed[i] for i, n in use.items()):
            return False
        placed: list[tuple[NodeState, Assignment]] = []
        for pod in sorted(pods, key=lambda p: -(len(p.mig) or len(p.gpus))):
            units = len(pod.mig) or len(pod.gpus)
            target = self._target(pod, units, name)
            if target is None:
                for node, a in placed:
                    node.vacate(a.pod, a.needs)
                return False
            node, choice = target
            node.occupy(pod.name, pod.needs, choice.gpus, choice.mig)
            placed.append(
                (node, Assignment(pod.name, pod.needs, node.name, tuple(choice.gpus), tuple(choice.mig), units))
            )
        self.gone.add(name)
        self.used += use
        self.receiving |= {node.name for node, _ in placed}
        plan.removed.append(name)
        plan.moves += [a for _, a in placed]
        plan.evicted += pods
        return True

    def _target(self, pod: RunningPod, units: int, leaving: str) -> tuple[NodeState, GpuChoice] | None:
        for node in self.targets:
            if node.name == leaving or node.name in self.gone or self._free(node) < units:
                continue
            found = evaluate(pod.needs, units, node, "gpu")
            if isinstance(found, GpuChoice):
                return node, found
        return None

    def candidate(self, name: str) -> bool:
        return name not in self.gone and name not in self.receiving


def _run(
    cluster: Cluster,
    on: dict[str, list[RunningPod]],
    budgets: Budgets,
    order: Sequence[str],
    replace: Callable[[str], Offering | None] | None = None,
    targets: Sequence[str] = (),
) -> _Plan:
    mover, plan = _Mover(cluster, on, budgets, targets), _Plan()
    for name in order:
        if mover.candidate(name) and not mover.try_remove(name, plan) and replace is not None:
            offering = replace(name)
            pods = on.get(name, [])
            use = Counter(i for pod in pods for i in budgets.selecting(pod))
            if (
                offering is not None
                and name not in mover.receiving
                and all(mover.used[i] + n <= budgets.allowed[i] for i, n in use.items())
            ):
                plan.replaced[name] = offering
                plan.evicted += pods
                mover.used += use
                mover.gone.add(name)
    return plan


def _replacer(cluster: Cluster, on: dict[str, list[RunningPod]], prices: dict[str, int], offers: Offers | None):
    """A cheaper offering one fresh node of which takes all of a node's pods (Karpenter's single-node replace)."""
    if offers is None:
        return None
    table = offerings(offers)
    probe = Fleet("replace")

    def find(name: str) -> Offering | None:
        price = prices.get(name)
        pods = on.get(name, [])
        if price is None or not pods:
            return None
        for offering in table:  # cheapest first
            if offering.cost >= price:
                return None
            trial = probe.launch(offering)
            jobs = [PendingJob(p.name, 1, len(p.mig) or len(p.gpus), p.needs) for p in pods]
            fits = all(probe.pack(job, [trial]) for job in jobs)
            probe.drop(trial)
            if fits:
                return offering
        return None

    return find


def _utilisation(node: Node, pods: list[RunningPod]) -> float:
    """Cluster Autoscaler's: for a GPU node the GPUs requested over allocatable, else the larger of cpu and memory."""
    if node.gpu is not None:
        held = sum(len(p.gpus) or len(p.mig) for p in pods)
        return held / max(1, node.gpu.count * node.gpu.replicas)
    cpu = sum(p.needs.cpu_milli for p in pods) / max(1, node.cpu_milli or 1)
    memory = sum(p.needs.memory_bytes for p in pods) / max(1, node.memory_bytes or 1)
    return max(cpu, memory)


def scale_down(cluster: Cluster, offers: Offers | None, config: SolverConfig) -> ScaleDownReport:
    began = time.process_time()
    with collector_paused():
        running = cluster.running_pods()
        on: dict[str, list[RunningPod]] = {}
        for pod in running:
            on.setdefault(pod.node, []).append(pod)
        budgets = Budgets.of(cluster)
        blocked = _blocked(cluster, on, budgets)
        prices = node_prices(cluster, offers)
        lowest = min((p.needs.priority for p in running), default=0)
        weights = {p.name: weight_of(p.needs.priority, lowest) for p in running}
        free = [n.name for n in cluster.nodes if n.name not in blocked]
        replace = _replacer(cluster, on, prices, offers)

        def cost(name: str) -> int:
            return sum(weights[p.name] for p in on.get(name, []))

        outcomes: list[DownOutcome] = []
        plans: list[tuple[str, _Plan]] = []

        def rule(name: str, order: list[str], with_replace: bool, targets: Sequence[str] = ()) -> None:
            started = time.process_time()
            plan = _run(cluster, on, budgets, order, replace if with_replace else None, targets)
            plans.append((name, plan))
            outcomes.append(
                DownOutcome(
                    name=name,
                    removed=sorted([*plan.removed, *plan.replaced]),
                    saves_per_hour=plan.saves(prices) / PRICE_SCALE,
                    evictions=len(plan.evicted),
                    seconds=time.process_time() - started,
                )
            )

        empty_first = sorted(free, key=lambda n: (bool(on.get(n)), cost(n), n))
        rule("karpenter", empty_first, True)
        nodes = {n.name: n for n in cluster.nodes}
        under = [n for n in free if _utilisation(nodes[n], on.get(n, [])) < UTILISATION_THRESHOLD]
        rule("ca-utilisation", sorted(under, key=lambda n: (_utilisation(nodes[n], on.get(n, [])), n)), False)
        order = sorted(free, key=lambda n: (-prices.get(n, 0) / (1 + cost(n)), cost(n), n))
        # moved pods go first to the nodes that stay anyway, then to the fullest: the rest stay free to go
        stay = sorted(nodes, key=lambda n: (n not in blocked, -len(on.get(n, [])), n))
        rule("gpusched-order", order, True, stay)
        rule("gpusched-fullest", sorted(free, key=lambda n: (len(on.get(n, [])), -prices.get(n, 0), n)), True, stay)
        name, best = max(plans, key=lambda item: item[1].key(prices, weights))
        bound, solve = _bound(cluster, on, budgets, free, prices, config)
        evicted = {p.name for p in best.evicted}
        moved = {a.pod for a in best.moves} | {p.name for n in best.replaced for p in on.get(n, [])}
        gone = set(best.removed) | set(best.replaced)
        require_valid("a scale-down plan", problems(cluster, evicted, best.moves))
        assert not {a.node for a in best.moves} & gone, "no pod moves onto a node that goes"
        assert moved == evicted and not budgets.overdrawn(best.evicted), "every evicted pod has a place"
        saved = best.saves(prices)
        gap = None if bound is None else (0.0 if saved >= bound else (bound - saved) / max(bound, 1))
        status = "OPTIMAL" if gap == 0.0 else "FEASIBLE"
    removals = [
        Removal(
            node=n,
            action="delete",
            saves_per_hour=prices.get(n, 0) / PRICE_SCALE,
            evicted=[p.name for p in on.get(n, [])],
        )
        for n in best.removed
    ] + [
        Removal(
            node=n,
            action="replace",
            replacement=o.key,
            saves_per_hour=(prices[n] - o.cost) / PRICE_SCALE,
            evicted=[p.name for p in on.get(n, [])],
        )
        for n, o in best.replaced.items()
    ]
    return ScaleDownReport(
        status=status,
        saves_per_hour=saved / PRICE_SCALE,
        bound_per_hour=None if bound is None else bound / PRICE_SCALE,
        gap=gap,
        solve=solve,
        removals=removals,
        moves=[PodPlacement(pod=a.pod, node=a.node, gpus=list(a.gpus), mig=list(a.mig), new=False) for a in best.moves],
        kept_by_rule=dict(sorted(blocked.items())),
        baselines=[o for o in outcomes if not o.name.startswith("gpusched")],
        kept=name,
        cpu_seconds=time.process_time() - began,
    )


def _bound(
    cluster: Cluster,
    on: dict[str, list[RunningPod]],
    budgets: Budgets,
    free: list[str],
    prices: dict[str, int],
    config: SolverConfig,
):
    """The most any answer could save: nodes not blocked, within the budgets, the GPU units freed no more than the
    units left free on the nodes kept (a relaxation of moving pods one by one). None without prices."""
    if not prices:
        return None, None
    model = cp_model.CpModel()
    state = ClusterState.from_cluster(cluster)
    units = {n.name: sum(len(g.mig) if g.mig else g.replicas for g in n.gpus) for n in state.nodes}
    busy = {n: sum(len(p.mig) or len(p.gpus) for p in on.get(n, [])) for n in units}
    go = {n: model.new_bool_var(f"remove[{n}]") for n in free if prices.get(n, 0) > 0}
    left = sum((units[n] - busy[n]) * (1 - go[n]) if n in go else units[n] - busy[n] for n in units)
    model.add(sum(busy[n] * v for n, v in go.items()) <= left)
    for i, allowed in enumerate(budgets.allowed):
        model.add(sum(v * sum(i in budgets.selecting(p) for p in on.get(n, [])) for n, v in go.items()) <= allowed)
    if not go:
        return 0, None
    _, solve = solve_lexicographic(model, [("saved", "maximize", sum(prices[n] * v for n, v in go.items()))], config)
    level = solve.levels[0]
    return (None if level.best_bound is None else round(level.best_bound)), solve
