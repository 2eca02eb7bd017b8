"""Each plugin alone, on the smallest node and pod that show what it decides."""

from __future__ import annotations

from gpusched.models.cluster import Cluster
from gpusched.models.kube import KubeNode, KubePod
from gpusched.models.scheduling import Taint, Toleration
from gpusched.models.workload import GpuNeeds
from gpusched.planner.scheduler import names
from gpusched.planner.scheduler.framework import Code, Diagnosis, unresolvable, unschedulable
from gpusched.planner.scheduler.nodeinfo import KubeNodeInfo
from gpusched.planner.scheduler.plugins import gpudevices, nodeaffinity, nodename, nodeunschedulable, tainttoleration
from gpusched.planner.scheduler.plugins.defaultpreemption import ERR_REASON_NO_VICTIMS, dry_run
from gpusched.planner.scheduler.plugins.gpudevices import ExtendedGpus, GpuChoice, GpuDevices
from gpusched.planner.scheduler.plugins.nodeaffinity import NodeAffinity
from gpusched.planner.scheduler.plugins.nodename import NodeName
from gpusched.planner.scheduler.plugins.noderesources import ERR_REASON_TOO_MANY_PODS, NodeResourcesFit
from gpusched.planner.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from gpusched.planner.scheduler.plugins.tainttoleration import TaintToleration
from gpusched.planner.scheduler.views import kubectl_filters
from gpusched.planner.state import ClusterState, NodeState

TAINT = Taint(key="gpu", value="true", effect="NoSchedule")


def _node(**extra) -> NodeState:
    spec = {"name": "a", "gpu": {"model": "A100-SXM4-80GB", "count": 2, "memory_gib": 80}} | extra
    return ClusterState.from_cluster(Cluster.model_validate({"nodes": [spec]})).node("a")


def _kube_pod(name: str = "p", priority: int = 0, **extra) -> KubePod:
    return KubePod(
        name=name,
        namespace="ns",
        node_name=extra.pop("node_name", ""),
        phase="Pending",
        priority=priority,
        preemption_policy="PreemptLowerPriority",
        requests=extra.pop("requests", {"cpu": 1000}),
        **extra,
    )


def _kube_node(**allocatable: int) -> KubeNode:
    return KubeNode(
        name="a",
        labels={"zone": "x"},
        unschedulable=False,
        taints=[],
        allocatable={"pods": 110, "cpu": 2000} | allocatable,
    )


def test_node_filters_read_the_same_facts_from_the_model_and_from_kubectl():
    cordoned, pod = _node(unschedulable=True), GpuNeeds()
    assert NodeUnschedulable().filter(pod, cordoned) == unresolvable(
        names.NODE_UNSCHEDULABLE, nodeunschedulable.ERR_REASON
    )
    kube = KubeNodeInfo.of(KubeNode("a", {}, True, [], {}), [])
    assert NodeUnschedulable().filter(_kube_pod(), kube).code is Code.UNRESOLVABLE


def test_taint_toleration_words_the_reason_by_release():
    node, pod = _node(taints=[TAINT.model_dump()]), GpuNeeds()
    assert TaintToleration().filter(pod, node).reasons == (tainttoleration.ERR_REASON,)
    assert TaintToleration((1, 34, 1)).filter(pod, node).reasons == ("node(s) had untolerated taint {gpu: true}",)
    tolerant = GpuNeeds(tolerations=[Toleration(key="gpu", operator="Exists")])
    assert TaintToleration().filter(tolerant, node).ok


def test_node_affinity_filters_by_selector_and_its_prefilter_pins_names():
    assert NodeAffinity().filter(GpuNeeds(node_selector={"zone": "y"}), _node(labels={"zone": "x"})).reasons == (
        nodeaffinity.ERR_REASON,
    )
    assert NodeAffinity().filter(GpuNeeds(node_selector={"zone": "x"}), _node(labels={"zone": "x"})).ok
    assert NodeAffinity.prefilter(_kube_pod()) is None


def test_node_name_filters_and_prefilters_from_1_37():
    info = KubeNodeInfo.of(_kube_node(), [])
    assert NodeName().filter(_kube_pod(node_name="b"), info).reasons == (nodename.ERR_REASON,)
    assert NodeName.prefilter(_kube_pod(node_name="b"), (1, 37)) == frozenset({"b"})
    assert NodeName.prefilter(_kube_pod(node_name="b"), (1, 36)) is None
    order = [plugin.name for plugin in kubectl_filters((1, 36))][:2]
    assert order == [names.NODE_UNSCHEDULABLE, names.NODE_NAME]


def test_node_resources_fit_is_unresolvable_only_when_the_request_exceeds_allocatable():
    busy = KubeNodeInfo.of(_kube_node(), [_kube_pod("running", requests={"cpu": 1500})])
    assert NodeResourcesFit().filter(_kube_pod(), busy) == unschedulable(names.NODE_RESOURCES_FIT, "Insufficient cpu")
    huge = _kube_pod(requests={"cpu": 3000})
    assert NodeResourcesFit().filter(huge, KubeNodeInfo.of(_kube_node(), [])).code is Code.UNRESOLVABLE
    full = KubeNodeInfo.of(_kube_node(pods=1), [_kube_pod("running", requests={})])
    assert NodeResourcesFit().filter(_kube_pod(requests={}), full).reasons == (ERR_REASON_TOO_MANY_PODS,)


def test_gpu_devices_sees_the_model_the_extended_count_does_not():
    pod, node = GpuNeeds(model="H100-SXM5-80GB"), _node()
    assert GpuDevices().allocate(pod, 1, node) == unschedulable(
        names.GPU_DEVICES, gpudevices.ERR_REASON_MODEL.format(model="H100-SXM5-80GB")
    )
    choice = ExtendedGpus().allocate(pod, 2, node)
    assert isinstance(choice, GpuChoice) and choice.gpus == (0, 1)
    assert ExtendedGpus().allocate(pod, 3, node) == unschedulable(
        names.NODE_RESOURCES_FIT, "Insufficient nvidia.com/gpu"
    )


def test_default_preemption_dry_run_keeps_what_it_can():
    low = [_kube_pod(f"low{i}", priority=0, requests={"cpu": 1000}) for i in range(2)]
    info = KubeNodeInfo.of(_kube_node(), low)
    fits = NodeResourcesFit().filter
    candidate = dry_run(_kube_pod("high", priority=10), info, fits)
    assert [victim.name for victim in candidate.victims] == ["low1"]  # low0 is put back first, so low1 goes
    assert dry_run(_kube_pod("equal", priority=0), info, fits) == unresolvable(
        names.DEFAULT_PREEMPTION, ERR_REASON_NO_VICTIMS
    )


def test_diagnosis_names_the_failing_plugins_and_renders_one_message():
    diagnosis = Diagnosis(
        3,
        {
            "a": unresolvable(names.NODE_AFFINITY, nodeaffinity.ERR_REASON),
            "b": unschedulable(names.NODE_RESOURCES_FIT, "Insufficient cpu"),
        },
        postfilter="later",
    )
    assert diagnosis.unschedulable_plugins == {names.NODE_AFFINITY, names.NODE_RESOURCES_FIT}
    assert diagnosis.failing(names.NODE_AFFINITY) == ["a"]
    assert diagnosis.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector. later"
    )
