"""Hand-written scenarios for each class of issue 12's items 1, 2, 3, 5 and 8 (NodePorts, SchedulingGates), played on
the real control plane through the differential harness: every pod's outcome must be gpusched's."""

from __future__ import annotations

import pytest

from gpusched.conformance import dra
from gpusched.conformance.differential import NAMESPACE, NO_CONDITION, Player
from gpusched.conformance.scenarios import IMAGE, ConformanceScenario


def _node(name: str, memory: str = "8Gi", **labels: str) -> dict:
    allocatable = {"cpu": "4", "memory": memory, "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {},
            "status": {"capacity": allocatable, "allocatable": allocatable}}  # fmt: skip


def _pod(name: str, *containers: dict, **spec: object) -> dict:
    body = {"containers": list(containers) or [_c()], "terminationGracePeriodSeconds": 0, **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": body}


def _c(requests: dict | None = None, name: str = "main", **extra: object) -> dict:
    return {"name": name, "image": IMAGE, "resources": {"requests": requests or {}}, **extra}


def _gt(operator: str, value: str) -> dict:
    term = {"matchExpressions": [{"key": "count", "operator": operator, "values": [value]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _play(rest, version: str, label: str, nodes: list[dict], pods: list[dict], objects=()) -> list:
    scenario = ConformanceScenario(seed=12, index=0, nodes=nodes, pods=pods, objects=list(objects))
    scenario = scenario.model_copy(update={"nodes": [_named(n, label) for n in nodes]})
    outcomes = Player(rest, version).play(scenario)
    assert all(outcome.agrees for outcome in outcomes), [o.model_dump() for o in outcomes if not o.agrees]
    return outcomes


def _named(node: dict, label: str) -> dict:
    node["metadata"]["name"] = f"{label}-{node['metadata']['name']}"
    return node


def test_exact_quantity_sums(rest, control_plane):
    tenth = {"memory": "0.1Gi"}
    pods = [_pod("q0", _c(tenth, name="a"), _c(tenth, name="b"), _c(tenth, name="c"), _c(tenth, name="d"))]
    outcomes = _play(rest, control_plane.info.version, "qty", [_node("n", memory="429496730")], pods)
    assert outcomes[0].node is not None  # four 0.1Gi fit in ceil(0.4Gi) bytes


@pytest.mark.parametrize("value", ["4", "1_000", "9223372036854775808", "0x10", "+4"])
def test_gt_lt_as_go_parses(rest, control_plane, value):
    nodes = [_node("a", count="007"), _node("b", count="1_000"), _node("c", count="9223372036854775807")]
    pods = [_pod("g0", affinity=_gt("Gt", value)), _pod("g1", affinity=_gt("Lt", value))]
    outcomes = _play(rest, control_plane.info.version, f"gt{len(value)}", nodes, pods)
    assert (value == "+4") == all(outcome.refused for outcome in outcomes)


def test_conflicting_node_name_terms(rest, control_plane):
    fields = [{"key": "metadata.name", "operator": "In", "values": [name]} for name in ("cf-a", "cf-b")]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": fields}]}}}  # fmt: skip
    outcomes = _play(rest, control_plane.info.version, "cf", [_node("a"), _node("b")], [_pod("x", affinity=affinity)])
    assert outcomes[0].message == "0/2 nodes are available: pod affinity terms conflict. not found"


def test_host_ports(rest, control_plane):
    port = {"containerPort": 8080, "hostPort": 80}
    pods = [
        _pod("h0", _c(ports=[port])),
        _pod("h1", _c(ports=[{**port, "hostIP": "127.0.0.1"}])),
        _pod("h2", _c(ports=[{**port, "protocol": "UDP"}])),
        _pod("h3", _c(ports=[port])),
        _pod("h4", initContainers=[_c(name="side", ports=[port], restartPolicy="Always")]),
        _pod("h5", _c(ports=[port, {"containerPort": 9, "hostPort": 80}])),
    ]
    outcomes = _play(rest, control_plane.info.version, "hp", [_node("a"), _node("b")], pods)
    assert outcomes[3].message and "didn't have free ports" in outcomes[3].message
    assert outcomes[5].refused


def test_scheduling_gates_and_missing_or_deleting_claims(rest, control_plane):
    claim = {"apiVersion": dra.API_VERSION, "kind": "ResourceClaim",
             "metadata": {"name": "held", "namespace": NAMESPACE, "finalizers": [dra.FINALIZER],
                          "annotations": {dra.DELETING: "true"}},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}  # fmt: skip
    pods = [
        _pod("s0", schedulingGates=[{"name": "example.com/wait"}]),
        _pod("s1", resourceClaims=[{"name": "g", "resourceClaimName": "absent"}]),
        _pod("s2", resourceClaims=[{"name": "g", "resourceClaimTemplateName": "absent"}]),
        _pod("s3", resourceClaims=[{"name": "g", "resourceClaimName": "held"}]),
    ]
    outcomes = _play(rest, control_plane.info.version, "pe", [_node("a")], pods, [claim])
    assert [outcome.held for outcome in outcomes] == ["SchedulingGated", *[NO_CONDITION] * 3]
