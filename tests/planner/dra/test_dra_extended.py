"""DRAExtendedResource: a DeviceClass's spec.extendedResourceName served by DRA (kube-scheduler 1.36 beta, 1.37 GA).

Worked by hand from extendeddynamicresources.go (request names `container-<i>-request-<j>`), fit.go
(shouldDelegateResourceToDRA) and the FitError format.
"""

from __future__ import annotations

from gpusched.models.kube import parse_pod
from gpusched.planner.dra.extended import class_mapping, extended_claim
from gpusched.planner.dra.objects import objects_from
from gpusched.planner.scheduler.predict import predict

DRIVER = "gpu.nvidia.com"
NO_CLAIMS = "cannot allocate all claims"


def node(name, gpus=None):
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    if gpus is not None:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": allocatable},
    }


def pod(gpus, name="trainer", containers=None, init=None):
    spec = {
        "containers": containers
        or [
            {
                "name": "main",
                "image": "x",
                "resources": {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"cpu": "1"}},
            }
        ]
    }
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def gpu_class(name="gpu.nvidia.com", resource="nvidia.com/gpu", created="2026-01-01T00:00:00Z"):
    spec = {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}
    if resource:
        spec["extendedResourceName"] = resource
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": spec,
    }


def gpu_slice(node_name, count=4):
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(count)],
        },
    }


def objects(*docs):
    return objects_from([("objects.json", list(docs))], pods=False)


def nodes(*items):
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_dra_node_without_allocatable_gets_two_devices():
    result = predict(nodes(node("dra-1")), None, pod(2), "1.37", objects=objects(gpu_class(), gpu_slice("dra-1")))
    assert result.feasible == ["dra-1"]
    assert result.message is None
    [claim] = result.claims
    # the first two devices of the pool, in order; one ExactCount request for container 0; the resource is the
    # container's second request name when sorted (cpu, nvidia.com/gpu) -> request-1
    assert claim.claim == "default/trainer-extended-resources-"
    assert claim.node == "dra-1"
    assert claim.devices == ["dra-1/gpu-0", "dra-1/gpu-1"]
    assert claim.allocation["devices"]["results"] == [
        {"request": "container-0-request-1", "driver": DRIVER, "pool": "dra-1", "device": "gpu-0"},
        {"request": "container-0-request-1", "driver": DRIVER, "pool": "dra-1", "device": "gpu-1"},
    ]
    assert result.extended_resource_claim_status == {
        "requestMappings": [
            {"containerName": "main", "resourceName": "nvidia.com/gpu", "requestName": "container-0-request-1"}
        ],
        "resourceClaimName": "trainer-extended-resources-",
    }


def test_asking_more_than_the_slice_has_is_the_exact_pending_message():
    result = predict(nodes(node("dra-1")), None, pod(5), "1.37", objects=objects(gpu_class(), gpu_slice("dra-1")))
    assert result.feasible == []
    [verdict] = result.nodes
    assert (verdict.plugin, verdict.code, verdict.reasons) == (
        "DynamicResources",
        "UnschedulableAndUnresolvable",
        [NO_CLAIMS],
    )
    # NodeResourcesFit skipped nvidia.com/gpu (0 allocatable, mapped by a class); DRA's PostFilter adds no reason
    # in 1.37; DefaultPreemption finds no node worth trying
    assert result.message == (
        "0/1 nodes are available: 1 cannot allocate all claims. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert result.claims[0].diagnosis == "dra-1: 4 devices match, 4 free, 5 needed"


def test_1_36_adds_the_dra_postfilter_reason():
    result = predict(nodes(node("dra-1")), None, pod(5), "1.36", objects=objects(gpu_class(), gpu_slice("dra-1")))
    assert result.message == (
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_device_plugin_node_still_uses_node_resources_fit():
    docs = objects(gpu_class(), gpu_slice("dra-1"))
    # dp-1 offers nvidia.com/gpu through the device plugin: NodeResourcesFit checks it, DRA has nothing to do
    result = predict(nodes(node("dp-1", gpus=8)), None, pod(2), "1.37", objects=docs)
    assert result.feasible == ["dp-1"]
    assert result.claims == [] and result.extended_resource_claim_status is None
    result = predict(nodes(node("dp-1", gpus=1)), None, pod(2), "1.37", objects=docs)
    [verdict] = result.nodes
    assert (verdict.plugin, verdict.reasons) == ("NodeResourcesFit", ["Insufficient nvidia.com/gpu"])
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_mixed_cluster_dra_node_and_device_plugin_node():
    docs = objects(gpu_class(), gpu_slice("dra-1"))
    result = predict(nodes(node("dp-1", gpus=1), node("dra-1")), None, pod(2), "1.37", objects=docs)
    assert result.feasible == ["dra-1"]
    assert [v.reasons for v in result.nodes] == [["Insufficient nvidia.com/gpu"], []]
    assert result.claims[0].devices == ["dra-1/gpu-0", "dra-1/gpu-1"]


def test_before_1_36_the_feature_is_off():
    result = predict(nodes(node("dra-1")), None, pod(2), "1.35", objects=objects(gpu_class(), gpu_slice("dra-1")))
    assert result.nodes[0].reasons == ["Insufficient nvidia.com/gpu"]
    assert result.claims == []


def test_class_without_extended_name_is_reachable_by_its_implicit_name():
    docs = objects(gpu_class(resource=None), gpu_slice("dra-1"))
    plain = predict(nodes(node("dra-1")), None, pod(2), "1.37", objects=docs)
    assert plain.nodes[0].reasons == ["Insufficient nvidia.com/gpu"]
    containers = [
        {
            "name": "main",
            "image": "x",
            "resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": "3"}},
        }
    ]
    implicit = predict(nodes(node("dra-1")), None, pod(0, containers=containers), "1.37", objects=docs)
    assert implicit.claims[0].devices == ["dra-1/gpu-0", "dra-1/gpu-1", "dra-1/gpu-2"]
    assert implicit.claims[0].allocation["devices"]["results"][0]["request"] == "container-0-request-0"


def test_newest_class_wins_a_shared_extended_resource_name():
    old, new = gpu_class("old", created="2025-01-01T00:00:00Z"), gpu_class("new", created="2026-01-01T00:00:00Z")
    docs = objects(old, new)
    assert class_mapping(docs.classes)["nvidia.com/gpu"].metadata.name == "new"
    same = objects(gpu_class("b"), gpu_class("a"))
    assert class_mapping(same.classes)["nvidia.com/gpu"].metadata.name == "a"  # equal times: the lower name


def test_request_names_per_container_and_init_reuse():
    # init container 0 asks 1 (covered by container 1's request of 2, so it reuses it), init container 1 is a
    # sidecar asking 1 (long-lived: its own request), regular container 2 asks 2 with cpu first in sorted order
    spec_pod = pod(
        0,
        init=[
            {"name": "setup", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
            {"name": "side", "image": "x", "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
        ],
        containers=[
            {"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "1"}}},
        ],
    )
    parsed = parse_pod(spec_pod, "pod.json")
    mapping = class_mapping(objects(gpu_class()).classes)
    claim, mappings = extended_claim(parsed, {"nvidia.com/gpu": parsed.requests["nvidia.com/gpu"]}, mapping)
    requests = [(r.name, r.exactly.count) for r in claim.spec.devices.requests]
    assert requests == [("container-1-request-0", 1), ("container-2-request-1", 2)]
    # the sidecar's request comes first among later long-lived ones, so `setup` reuses it and needs nothing more
    assert mappings == [
        {"containerName": "side", "resourceName": "nvidia.com/gpu", "requestName": "container-1-request-0"},
        {"containerName": "main", "resourceName": "nvidia.com/gpu", "requestName": "container-2-request-1"},
        {"containerName": "setup", "resourceName": "nvidia.com/gpu", "requestName": "container-1-request-0"},
    ]
    # pod requests: max(init peak 1+1, 1 + 2) = 3 devices on a DRA node
    result = predict(nodes(node("dra-1")), None, spec_pod, "1.37", objects=objects(gpu_class(), gpu_slice("dra-1")))
    assert result.claims[0].devices == ["dra-1/gpu-0", "dra-1/gpu-1", "dra-1/gpu-2"]
