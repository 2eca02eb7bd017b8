"""Placement under both views and every policy: reasons, consequences, scoring, and properties."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusched.models.cluster import Cluster
from gpusched.models.workload import Pod
from gpusched.planner.place import place
from gpusched.planner.ranking import fit_score
from gpusched.planner.scheduler.plugins.gpudevices import GpuChoice
from gpusched.planner.state import ClusterState
from gpusched.planner.validate import Assignment, violations
from gpusched.scenarios import load_scenario


def _cluster(*nodes: dict) -> Cluster:
    return Cluster.model_validate({"nodes": list(nodes)})


def _gpu_node(name: str, count: int = 8, **extra) -> dict:
    gpu = {"model": "A100-SXM4-80GB", "count": count, "memory_gib": 80} | extra.pop("gpu", {})
    return {"name": name, "gpu": gpu} | extra


def _placed(report) -> dict[str, str | None]:
    return {r.pod: r.node for r in report.results}


class TestGpuBinpackExercise:
    """The seed's Easy exercise: the default profile spreads, gpu-binpack with weight 10 packs."""

    def test_default_profile_spreads_notebooks_and_train_8_stays_pending(self):
        s = load_scenario("weekend")
        report = place(s.cluster, s.pods.pods, "extended", "spread", gpu_weight=0)
        nodes = {_placed(report)[f"notebook-{i}"] for i in range(6)}
        assert nodes == {"dgx-a", "dgx-b", "pcie-a"}
        assert _placed(report)["train-8"] is None

    def test_most_allocated_with_gpu_weight_10_fills_one_node_and_train_8_schedules(self):
        s = load_scenario("weekend")
        report = place(s.cluster, s.pods.pods, "extended", "binpack", gpu_weight=10)
        assert len({_placed(report)[f"notebook-{i}"] for i in range(6)}) == 1
        assert _placed(report)["train-8"] in {"dgx-a", "dgx-b"}

    def test_score_uses_the_schedulers_integer_arithmetic(self):
        node = ClusterState.from_cluster(load_scenario("monday").cluster).node("dgx-a")
        pod = Pod(name="n", gpus=1, cpu=8, memory="64Gi")
        option = GpuChoice(node, "nvidia.com/gpu", (0,), free_after=7)
        # cpu 8000m of 256000m -> 3, memory 64Gi of 2Ti -> 3, gpu 1 of 8 -> 12 at weight 10: (3+3+120)//12
        assert fit_score(option, pod, 1, "binpack", 10) == 10
        # LeastAllocated, gpu not scored: (96 + 96) // 2
        assert fit_score(option, pod, 1, "spread", 0) == 96

    def test_empty_requests_score_with_the_schedulers_defaults(self):
        node = ClusterState.from_cluster(_cluster({"name": "a", "cpu": "1", "memory": "1Gi"})).node("a")
        option = GpuChoice(node, "nvidia.com/gpu", ())
        # 100m of 1000m -> 10; 200Mi of 1024Mi -> 19; (10 + 19) // 2
        assert fit_score(option, Pod(name="p", gpus=0), 0, "binpack", 10) == 14


class TestReasons:
    def test_taint_cordon_selector_and_cpu_are_answered_before_gpus(self):
        cluster = _cluster(
            _gpu_node("tainted", taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
            _gpu_node("cordoned", unschedulable=True),
            _gpu_node("labelled", labels={"pool": "batch"}),
            _gpu_node("small", cpu="2", labels={"pool": "train"}),
        )
        pod = Pod(name="p", gpus=1, cpu="4", node_selector={"pool": "train"})
        result = place(cluster, [pod]).results[0]
        assert result.message == (
            "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, "
            "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
        )

    def test_toleration_lets_the_pod_in(self):
        cluster = _cluster(_gpu_node("t", taints=[{"key": "nvidia.com/gpu", "value": "present"}]))
        pod = Pod(name="p", tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
        assert place(cluster, [pod]).results[0].node == "t"

    def test_nvlink_pod_needs_one_island_on_a_pcie_box(self):
        cluster = _cluster(_gpu_node("pcie", gpu={"islands": [[0, 1], [2, 3], [4, 5], [6, 7]]}))
        result = place(cluster, [Pod(name="p", gpus=4, nvlink=True)]).results[0]
        assert result.message == "0/1 nodes are available: 1 no NVLink island with 4 free GPUs."
        spanning = place(cluster, [Pod(name="p", gpus=4)]).results[0]
        assert spanning.islands == [0, 1] and spanning.allreduce.link == "pcie"

    def test_mig_pods_take_exact_profiles(self):
        s = load_scenario("monday")
        pods = [Pod(name=f"r{i}", mig_profile="3g.40gb") for i in range(2)]
        first, second = place(s.cluster, pods).results
        assert (first.node, first.resource, first.mig) == ("mig-a", "nvidia.com/mig-3g.40gb", [(0, 4)])
        assert second.message == "0/5 nodes are available: 5 Insufficient nvidia.com/mig-3g.40gb."

    def test_shared_pods_respect_declared_memory_in_the_gpu_view(self):
        cluster = _cluster({"name": "l4", "gpu": {"model": "L4", "count": 1, "memory_gib": 24, "replicas": 4}})
        pods = [Pod(name=f"c{i}", shared=True, memory_gib=10) for i in range(3)]
        results = place(cluster, pods).results
        assert [r.node for r in results] == ["l4", "l4", None]
        extended = place(cluster, pods, view="extended").results
        assert [r.node for r in extended] == ["l4", "l4", "l4"]
        assert extended[2].warnings == ["GPU 0 memory oversubscribed: 30 of 24 GiB declared"]

    def test_extended_view_warns_about_replicas_of_one_gpu_and_wrong_model(self):
        cluster = _cluster({"name": "l4", "gpu": {"model": "L4", "count": 2, "memory_gib": 24, "replicas": 4}})
        result = place(cluster, [Pod(name="p", gpus=2, model="H100-SXM5-80GB")], view="extended").results[0]
        assert result.gpus == [0, 0]
        assert result.warnings == [
            "wants H100-SXM5-80GB, gets L4",
            "lands on a time-sliced replica: shares a physical GPU, no memory or fault isolation",
            "2 of its replicas are physical GPU 0: no more compute than one",
        ]


# --- properties -------------------------------------------------------------------------------------------


@st.composite
def clusters(draw) -> Cluster:
    nodes = []
    for n in range(draw(st.integers(1, 4))):
        count = draw(st.integers(1, 8))
        indices = list(range(count))
        split = draw(st.integers(1, count))
        islands = [indices[i : i + split] for i in range(0, count, split)]
        replicas = draw(st.sampled_from([1, 1, 1, 4]))
        model = draw(st.sampled_from(["A100-SXM4-80GB", "L4"]))
        memory = 80 if model.startswith("A100") else 24
        nodes.append(
            {
                "name": f"n{n}",
                "gpu": {"model": model, "count": count, "memory_gib": memory, "islands": islands, "replicas": replicas},
            }
        )
    return Cluster.model_validate({"nodes": nodes})


pods_strategy = st.lists(
    st.builds(
        Pod,
        name=st.just("p"),
        gpus=st.integers(0, 8),
        nvlink=st.booleans(),
        shared=st.booleans(),
        memory_gib=st.sampled_from([None, 10.0, 40.0]),
        model=st.sampled_from([None, "L4", "A100-SXM4-80GB"]),
    ),
    max_size=12,
).map(lambda pods: [pod.model_copy(update={"name": f"p{i}"}) for i, pod in enumerate(pods)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), pods_strategy, st.sampled_from(["binpack", "spread", "topology"]))
def test_every_gpu_view_placement_validates_and_pending_reasons_cover_every_node(cluster, pods, policy):
    report = place(cluster, pods, "gpu", policy)
    needs = {pod.name: pod for pod in pods}
    placed = [Assignment(r.pod, needs[r.pod], r.node, tuple(r.gpus)) for r in report.results if r.node]
    assert violations(cluster, placed) == []
    for result in report.results:
        if result.node is None:
            assert result.message.startswith(f"0/{len(cluster.nodes)} nodes are available: ")
            counts = [int(part.split()[0]) for part in result.message.split(": ", 1)[1].rstrip(".").split(", ")]
            assert sum(counts) == len(cluster.nodes)  # the GPU view gives one reason per node


@settings(max_examples=150, deadline=None)
@given(clusters(), pods_strategy, st.sampled_from(["binpack", "spread"]))
def test_extended_view_warns_whenever_the_hardware_would_refuse(cluster, pods, policy):
    """consequences() is complete: a placement the hardware validator rejects always carries a warning."""
    report = place(cluster, pods, "extended", policy)
    needs = {pod.name: pod for pod in pods}
    for r in report.results:
        if r.node is None or not r.gpus:
            continue
        alone = violations(cluster, [Assignment(r.pod, needs[r.pod], r.node, tuple(r.gpus), tuple(r.mig))])
        harmful = [v for v in alone if "a shared pod on an exclusive GPU" not in str(v)]  # waste, not a runtime fault
        if harmful:
            assert r.warnings, (r, harmful)
