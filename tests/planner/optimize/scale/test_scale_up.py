"""scale up: exact against brute force on tiny backlogs, never worse than the autoscalers' rules, every plan valid."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.models.cluster import Cluster, GpuBlock
from gpusched.models.offers import InstanceType, Offers, Price
from gpusched.models.workload import GpuNeeds, Job, Pod
from gpusched.planner.optimize.scale import scale_up
from gpusched.planner.optimize.scale.world import offerings
from gpusched.planner.optimize.solver import SolverConfig
from gpusched.planner.pending import pending_jobs
from gpusched.planner.validate import Assignment, violations
from gpusched.scenarios import load_cluster, load_pending
from gpusched.scenarios.offers import load_offers

CONFIG = SolverConfig(time_limit=10, workers=1)
EMPTY = Cluster(nodes=[])


def _kind(name: str, gpus: int, linked: bool, price: float, cpu: int = 64, **more) -> InstanceType:
    islands = [list(range(gpus))] if linked and gpus > 1 else []
    gpu = GpuBlock(model="A100-SXM4-80GB", count=gpus, memory_gib=80, islands=islands)
    return InstanceType(name=name, gpu=gpu, cpu=cpu, memory="512Gi", prices=[Price(zone="z", per_hour=price)], **more)


def _brute(kinds: list[InstanceType], pods: list[Pod]) -> float | None:
    """The cheapest multiset of nodes that holds every pod, by trying every assignment of pods to nodes: each node
    holds GPUs up to its count, cpu up to its cpu, an NVLink pod of more than one GPU only where one island holds
    every GPU."""
    best = None
    most = len(pods)
    for counts in itertools.product(range(most + 1), repeat=len(kinds)):
        if not 0 < sum(counts) <= most:
            continue
        cost = sum(n * k.prices[0].per_hour for n, k in zip(counts, kinds, strict=True))
        if best is not None and cost >= best:
            continue
        nodes = [k for n, k in zip(counts, kinds, strict=True) for _ in range(n)]
        if _packs(nodes, pods):
            best = cost
    return best


def _packs(nodes: list[InstanceType], pods: list[Pod]) -> bool:
    free = [[k.gpu.count, k.cpu_milli] for k in nodes]  # type: ignore[union-attr]

    def fits(pod: Pod, k: InstanceType, room: list[int]) -> bool:
        linked = bool(k.gpu.islands)  # type: ignore[union-attr]
        return pod.gpus <= room[0] and pod.cpu_milli <= room[1] and (not pod.nvlink or pod.gpus == 1 or linked)

    def place(i: int) -> bool:
        if i == len(pods):
            return True
        for n, k in enumerate(nodes):
            if fits(pods[i], k, free[n]):
                free[n][0] -= pods[i].gpus
                free[n][1] -= pods[i].cpu_milli
                if place(i + 1):
                    return True
                free[n][0] += pods[i].gpus
                free[n][1] += pods[i].cpu_milli
        return False

    return place(0)


kinds = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8]), st.booleans(), st.integers(1, 40)), min_size=1, max_size=3
).map(lambda specs: [_kind(f"t{i}", g, linked, float(p), 64) for i, (g, linked, p) in enumerate(specs)])
pods = st.lists(
    st.tuples(st.sampled_from([1, 2, 4]), st.booleans(), st.sampled_from([0, 8, 24, 40])), min_size=1, max_size=4
).map(lambda specs: [Pod(name=f"p{i}", gpus=g, nvlink=n, cpu=c) for i, (g, n, c) in enumerate(specs)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds, pods)
def test_exact_against_brute_force(kinds, pods):
    kinds = [*kinds, _kind("big", 8, True, 1000.0)]  # every pod fits somewhere
    report = scale_up(EMPTY, pending_jobs(pods, []), Offers(instance_types=kinds), CONFIG)
    best = _brute(kinds, pods)
    assert best is not None and not report.unplaced
    assert report.bound_per_hour is not None and report.bound_per_hour <= best + 1e-9  # a true lower bound
    assert report.cost_per_hour >= best - 1e-9  # a real plan (it validated) costs at least the optimum
    if report.status == "OPTIMAL":
        assert abs(report.cost_per_hour - best) < 1e-9
    gpu_only = all(p.cpu_milli * 2 <= 64_000 for p in pods)  # cpu never binds: the model is exact
    if gpu_only:
        assert report.status == "OPTIMAL" and abs(report.cost_per_hour - best) < 1e-9


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds, pods, st.integers(1, 3))
def test_never_worse_than_an_autoscaler_and_valid(kinds, pods, gang):
    kinds = [*kinds, _kind("big", 8, True, 1000.0)]
    job = Job(name="gang", pods=gang, gpus_per_pod=2, nvlink=True)
    report = scale_up(EMPTY, pending_jobs(pods, [job]), Offers(instance_types=kinds), CONFIG)
    for other in report.baselines:
        assert len(report.unplaced) <= len(other.unplaced)
        if len(other.unplaced) == len(report.unplaced):
            assert report.cost_per_hour <= other.cost_per_hour + 1e-9, other.name
    _revalidate(EMPTY, Offers(instance_types=kinds), report, pods, [job])


def _revalidate(cluster: Cluster, offers: Offers, report, pods: list[Pod], jobs: list[Job]) -> None:
    """The report's own placements, checked by the validator on the cluster with its new nodes rebuilt from the
    offers; every job whole or left pending."""
    by_key = {o.key: o for o in offerings(offers)}
    nodes = [by_key[n.offering].node(n.name, _layout(n, by_key[n.offering])) for n in report.new_nodes]
    world = cluster.model_copy(update={"nodes": [*cluster.nodes, *nodes]})
    every: dict[str, GpuNeeds] = {p.name: p for p in pods}
    every |= {(f"{j.name}-{i}" if j.pods > 1 else j.name): j for j in jobs for i in range(j.pods)}
    shown = [*report.placements, *report.existing]
    placed = [Assignment(p.pod, every[p.pod], p.node, tuple(p.gpus), tuple(p.mig)) for p in shown]
    assert violations(world, placed) == []
    names = {p.pod for p in shown}
    for job in [*pods, *jobs]:
        count = job.pods if isinstance(job, Job) else 1
        mine = {job.name} if count == 1 else {f"{job.name}-{i}" for i in range(count)}
        assert (mine <= names) != (job.name in report.unplaced) and (mine <= names or not mine & names)


def _layout(node, offering) -> list[str | None]:
    profiles = [p for p, n in node.mig.items() for _ in range(n)]
    return [*profiles, *([None] * (offering.gpu.count - len(profiles)))]


def test_existing_free_capacity_first_and_a_plan_that_validates():
    cluster = load_cluster("crowded")
    pods, jobs = load_pending("examples/scale/backlog.yaml")
    offers = load_offers("examples/scale/offers.yaml")
    report = scale_up(cluster, pending_jobs(pods.pods, jobs.jobs), offers, CONFIG)
    assert report.status == "OPTIMAL" and not report.unplaced
    assert [p.pod for p in report.existing] == ["ml/finetune"]  # the free DGX island takes it: no node for it
    assert report.cost_per_hour <= min(b.cost_per_hour for b in report.baselines)
    _revalidate(cluster, offers, report, pods.pods, jobs.jobs)


def test_nothing_fits_any_offering():
    kinds = [_kind("small", 2, False, 1.0)]
    report = scale_up(EMPTY, pending_jobs([Pod(name="huge", gpus=8)], []), Offers(instance_types=kinds), CONFIG)
    assert report.unplaced == ["huge"] and not report.new_nodes


def test_limits_hold():
    kinds = [_kind("one", 1, False, 1.0, max_nodes=2), _kind("eight", 8, True, 20.0)]
    offers = Offers(instance_types=kinds, limits={"gpus": 10})
    report = scale_up(EMPTY, pending_jobs([Pod(name=f"p{i}", gpus=1) for i in range(4)], []), offers, CONFIG)
    counts = [n.instance_type for n in report.new_nodes]
    assert counts.count("one") <= 2 and not report.unplaced
    assert sum(1 if t == "one" else 8 for t in counts) <= 10
