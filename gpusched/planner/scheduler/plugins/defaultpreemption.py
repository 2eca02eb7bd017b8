"""DefaultPreemption, the PostFilter: its rules for the kubectl view (`predict`) and gpusched's model (`preempt`).

Victims on a node: remove every lower-priority pod; if the pod then fits, put back as many as possible, the pods
whose eviction would break a disruption budget first, each group most important first. The node: fewest budget
violations, the lowest "most important victim", the smallest priority sum, the fewest victims, the latest start
(`pickOneNodeForPreemption`, identical in 1.34-1.37; pkg/scheduler/framework/preemption in the Kubernetes sources).

The dry run starts at a random node and stops once it holds `candidates_wanted` candidates, one of them within every
budget, and a tie after every rule goes to whichever candidate was collected first: so the real nomination is
random among `choices`, the candidates that can win some such sample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

from ....models.kube import KubePdb, KubePod
from ..framework import Code, Diagnosis, Status, Version, unresolvable
from ..names import DEFAULT_PREEMPTION as NAME
from ..nodeinfo import KubeNodeInfo

__all__ = [
    "NAME",
    "ERR_REASON_NO_VICTIMS",
    "ERR_REASON_NOT_HELPFUL",
    "ERR_REASON_POLICY_NEVER",
    "ERR_REASON_NOMINATED",
    "ERR_REASON_TERMINATING",
    "LATEST",
    "Candidate",
    "Victim",
    "budget_split",
    "candidates_wanted",
    "importance",
    "pick",
    "choices",
    "reprieve",
    "NodeFits",
    "dry_run",
    "nominated_message",
    "preempt",
]

ERR_REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
ERR_REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
ERR_REASON_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_REASON_TERMINATING = "not eligible due to a terminating pod on the nominated node."
ERR_REASON_NOMINATED = "found a potential placement for pod on node {node}, preempting {victims} victims"  # 1.37+

LATEST = datetime.max.replace(tzinfo=UTC)  # a pod without a start time counts as started now


class Victim(Protocol):
    @property
    def priority(self) -> int: ...

    @property
    def start_time(self) -> datetime | None: ...


V = TypeVar("V", bound=Victim)


def candidates_wanted(nodes: int) -> int:
    """How many candidate nodes the dry run collects before it stops (`GetOffsetAndNumCandidates`: 10% of the
    nodes it may try, at least 100, at most all), once at least one of them violates no budget."""
    return min(nodes, max(100, nodes * 10 // 100))


def importance(pod: Victim) -> tuple[int, datetime]:
    """Sort key, most important first (`MoreImportantPod`): higher priority, then the earlier start."""
    return (-pod.priority, pod.start_time or LATEST)


@dataclass(frozen=True)
class Candidate(Generic[V]):
    node: str
    victims: tuple[V, ...]  # most important first
    budget_violations: int = 0


def budget_split(
    ordered: Sequence[V], allowed: Sequence[int], selects: Callable[[int, V], bool]
) -> tuple[list[V], list[V]]:
    """`filterPodsWithPDBViolation`: walking most important first, a pod whose budget is used up violates it."""
    left = list(allowed)
    violating: list[V] = []
    fine: list[V] = []
    for pod in ordered:
        broken = False
        for index in range(len(left)):
            if selects(index, pod):
                left[index] -= 1
                broken = broken or left[index] < 0
        (violating if broken else fine).append(pod)
    return violating, fine


def reprieve(violating: Sequence[V], fine: Sequence[V], fits: Callable[[list[V]], bool]) -> tuple[V, ...]:
    """Put pods back while the pod still fits without the rest; `fits(removed)` with every given pod removed holds.

    Budget-violating pods are tried first. Returns the victims, most important first.
    """
    removed = [*violating, *fine]
    victims = []
    for pod in removed.copy():
        trial = [other for other in removed if other is not pod]
        if fits(trial):
            removed = trial
        else:
            victims.append(pod)
    return tuple(sorted(victims, key=importance))


def _top_start(candidate: Candidate[Any]) -> datetime:
    """The earliest start among the node's highest-priority victims."""
    top = candidate.victims[0].priority
    return min(v.start_time or LATEST for v in candidate.victims if v.priority == top)


_PICK_RULES: tuple[Callable[[Candidate[Any]], Any], ...] = (
    lambda c: -c.budget_violations,  # the fewest disruption budget violations
    lambda c: -c.victims[0].priority if c.victims else 2**63,  # the lowest "most important victim"
    lambda c: -sum(v.priority + 2**31 for v in c.victims),  # the smallest priority sum (shifted positive)
    lambda c: -len(c.victims),  # the fewest victims
    lambda c: _top_start(c) if c.victims else LATEST,  # the latest start among the top victims
)


def pick(candidates: Sequence[Candidate[V]]) -> Candidate[V]:
    """pickOneNodeForPreemption: each rule keeps only its best; a tie after all rules goes to the first."""
    remaining = list(candidates)
    for rule in _PICK_RULES:
        best = max(rule(c) for c in remaining)
        remaining = [c for c in remaining if rule(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def _rank(candidate: Candidate[Any]) -> tuple[Any, ...]:
    return tuple(rule(candidate) for rule in _PICK_RULES)


def choices(candidates: Sequence[Candidate[V]], wanted: int) -> list[Candidate[V]]:
    """Every candidate the real scheduler may nominate, in `candidates` order: the sample it collects (from a random
    start, in parallel, in an order kubectl does not show) is any `wanted` of them holding one within every budget,
    or all of them when none is. A candidate wins some sample when at most `len - wanted` candidates rank above it;
    one over budget never wins while one within every budget exists."""
    within = [c for c in candidates if c.budget_violations == 0]
    if not within or len(candidates) <= wanted:
        best = max(_rank(c) for c in candidates)
        return [c for c in candidates if _rank(c) == best]
    slack = len(candidates) - wanted
    return [c for c in within if sum(_rank(other) > _rank(c) for other in within) <= slack]


NodeFits = Callable[[KubePod, KubeNodeInfo], Status]  # the kubectl view's Filter plugins, run in order


def dry_run(
    pod: KubePod, info: KubeNodeInfo, fits: NodeFits, pdbs: Sequence[KubePdb] = ()
) -> Candidate[KubePod] | Status:
    """SelectVictimsOnNode: remove every lower-priority pod; if the pod then fits, put back as many as possible, the
    budget-violating ones first, most important first; each violating pod still evicted counts as a violation."""
    lower = [other for other in info.pods if other.priority < pod.priority]
    if not lower:
        return unresolvable(NAME, ERR_REASON_NO_VICTIMS)
    status = fits(pod, info.without(lower))
    if not status.ok:
        return status
    allowed = [pdb.allowed for pdb in pdbs]
    violating, fine = budget_split(
        sorted(lower, key=importance), allowed, lambda i, p: pdbs[i].covers(p) and p.name not in pdbs[i].disrupted
    )
    victims = reprieve(violating, fine, lambda gone: fits(pod, info.without(gone)).ok)
    return Candidate(info.node.name, victims, sum(1 for victim in victims if any(victim is v for v in violating)))


def _terminating_on_nominated(pod: KubePod, infos: list[KubeNodeInfo], statuses: dict[str, Status]) -> bool:
    """PodEligibleToPreemptOthers: a retried preemptor waits while a lower-priority pod that preemption evicted is
    still terminating on its nominated node (unless that node can no longer help at all)."""
    status = statuses.get(pod.nominated_node)
    if not pod.nominated_node or status is None or status.code is Code.UNRESOLVABLE:
        return False
    info = next((info for info in infos if info.name == pod.nominated_node), None)
    return info is not None and any(
        other.priority < pod.priority and other.deleting and other.preempted for other in info.pods
    )


def nominated_message(version: Version, candidate: Candidate[Any]) -> str:
    """The PostFilter message when `candidate` is nominated: none before 1.37."""
    if version[:2] < (1, 37):
        return ""
    return "preemption: " + ERR_REASON_NOMINATED.format(node=candidate.node, victims=len(candidate.victims))


def preempt(
    pod: KubePod,
    infos: list[KubeNodeInfo],
    statuses: dict[str, Status],
    version: Version,
    fits: NodeFits,
    pdbs: Sequence[KubePdb] = (),
) -> tuple[bool, str, list[Candidate[KubePod]]]:
    """The kubectl view's (success, message, the nodes it may nominate); only Unschedulable nodes are tried. The
    message is that of the first choice."""
    if pod.preemption_policy == "Never":
        return False, f"preemption: {ERR_REASON_POLICY_NEVER}", []
    if _terminating_on_nominated(pod, infos, statuses):
        return False, f"preemption: {ERR_REASON_TERMINATING}", []
    tried: dict[str, Status] = {}
    candidates: list[Candidate[KubePod]] = []
    potential = [info for info in infos if statuses[info.node.name].code is Code.UNSCHEDULABLE]
    for info in potential:
        result = dry_run(pod, info, fits, pdbs)
        if isinstance(result, Status):
            tried[info.node.name] = result
        else:
            candidates.append(result)
    if not candidates:
        absent = unresolvable(NAME, ERR_REASON_NOT_HELPFUL)
        inner = Diagnosis(len(infos), {info.node.name: tried.get(info.node.name, absent) for info in infos})
        return False, f"preemption: {inner.message}", []
    found = choices(candidates, candidates_wanted(len(potential)))
    return True, nominated_message(version, found[0]), found
