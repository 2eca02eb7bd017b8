"""DynamicResources' PostFilter deallocates an unavailable claim only when no other pod has it reserved.

Found by the differential run against kube-scheduler 1.37.2: a pod sharing a claim that an earlier (running) pod
holds on another node was predicted with `deallocation of ResourceClaim completed`; the real scheduler leaves the
claim alone (its reservedFor names the other pod) and adds nothing (1.37) or `still not schedulable` (1.34-1.36).
"""

from __future__ import annotations

import pytest

from gpusched.planner.dra.objects import objects_from
from gpusched.planner.scheduler.predict import predict

DRIVER = "gpu.nvidia.com"
PINNED = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}]}


def node(name: str, cpu: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str) -> dict:
    container = {"name": "main", "image": "x", "resources": {"requests": {"cpu": "2"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [container], "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}]},
    }


def objects(reserved_for: list[dict]) -> object:
    klass = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
    }
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "n0"},
        "spec": {
            "driver": DRIVER,
            "nodeName": "n0",
            "pool": {"name": "n0", "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }
    result = {"request": "gpu", "driver": DRIVER, "pool": "n0", "device": "gpu-0"}
    status: dict = {"allocation": {"devices": {"results": [result]}, "nodeSelector": PINNED}}
    if reserved_for:
        status["reservedFor"] = reserved_for
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": status,
    }
    return objects_from([("objects.json", [klass, slice_, claim])], pods=False)


def message(reserved_for: list[dict], version: str) -> str:
    """`first` runs on n0 and leaves 1 cpu there; `second` asks for 2, and shares the claim pinned to n0."""
    nodes = {"apiVersion": "v1", "kind": "List", "items": [node("n0", "3"), node("n1", "8")]}
    first = pod("first")
    first["spec"]["nodeName"] = "n0"
    pods = {"apiVersion": "v1", "kind": "List", "items": [first]}
    result = predict(nodes, pods, pod("second"), version, objects=objects(reserved_for))
    assert result.feasible == []
    return result.message


HEAD = "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the node."
TAIL = (
    "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
    "1 Preemption is not helpful for scheduling."
)
FIRST = {"resource": "pods", "name": "first", "uid": "4f1c"}
SECOND = {"resource": "pods", "name": "second", "uid": "9a2e"}


@pytest.mark.parametrize(("version", "post"), [("1.37", ""), ("1.36", "still not schedulable, ")])
def test_a_claim_another_pod_holds_is_not_deallocated(version, post):
    assert message([FIRST], version) == f"{HEAD} {post}{TAIL}"


@pytest.mark.parametrize("reserved_for", [[], [SECOND]], ids=["reserved for nobody", "for this pod alone"])
def test_a_claim_nobody_else_holds_is_deallocated(reserved_for):
    assert message(reserved_for, "1.37") == f"{HEAD} deallocation of ResourceClaim completed, {TAIL}"


def test_two_holders_keep_it_too():
    assert message([FIRST, SECOND], "1.37") == f"{HEAD} {TAIL}"
