"""A pod's requests as component-helpers' PodRequests sums them: exact Quantities, rounded once; and what the API
server refuses in a Pod, refused (InputError, exit 2 from the CLI)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusched.errors import InputError
from gpusched.models.kube import parse_nodes, parse_pod
from gpusched.models.scheduling import NodeSelectorTerm

GI = 2**30


def _pod(*containers, init=(), **spec):
    """Containers named c0, c1, ... and init containers i0, ...: the API server wants the names unique."""
    body = {"containers": [{**c, "name": f"c{i}"} for i, c in enumerate(containers)], **spec}
    if init:
        body["initContainers"] = [{**c, "name": f"i{i}"} for i, c in enumerate(init)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": body}


def _c(requests=None, limits=None, **extra):
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": "c", "image": "x", "resources": resources, **extra}


def requests(*containers, **spec):
    return parse_pod(_pod(*containers, **spec), "pod.json").requests


def test_two_tenth_gibibyte_containers_are_summed_before_rounding():
    assert requests(_c({"memory": "0.1Gi"}), _c({"memory": "0.1Gi"}))["memory"] == 214748365  # not 214748366


def test_overhead_is_added_exactly_too():
    found = requests(_c({"memory": "0.05Gi"}), overhead={"memory": "0.05Gi"})
    assert found["memory"] == -(-GI // 10)  # ceil(0.1Gi)


def test_each_quantity_is_kept_to_a_milli_unit_as_the_api_server_stores_it():
    assert requests(_c({"cpu": "1.0001m"}), _c({"cpu": "1.0001m"}))["cpu"] == 4  # 2m + 2m, as stored
    assert requests(_c({"memory": "1.5"}), _c({"memory": "1.5"}))["memory"] == 3


def test_init_containers_peak_against_the_sum_of_app_containers_and_sidecars():
    sidecar = _c({"memory": "0.1Gi"}, restartPolicy="Always")
    plain = _c({"memory": "0.3Gi"})
    app = _c({"memory": "0.15Gi"})
    # the plain init runs beside the sidecar started before it: 0.4Gi; afterwards 0.1Gi + 0.15Gi
    assert requests(app, init=[sidecar, plain])["memory"] == -(-4 * GI // 10)
    assert requests(app, init=[plain, sidecar])["memory"] == -(-3 * GI // 10)


@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=5))
def test_summing_millis_then_rounding_never_exceeds_rounding_each(millis):
    exact = requests(*[_c({"memory": f"{m}m"}) for m in millis])["memory"]
    each = sum(-(-m // 1000) for m in millis)
    assert exact == -(-sum(millis) // 1000) <= each


@pytest.mark.parametrize(
    "bad",
    [
        _c({"cpu": "-1"}),
        _c({"memory": "1e3Ki"}),
        _c(limits={"example.com/gpu": "0.5"}),
        _c({"example.com/gpu": "1"}),
        _c({"example.com/gpu": "1"}, {"example.com/gpu": "2"}),
        _c({"cpu": "2"}, {"cpu": "1"}),
        _c(ports=[{"containerPort": 80, "hostPort": 70000}]),
        _c(ports=[{"containerPort": 80, "hostPort": 81}, {"containerPort": 90, "hostPort": 81}]),
        _c(ports=[{"containerPort": 80, "hostPort": 81, "protocol": "ICMP"}]),
    ],
)
def test_containers_the_api_server_refuses(bad):
    with pytest.raises(InputError):
        parse_pod(_pod(bad), "pod.json")


def _affinity(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _expr(key, operator, *values):
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


@pytest.mark.parametrize(
    "spec",
    [
        {"affinity": _affinity()},
        {"affinity": _affinity(_expr("c", "Gt", "+4"))},
        {"affinity": _affinity(_expr("c", "Gt", " 4"))},
        {"affinity": _affinity(_expr("c", "Gt", "1", "2"))},
        {"affinity": _affinity(_expr("c", "In"))},
        {"affinity": _affinity(_expr("c", "Exists", "1"))},
        {"affinity": _affinity(_expr("-c", "Exists"))},
        {"affinity": _affinity({"matchFields": [{"key": "metadata.name", "operator": "Gt", "values": ["1"]}]})},
        {"affinity": _affinity({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]})},
        {"affinity": _affinity({"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["a"]}]})},
        {"nodeSelector": {"zone": "+a"}},
        {"nodeSelector": {"-zone": "a"}},
        {"schedulingGates": [{"name": "-gate"}]},
        {"schedulingGates": [{"name": "a"}, {"name": "a"}]},
        {"tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]},
        {"tolerations": [{"operator": "Equal", "value": "x"}]},
        {"tolerations": [{"value": "x"}]},
        {"tolerations": [{"key": "-a", "operator": "Exists"}]},
        {"tolerations": [{"key": "a", "value": "+x"}]},
        {"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]},
    ],
)
def test_selectors_and_gates_the_api_server_refuses(spec):
    with pytest.raises(InputError):
        parse_pod(_pod(_c(), **spec), "pod.json")


@pytest.mark.parametrize(
    ("label", "bound", "operator", "matches"),
    [
        ("007", "4", "Gt", True),
        ("1_000", "4", "Gt", False),  # Python's int() would read 1000
        ("5", "1_000", "Lt", False),
        ("9223372036854775808", "4", "Gt", False),  # past int64: a range error in Go
        ("9223372036854775807", "9223372036854775806", "Gt", True),
        ("", "4", "Lt", False),
        ("3", "4", "Lt", True),
        ("0x10", "4", "Gt", False),
    ],
)
def test_gt_and_lt_compare_as_go_parses(label, bound, operator, matches):
    term = NodeSelectorTerm.model_validate(_expr("c", operator, bound))
    assert term.matches({"c": label}, "n") is matches


@pytest.mark.parametrize(
    "taint", [{"key": "-gpu", "effect": "NoSchedule"}, {"key": "gpu", "value": "+1", "effect": "NoSchedule"}]
)
def test_node_taints_the_api_server_refuses(taint):
    node = {"kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": [taint]}, "status": {"allocatable": {}}}
    with pytest.raises(InputError):
        parse_nodes(node, "nodes.json")
