"""Gangs confined to one NVLink domain (`nvlink_domain`): gang, plan and the validator agree on a GB200-style rack."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.models.cluster import Cluster
from gpusched.models.workload import GpuNeeds, Job
from gpusched.planner.gang import simulate
from gpusched.planner.optimize.plan import (
    PendingJob,
    PlanJob,
    PlannedPod,
    check_plan,
    pending_jobs,
    plan,
    weight_of,
)
from gpusched.planner.optimize.solver import SolverConfig
from gpusched.planner.validate import Assignment, violations


def _tray(name: str, count: int = 4, busy: tuple[int, ...] = ()) -> dict:
    return {
        "name": name,
        "gpu": {
            "model": "GB200",
            "count": count,
            "memory_gib": 186,
            "islands": [list(range(count))],
            "busy": [{"gpu": g, "pod": f"old-{name}-{g}"} for g in busy],
        },
    }


def _rack(busy_a1: tuple[int, ...] = ()) -> Cluster:
    """rack-a (a1, a2) and rack-b (b1, b2), 4 GPUs a tray, and a plain 8-GPU node p (a domain of its own)."""
    plain = {
        "name": "p",
        "gpu": {"model": "H100-SXM5-80GB", "count": 8, "memory_gib": 80, "islands": [[0, 1, 2, 3], [4, 5, 6, 7]]},
    }
    return Cluster.model_validate(
        {
            "nodes": [_tray("a1", busy=busy_a1), _tray("a2"), _tray("b1"), _tray("b2"), plain],
            "nvlink_domains": [
                {"name": "rack-a", "nodes": ["a1", "a2"], "gbps": 900},
                {"name": "rack-b", "nodes": ["b1", "b2"], "gbps": 900},
            ],
        }
    )


def _job(name: str, pods: int, domain: bool = True, **extra) -> Job:
    return Job(name=name, pods=pods, gpus_per_pod=4, duration=10, nvlink_domain=domain, **extra)


def _bound_at_start(cluster: Cluster, job: Job, mode: str = "gang") -> set[str]:
    """The nodes the simulator binds the job's pods to when it arrives on the cluster."""
    from gpusched.planner.gang import _Run, _Simulator

    simulator, run = _Simulator(cluster, mode, 0.0, "binpack"), _Run(job)
    simulator.handle("arrival", run, 0.0)
    simulator.schedule(0.0)
    assert run.start == 0.0
    return {option.node.name for _, option in run.bound}


def test_domain_of_names_racks_and_lone_nodes():
    assert _rack().domain_of() == {"a1": "rack-a", "a2": "rack-a", "b1": "rack-b", "b2": "rack-b", "p": "node:p"}


def test_a_two_tray_job_lands_in_one_domain_in_gang_and_plan():
    cluster = _rack(busy_a1=(0,))  # rack-a cannot take two 4-GPU pods; rack-b or p can
    job = _job("train", 2, model="GB200")  # GB200 only: p is out, so rack-b
    report = simulate(cluster, [job])
    assert report.jobs[0].start == 0
    planned = plan(cluster, pending_jobs([], [job]))
    assert {a.node for a in planned.assignments} == {"b1", "b2"}


def test_gang_places_every_pod_of_a_domain_job_inside_the_chosen_domain():
    cluster = _rack(busy_a1=(0,))
    assert _bound_at_start(cluster, _job("train", 2, model="GB200")) == {"b1", "b2"}
    # the policy's first choice (a tray of rack-a, the fuller rack) cannot take the gang: the next domain does
    assert _bound_at_start(cluster, _job("train", 2)) in ({"b1", "b2"}, {"p"})


def test_a_job_that_fits_only_across_domains_is_refused():
    cluster = _rack()
    wide = _job("wide", 3)  # 12 GPUs: no domain has more than 8
    report = simulate(cluster, [wide])
    assert report.jobs[0].never_fits and report.jobs[0].start is None
    planned = plan(cluster, pending_jobs([], [wide]))
    assert planned.unplaced == ["wide"] and planned.assignments == []
    # without the flag it spans trays and racks
    loose = plan(cluster, pending_jobs([], [_job("wide", 3, domain=False)]))
    assert loose.unplaced == [] and len(loose.assignments) == 3
    assert simulate(cluster, [_job("wide", 3, domain=False)]).jobs[0].start == 0


def test_plan_and_gang_agree_on_a_batch():
    cluster = _rack()
    jobs = [_job("x", 2), _job("y", 2), _job("z", 2), _job("w", 3)]  # three domains of 8 GPUs: x, y, z fit; w never
    planned = plan(cluster, pending_jobs([], jobs))
    assert sorted(planned.unplaced) == ["w"]
    domain_of = cluster.domain_of()
    for name in "xyz":
        assert len({domain_of[a.node] for a in planned.assignments if a.job == name}) == 1
    report = simulate(cluster, jobs)
    started = {o.job for o in report.jobs if o.start == 0}
    assert started == {"x", "y", "z"} and [o.job for o in report.jobs if o.never_fits] == ["w"]


def test_pod_mode_keeps_later_pods_in_the_first_pods_domain():
    """Pod by pod, as pod affinity on the domain: the first pod picks a domain alone (binpack: the fuller rack-a)
    and the second must follow it, so it waits; the gang chooses the domain for the whole job."""
    cluster = _rack(busy_a1=(0,))
    report = simulate(cluster, [_job("train", 2, model="GB200")], mode="pod")
    assert report.jobs[0].start is None and report.jobs[0].pods_placed == 1
    assert report.deadlock is not None and report.deadlock.held_by == {"train": 1}
    assert simulate(cluster, [_job("train", 2, model="GB200")]).jobs[0].start == 0


def test_check_plan_rejects_a_gang_across_domains():
    cluster = _rack()
    (job,) = pending_jobs([], [_job("train", 2)])
    across = [
        PlannedPod(pod="train-0", job="train", node="a1", gpus=[0, 1, 2, 3]),
        PlannedPod(pod="train-1", job="train", node="b1", gpus=[0, 1, 2, 3]),
    ]
    assert [str(v) for v in check_plan(cluster, [job], across)] == [
        "job train: pods span NVLink domains rack-a, rack-b, but it needs one (nvlink_domain)"
    ]
    inside = [across[0], PlannedPod(pod="train-1", job="train", node="a2", gpus=[0, 1, 2, 3])]
    assert check_plan(cluster, [job], inside) == []
    assert PlanJob.of(job).pending().confined  # the plan file keeps the flag for `validate`


# --- property: with domain jobs the optimum still equals an exhaustive search ------------------------------------


@st.composite
def tiny(draw):
    nodes = [
        {"name": f"n{n}", "gpu": {"model": "GB200", "count": draw(st.integers(1, 3)), "memory_gib": 186}}
        for n in range(draw(st.integers(2, 3)))
    ]
    domains = [{"name": "rack", "nodes": ["n0", "n1"], "gbps": 900}] if draw(st.booleans()) else []
    cluster = Cluster.model_validate({"nodes": nodes, "nvlink_domains": domains})
    jobs = [
        PendingJob(
            f"j{j}",
            draw(st.integers(1, 3)),
            draw(st.integers(1, 2)),
            GpuNeeds(priority=draw(st.sampled_from([0, 0, 2]))),
            draw(st.booleans()),
        )
        for j in range(draw(st.integers(1, 3)))
    ]
    return cluster, jobs


def _fits(cluster: Cluster, jobs: list[PendingJob]) -> bool:
    domain_of = cluster.domain_of()
    pods = [(job, name) for job in jobs for name in job.pod_names()]

    def search(k: int, placed: list[tuple[PendingJob, Assignment]]) -> bool:
        if k == len(pods):
            return True
        job, name = pods[k]
        for node in cluster.nodes:
            if job.confined and any(j is job and domain_of[a.node] != domain_of[node.name] for j, a in placed):
                continue
            for combo in itertools.combinations(range(node.gpu.count), job.gpus):
                trial = placed + [(job, Assignment(name, job.needs, node.name, combo))]
                if not violations(cluster, [a for _, a in trial]) and search(k + 1, trial):
                    return True
        return False

    return search(0, [])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_optimum_with_domain_jobs_equals_exhaustive_search(case):
    cluster, jobs = case
    report = plan(cluster, jobs, SolverConfig(time_limit=10))
    assert report.solve.status == "OPTIMAL"
    lowest = min(job.needs.priority for job in jobs)
    best = max(
        (sum(weight_of(j.needs.priority, lowest) * j.pods * j.gpus for j in subset), len(subset))
        for r in range(len(jobs) + 1)
        for subset in itertools.combinations(jobs, r)
        if _fits(cluster, list(subset))
    )
    assert tuple(level.objective for level in report.solve.levels[:2]) == best
    assert check_plan(cluster, jobs, report.assignments) == []
    for heuristic in report.heuristics:
        assert (heuristic.metrics.weighted_gpus, heuristic.metrics.jobs_placed) <= best


def _plain(name: str) -> dict:
    return {"name": name, "gpu": {"model": "A100-SXM4-80GB", "count": 8, "memory_gib": 80, "islands": [list(range(8))]}}


def test_plain_nodes_too_small_for_any_domain_job_stay_aggregated():
    """A node in no rack is a domain of its own, but one too small for every confined job cannot host one: those
    nodes keep one class, and the optimum is the same as with one class per node."""
    nodes = [_tray("a1"), _tray("a2"), *(_plain(f"p{i}") for i in range(6))]
    cluster = Cluster.model_validate(
        {"nodes": nodes, "nvlink_domains": [{"name": "rack", "nodes": ["a1", "a2"], "gbps": 900}]}
    )
    big = Job(name="rack-job", pods=2, gpus_per_pod=4, duration=60, nvlink_domain=True)
    small = Job(name="node-job", pods=2, gpus_per_pod=4, duration=60)
    report = plan(cluster, pending_jobs([], [big, small]), SolverConfig(workers=1))
    assert report.node_classes == 1 + 6  # the trays, and each plain node (it can hold the 8-GPU rack job alone)
    bigger = Job(name="rack-job", pods=2, gpus_per_pod=8, duration=60, nvlink_domain=True)
    trays = [_tray(f"a{i}", count=8) for i in (1, 2)]
    cluster = Cluster.model_validate(
        {
            "nodes": [*trays, *(_plain(f"p{i}") for i in range(6))],
            "nvlink_domains": [{"name": "rack", "nodes": ["a1", "a2"], "gbps": 900}],
        }
    )
    report = plan(cluster, pending_jobs([], [bigger, small]), SolverConfig(workers=1))
    assert report.node_classes == 2  # the trays (one domain), the six plain nodes (too small for 16 GPUs)
    placed = {a.pod: a.node for a in report.assignments}
    assert {placed["rack-job-0"], placed["rack-job-1"]} == {"a1", "a2"}
    assert {placed["node-job-0"], placed["node-job-1"]} <= {f"p{i}" for i in range(6)} | {"a1", "a2"}


def test_bench_plan_with_a_domain_job_keeps_the_plain_nodes_aggregated(gpusched):
    report = gpusched("bench", "plan", "--nodes", "200", "--jobs", "20", "--domain-jobs", "1", "--json").json()
    alone = gpusched("bench", "plan", "--nodes", "200", "--jobs", "20", "--json").json()
    assert report["status"] == "OPTIMAL" and report["jobs"] == 21
    assert report["node_classes"] == alone["node_classes"] < 200  # no node holds a 4x8 job alone: none is split
