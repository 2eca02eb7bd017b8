"""NodePorts, SchedulingGates and DynamicResources' PreEnqueue alone, then through `predict`: the real words, the
order in the histogram, the PreFilter failure's PostFilter text, per-node plugin statuses and what is not modelled."""

from __future__ import annotations

import json

import pytest
from test_k8s import container, listed, node, pod

from gpusched.models.kube import HostPort, parse_nodes, parse_pod
from gpusched.planner.dra.objects import objects_from
from gpusched.planner.scheduler import names
from gpusched.planner.scheduler.framework import Code
from gpusched.planner.scheduler.nodeinfo import snapshot
from gpusched.planner.scheduler.plugins import dynamicresources, nodeports, schedulinggates
from gpusched.planner.scheduler.plugins.nodeports import NodePorts, conflicts
from gpusched.planner.scheduler.predict import SKIPPED, predict
from gpusched.planner.scheduler.views import kubectl_filters


def _ported(name, *ports, on=None, init=None, **spec):
    body = pod(name, on=on, containers=[container(ports=list(ports))], **spec)
    if init is not None:
        body["spec"]["initContainers"] = [init]
    return body


def _port(host, **extra):
    return {"containerPort": 8080, "hostPort": host, **extra}


@pytest.mark.parametrize(
    ("wanted", "used", "conflict"),
    [
        (HostPort(80), HostPort(80), True),
        (HostPort(80), HostPort(81), False),
        (HostPort(80, "UDP"), HostPort(80), False),
        (HostPort(80, ip="10.0.0.1"), HostPort(80), True),  # 0.0.0.0 overlaps every address
        (HostPort(80), HostPort(80, ip="127.0.0.1"), True),
        (HostPort(80, ip="10.0.0.1"), HostPort(80, ip="127.0.0.1"), False),
        (HostPort(80, ip="10.0.0.1"), HostPort(80, ip="10.0.0.1"), True),
    ],
)
def test_port_conflicts_as_host_port_info_checks_them(wanted, used, conflict):
    assert conflicts(wanted, used) is conflict


def _info(target, *bound):
    nodes = [parse_pod(b, "pods.json") for b in bound]
    return snapshot(parse_nodes(listed(node("n")), "nodes.json"), nodes, parse_pod(target, "pod.json"))[0]


def test_node_ports_is_unschedulable_where_a_pod_holds_the_port():
    target = _ported("p", _port(80))
    status = NodePorts().filter(parse_pod(target, "pod.json"), _info(target, _ported("a", _port(80), on="n")))
    assert (status.code, status.reasons, status.plugin) == (Code.UNSCHEDULABLE, (nodeports.ERR_REASON,), "NodePorts")
    assert NodePorts().filter(parse_pod(target, "pod.json"), _info(target, _ported("a", _port(81), on="n"))).ok


def test_sidecar_ports_count_and_plain_init_ports_do_not():
    held = _ported("a", _port(80), on="n")
    sidecar = _ported("p", init=container(name="s", ports=[_port(80)], restartPolicy="Always"))
    plain = _ported("p", init=container(name="s", ports=[_port(80)]))
    assert not NodePorts().filter(parse_pod(sidecar, "pod.json"), _info(sidecar, held)).ok
    assert NodePorts().filter(parse_pod(plain, "pod.json"), _info(plain, held)).ok


def test_host_network_binds_the_container_port():
    found = parse_pod(pod("p", containers=[container(ports=[{"containerPort": 9000}])], hostNetwork=True), "pod.json")
    assert found.host_ports == (HostPort(9000),)


def test_node_ports_runs_after_node_affinity_and_before_node_resources_fit():
    order = [plugin.name for plugin in kubectl_filters((1, 37))]
    assert order.index(names.NODE_AFFINITY) + 1 == order.index(names.NODE_PORTS)
    assert order.index(names.NODE_PORTS) + 1 == order.index(names.NODE_RESOURCES_FIT)


def test_each_plugins_status_is_named_per_node():
    nodes = listed(node("a"), node("b", gpus="0"))
    result = predict(nodes, listed(_ported("x", _port(80), on="a")), _ported("p", _port(80)))
    assert result.feasible == ["b"]
    assert result.nodes[0].plugins == {
        "NodeName": "Success", "NodeUnschedulable": "Success", "TaintToleration": "Success",
        "NodeAffinity": "Success", "NodePorts": "Unschedulable", "NodeResourcesFit": SKIPPED,
    }  # fmt: skip


def test_a_port_clash_everywhere_reads_as_the_real_message():
    nodes = listed(node("a"), node("b"))
    bound = listed(_ported("x", _port(80), on="a"), _ported("y", _port(80, hostIP="127.0.0.1"), on="b"))
    assert predict(nodes, bound, _ported("p", _port(80))).message == (
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_conflicting_node_name_terms_fail_the_prefilter_and_dra_postfilter_finds_no_state():
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]} for name in ("a", "b")]}]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    result = predict(listed(node("a"), node("b")), None, pod("p", affinity=affinity))
    assert result.message == "0/2 nodes are available: pod affinity terms conflict. not found"  # read on 1.37.2
    assert all(verdict.plugins == {} for verdict in result.nodes)


def test_scheduling_gates_hold_the_pod_with_the_api_servers_condition():
    gated = pod("p", schedulingGates=[{"name": "example.com/quota"}, {"name": "b"}])
    assert (
        schedulinggates.pre_enqueue(parse_pod(gated, "pod.json"))
        == "waiting for scheduling gates: [example.com/quota b]"
    )
    result = predict(listed(node("a")), None, gated)
    assert (result.fits, result.message, result.nodes) == (False, None, [])
    assert result.pre_enqueue is not None and result.pre_enqueue.plugin == "SchedulingGates"
    assert result.pre_enqueue.condition == {
        "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates",
    }  # fmt: skip


def _claim(deleting: bool) -> dict:
    meta: dict = {"name": "c", "namespace": "default"}
    if deleting:
        meta.update(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["x"])
    spec = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta, "spec": spec}


def _class() -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {}}


@pytest.mark.parametrize(
    ("entry", "objects", "reason"),
    [
        ({"resourceClaimName": "c"}, [_class()], 'could not find ResourceClaim "default/c"'),
        ({"resourceClaimTemplateName": "t"}, [_class()], 'pod "default/p": ResourceClaim not created yet'),
        ({"resourceClaimName": "c"}, [_class(), _claim(True)], dynamicresources.ERR_REASON_DELETING.format(name="c")),
    ],
)
def test_missing_or_deleting_claims_hold_the_pod_without_any_condition(entry, objects, reason):
    target = pod("p", resourceClaims=[{"name": "gpu", **entry}])
    found = objects_from([("objects.json", objects)], pods=False)
    result = predict(listed(node("a")), None, target, objects=found)
    assert result.pre_enqueue is not None
    assert (result.pre_enqueue.plugin, result.pre_enqueue.reason, result.pre_enqueue.condition) == (
        "DynamicResources",
        reason,
        None,
    )
    assert result.message is None and not result.fits


def test_a_claim_that_exists_is_not_held():
    target = pod("p", resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}])
    found = objects_from([("objects.json", [_class(), _claim(False)])], pods=False)
    assert predict(listed(node("a")), None, target, objects=found).pre_enqueue is None


def test_what_is_not_modelled_is_listed():
    """Volumes are not modelled; pod (anti-)affinity and topology spread are (InterPodAffinity, PodTopologySpread)."""
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}, {"name": "tmp", "emptyDir": {}}]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}
    target = pod("p", volumes=volumes, affinity=anti)
    result = predict(listed(node("a")), None, target)
    assert result.may_differ and result.fits
    assert result.not_modelled == [
        "volume data (persistentVolumeClaim): VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits",
    ]
    assert not predict(listed(node("a")), None, pod("q", affinity=anti)).may_differ
    assert not predict(listed(node("a")), None, pod("q")).may_differ


def test_k8s_prints_never_tried_and_not_modelled(gpusched, write):
    gated = pod(
        "p", schedulingGates=[{"name": "g"}], volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "d"}}]
    )
    result = gpusched("k8s", "--nodes", write("nodes.json", listed(node("a"))), write("pod.json", gated))
    assert result.exit_code == 1
    assert result.lines == [
        "not modelled: volume d (persistentVolumeClaim): VolumeBinding, VolumeRestrictions, VolumeZone, "
        "NodeVolumeLimits (the real verdict may differ)",
        "never tried (SchedulingGates PreEnqueue: waiting for scheduling gates: [g]): Scheduling is blocked due to "
        "non-empty scheduling gates",
    ]


def test_k8s_json_names_each_plugins_status_per_node_and_what_is_not_modelled(gpusched, write):
    target = pod("p", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "d"}}])
    result = gpusched("k8s", "--nodes", write("nodes.json", listed(node("a", cordoned=True))),
                      write("pod.json", target), "--json")  # fmt: skip
    found = json.loads(result.stdout)
    assert result.exit_code == 1 and found["may_differ"] is True
    assert found["not_modelled"] == [
        "volume d (persistentVolumeClaim): VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits"
    ]
    assert found["nodes"][0]["plugins"] == {
        "NodeName": "Success", "NodeUnschedulable": "UnschedulableAndUnresolvable", "TaintToleration": SKIPPED,
        "NodeAffinity": SKIPPED, "NodePorts": SKIPPED, "NodeResourcesFit": SKIPPED,
    }  # fmt: skip
