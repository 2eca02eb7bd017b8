"""What every scale planner and baseline works on: the offerings (instance type × capacity type × zone), the
pending work grouped by the shape the GPUs see, and nodes that are launched while pods are packed onto them.

A launched node is a fresh Node of its offering (labels, taints, cpu, memory, GPUs); a MIG-capable node gets one
profile per partitioned GPU, as many instances of it as fit (what mig-manager would be asked to create). Packing
onto launched nodes goes through the scheduler's own filters and GPU allocator (`evaluate`), so a pod lands only
where kube-scheduler would let it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from ....models.cluster import GpuBlock, MigInstance, Node
from ....models.mig import placement_error, profiles_for
from ....models.offers import CAPACITY_TYPE, INSTANCE_TYPE, NODEPOOL, ZONE, InstanceType, Offers, Price
from ....models.workload import GpuNeeds
from ...pending import PendingJob, weight_of
from ...place import needs_key
from ...scheduler.plugins.gpudevices import GpuChoice
from ...scheduler.views import evaluate
from ...state import GpuState, MigSlot, NodeState, node_state
from ...validate import Assignment

__all__ = [
    "PRICE_SCALE", "Offering", "offerings", "Capacity", "Group", "groups", "homogeneous", "Fleet", "Launched",
]  # fmt: skip

PRICE_SCALE = 10_000  # prices as integers for CP-SAT: 1/10,000 of the currency per hour


@dataclass(frozen=True)
class Offering:
    """One way to buy a node: an instance type in a zone, on-demand or spot."""

    kind: InstanceType
    price: Price
    pool: str
    pool_labels: tuple[tuple[str, str], ...]
    pool_taints: tuple = ()

    @property
    def key(self) -> str:
        return f"{self.kind.name}/{self.price.capacity_type}/{self.price.zone}"

    @property
    def cost(self) -> int:
        """The price per hour in PRICE_SCALE units (what CP-SAT minimises)."""
        return round(self.price.per_hour * PRICE_SCALE)

    @property
    def gpu(self) -> GpuBlock:
        assert self.kind.gpu is not None, "offers are resolved (scenarios.offers) before planning"
        return self.kind.gpu

    @cached_property
    def labels(self) -> dict[str, str]:
        return {
            **dict(self.pool_labels),
            **self.kind.labels,
            INSTANCE_TYPE: self.kind.name,
            CAPACITY_TYPE: self.price.capacity_type,
            ZONE: self.price.zone,
            NODEPOOL: self.pool,
        }

    @cached_property
    def simple(self) -> bool:
        """Exclusive GPUs in one island, or each its own: any free GPUs serve a pod that fits the count."""
        gpu = self.gpu
        return gpu.replicas == 1 and (not gpu.islands or (len(gpu.islands) == 1 and len(gpu.islands[0]) == gpu.count))

    @cached_property
    def mig_profiles(self) -> list[str]:
        """Profiles a new node may be partitioned into (none: not MIG-capable, or time-sliced)."""
        gpu = self.gpu
        if not self.kind.mig or gpu.replicas > 1:
            return []
        known = list(profiles_for(gpu.model, gpu.memory_gib))
        return [p for p in known if gpu.mig_profiles is None or p in gpu.mig_profiles]

    def node(self, name: str, partitions: Sequence[str | None] = ()) -> Node:
        """A fresh node of this offering; `partitions[i]` is GPU i's MIG profile (None: a whole GPU)."""
        gpu = self.gpu
        instances = [
            MigInstance(gpu=index, profile=profile, start=start)
            for index, profile in enumerate(partitions)
            if profile is not None
            for start in homogeneous(gpu, profile)
        ]
        return Node(
            name=name,
            labels=self.labels,
            taints=list(self.pool_taints),
            cpu=self.kind.cpu,
            memory=self.kind.memory,
            gpu=gpu.model_copy(update={"mig": instances, "busy": []}),
        )


def offerings(offers: Offers) -> list[Offering]:
    """Every offering of every instance type, cheapest first (ties by key, so runs repeat)."""
    found = [
        Offering(kind, price, offers.nodepool, tuple(sorted(offers.labels.items())), tuple(offers.taints))
        for kind in offers.instance_types
        for price in kind.prices
    ]
    return sorted(found, key=lambda o: (o.cost, o.key))


def homogeneous(gpu: GpuBlock, profile: str) -> list[int]:
    """The starts of as many `profile` instances as one GPU holds (the layout mig-manager would create)."""
    profiles = profiles_for(gpu.model, gpu.memory_gib)
    chosen: list[tuple[str, int]] = []
    for start in profiles[profile].starts:
        if placement_error(profiles, [*chosen, (profile, start)]) is None:
            chosen.append((profile, start))
    return [start for _, start in chosen]


@dataclass(frozen=True)
class Capacity:
    """What may still be launched: per instance type (max_nodes) and over the NodePool (cpu, GPUs, cost)."""

    per_type: dict[str, int]
    cpu_milli: int | None
    gpus: int | None
    cost: int | None  # PRICE_SCALE units per hour

    def allows(self, launched: Sequence[Offering], offering: Offering) -> bool:
        """Whether one more node of the offering stays within every limit, beside those launched."""
        limit = self.per_type.get(offering.kind.name)
        if limit is not None and sum(o.kind.name == offering.kind.name for o in launched) >= limit:
            return False
        checks = (
            (self.cpu_milli, lambda o: o.kind.cpu_milli),
            (self.gpus, lambda o: o.gpu.count),
            (self.cost, lambda o: o.cost),
        )
        return all(cap is None or sum(map(of, launched)) + of(offering) <= cap for cap, of in checks)


@dataclass
class Group:
    """Pending jobs the filters cannot tell apart: same needs, GPUs per pod, pods per job and priority."""

    jobs: list[PendingJob]

    @property
    def first(self) -> PendingJob:
        return self.jobs[0]

    @property
    def needs(self) -> GpuNeeds:
        return self.first.needs

    @property
    def gpus(self) -> int:
        return self.first.gpus

    @property
    def pods(self) -> int:
        return self.first.pods

    @property
    def confined(self) -> bool:
        """All of a job's pods on one new node (a new node is an NVLink domain of its own)."""
        return self.first.confined

    def weight(self, lowest: int) -> int:
        """What placing one job is worth to the first objective: its GPUs, weighted by priority."""
        return weight_of(self.needs.priority, lowest) * self.gpus * self.pods

    @property
    def items_per_job(self) -> int:
        """Packing items per job: a confined job is one item (all its pods on one node), else one per pod."""
        return 1 if self.confined else self.pods


def groups(jobs: Iterable[PendingJob]) -> list[Group]:
    found: dict[tuple, Group] = {}
    for job in jobs:
        key = (needs_key(job.needs), job.gpus, job.pods, job.confined, job.needs.priority)
        found.setdefault(key, Group([])).jobs.append(job)
    return list(found.values())


@dataclass(eq=False)  # one node is itself: compared by identity (its state is large)
class Launched:
    """A node the plan launches: its offering, its model, its state as pods are packed onto it."""

    offering: Offering
    state: NodeState
    pods: list[Assignment] = field(default_factory=list)
    free: int = 0  # units (GPUs, replicas, MIG instances) still free: a quick test before the filters

    def __post_init__(self) -> None:
        self.free = sum(len(g.mig) if g.mig else g.replicas - len(g.holders) for g in self.state.gpus)

    @property
    def name(self) -> str:
        return self.state.name

    def room(self) -> int:
        return self.offering.kind.pods - len(self.pods)


Choice = tuple[tuple[int, ...], tuple[tuple[int, int], ...]]  # (GPUs, MIG instances) a pod takes


class Fleet:
    """The nodes launched so far, and the packing of pods onto them (all of a job's pods, or none)."""

    def __init__(self, prefix: str = "new") -> None:
        self.prefix = prefix
        self.nodes: list[Launched] = []
        self._count = 0
        self._accepted: dict[tuple[str, int, int], tuple[GpuNeeds, bool]] = {}
        self._cursor: dict[tuple[int, int], int] = {}  # first fit of identical pods: where the last one went
        self._full = 0  # the fleet's own nodes before this one are full
        self._templates: dict[tuple[str, tuple[str | None, ...]], NodeState] = {}  # per offering and layout

    def launch(self, offering: Offering, partitions: Sequence[str | None] = ()) -> Launched:
        self._count += 1
        safe = offering.key.replace("/", "-").replace("_", "-").replace(".", "-").lower()
        key = (offering.key, tuple(partitions))
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = node_state(offering.node("template", partitions))
        gpus = [
            GpuState(g.index, g.island, g.replicas, g.memory_gib, [], [MigSlot(m.profile, m.start) for m in g.mig])
            for g in template.gpus
        ]
        spec = template.spec.model_copy(update={"name": f"{self.prefix}-{self._count}-{safe}"})
        launched = Launched(offering, NodeState(spec, gpus))
        self.nodes.append(launched)
        return launched

    def drop(self, launched: Launched) -> None:
        self.nodes.remove(launched)
        self._cursor.clear()
        self._full = 0

    def _try(self, needs: GpuNeeds, gpus: int, node: Launched) -> Choice | None:
        """Where the pod would go on the node, or None. A whole-GPU exclusive pod on a node whose islands are
        all-or-nothing is decided by counting (free GPUs, cpu, memory) once the filters have accepted its needs
        on such a node: there any free GPUs serve, so the scheduler's allocator is asked once per needs."""
        if node.room() < 1:
            return None
        spec = node.state.spec
        if needs.cpu_milli and node.state.cpu_requested + needs.cpu_milli > (spec.cpu_milli or 0):
            return None
        if needs.memory_bytes and node.state.memory_requested + needs.memory_bytes > (spec.memory_bytes or 0):
            return None
        if node.offering.simple and not needs.mig_profile and not needs.shared:
            free = [gpu.index for gpu in node.state.gpus if not gpu.mig and not gpu.holders]
            if len(free) < gpus:
                return None
            key = (node.offering.key, id(needs), gpus)
            if key not in self._accepted:
                found = evaluate(needs, gpus, node.state, "gpu")
                self._accepted[key] = (needs, isinstance(found, GpuChoice))  # needs kept: its id stays its own
            if not self._accepted[key][1]:
                return None
            return tuple(free[:gpus]), ()
        found = evaluate(needs, gpus, node.state, "gpu")
        return (tuple(found.gpus), tuple(found.mig)) if isinstance(found, GpuChoice) else None

    def _bind(self, name: str, job: PendingJob, node: Launched, choice: Choice) -> None:
        gpus, mig = choice
        node.state.occupy(name, job.needs, gpus, mig)
        node.pods.append(Assignment(name, job.needs, node.name, gpus, mig, job.gpus))
        node.free -= len(mig) or len(gpus)

    def unbind(self, job: PendingJob, among: Sequence[Launched] | None = None) -> None:
        """Take the job's pods off these nodes (default: every node)."""
        names = set(job.pod_names())
        for node in self.nodes if among is None else set(among):
            mine = [a for a in node.pods if a.pod in names]
            for assignment in mine:
                node.state.vacate(assignment.pod, job.needs)
                node.pods.remove(assignment)
                node.free += len(assignment.mig) or len(assignment.gpus)
                self._cursor.clear()
                self._full = 0

    def clear(self, nodes: Sequence[Launched]) -> None:
        """Every pod off these nodes."""
        for node in nodes:
            for assignment in node.pods:
                node.state.vacate(assignment.pod, assignment.needs)
                node.free += len(assignment.mig) or len(assignment.gpus)
            node.pods = []
        self._cursor.clear()
        self._full = 0

    def pack_pod(self, name: str, job: PendingJob, among: Sequence[Launched]) -> Launched | None:
        """One pod of the job onto the first of these nodes it fits. On the fleet's own list, identical pods
        resume where the last one went (the nodes before it had no room for one, and have no more now)."""
        own = among is self.nodes
        key = (id(job.needs), job.gpus)
        if own:
            while self._full < len(among) and among[self._full].free == 0:
                self._full += 1
        start = max(self._cursor.get(key, 0), self._full) if own else 0
        for at in range(start, len(among)):
            node = among[at]
            if node.free < job.gpus:
                continue
            choice = self._try(job.needs, job.gpus, node)
            if choice is not None:
                self._bind(name, job, node, choice)
                if own:
                    self._cursor[key] = at
                return node
        return None

    def pack(self, job: PendingJob, among: Sequence[Launched]) -> bool:
        """All of the job's pods onto these nodes, first fit in their order (a confined job onto one of them)."""
        names = job.pod_names()
        if job.confined:
            for node in among:
                if node.room() < job.pods or node.free < job.gpus * job.pods:
                    continue
                count = 0
                for name in names:
                    choice = self._try(job.needs, job.gpus, node)
                    if choice is None:
                        break
                    self._bind(name, job, node, choice)
                    count += 1
                if count == job.pods:
                    return True
                self.unbind(job, [node])
            return False
        bound: list[Launched] = []
        for name in names:
            landed = self.pack_pod(name, job, among)
            if landed is None:
                self.unbind(job, bound)
                return False
            bound.append(landed)
        return True

    def fits_empty(self, job: PendingJob, offering: Offering, profile: str | None) -> bool:
        """Whether one job fits on one fresh node of the offering (its GPUs partitioned to `profile`): a trial
        launch, undone."""
        partitions = [profile] * offering.gpu.count if profile else []
        probe = self.launch(offering, partitions)
        try:
            if job.confined:
                return self.pack(job, [probe])
            single = PendingJob(job.name, 1, job.gpus, job.needs)
            return self.pack(single, [probe])
        finally:
            self.drop(probe)

    def assignments(self) -> list[Assignment]:
        return [a for node in self.nodes for a in node.pods]

    def cost(self) -> int:
        return sum(node.offering.cost for node in self.nodes)
