"""`gpusched dra` and `gpusched k8s --objects` end to end with consumable capacity: shares and what they consume in
the text and the JSON, a request policy the API server refuses (exit 2, file and field named), a negative request
(the scheduler's error, exit 2), an allocated share read from a dump, and a release without the gate."""

from __future__ import annotations

import yaml

CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.test.io"'}}]}}  # fmt: skip
POLICY = {"default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}}


def slice_(policy=POLICY, multiple=True):
    memory = {"value": "80Gi", **({"requestPolicy": policy} if policy else {})}
    device = {"name": "gpu-0", "capacity": {"memory": memory}}
    if multiple is not None:
        device["allowMultipleAllocations"] = multiple
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1"},
            "spec": {"driver": "gpu.test.io", "nodeName": "n1", "pool": {"name": "n1", "resourceSliceCount": 1},
                     "devices": [device]}}  # fmt: skip


def claim(name, memory=None, status=None):
    exactly: dict = {"deviceClassName": "gpu"}
    if memory:
        exactly["capacity"] = {"requests": {"memory": memory}}
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}}  # fmt: skip
    if status:
        body["status"] = status
    return body


def objects(write, *docs):
    return write("objects.yaml", yaml.safe_dump_all([CLASS, *docs]))


def test_shares_and_their_consumption_in_text_and_json(gpusched, write):
    path = objects(write, slice_(), claim("a", "20Gi"), claim("b"), claim("c", "60Gi"))
    text = gpusched("dra", "--objects", path)
    assert text.lines == [
        "claim ml/a: allocated on n1: n1/gpu-0 (a share memory=24Gi)",
        "claim ml/b: allocated on n1: n1/gpu-0 (a share memory=8Gi)",
        "claim ml/c: cannot allocate all claims: n1: 1 free devices match, 1 without room for the capacity requested "
        "(or outside its request policy), 1 needed",
    ]
    assert text.exit_code == 1
    report = gpusched("dra", "--objects", path, "--json").json()
    first = report["claims"][0]["allocation"]["devices"]["results"][0]
    assert first["consumedCapacity"] == {"memory": "24Gi"} and len(first["shareID"]) == 36


def test_an_allocated_share_in_the_dump_leaves_the_rest(gpusched, write):
    taken = {"allocation": {"devices": {"results": [{"request": "r", "driver": "gpu.test.io", "pool": "n1",
             "device": "gpu-0", "shareID": "4f7c1b9e-1d0b-4c55-9a52-4b1c1f1f0a01",
             "consumedCapacity": {"memory": "72Gi"}}]}}}  # fmt: skip
    result = gpusched("dra", "--objects", objects(write, slice_(), claim("old", status=taken), claim("new", "8Gi")))
    assert result.lines[-1] == "claim ml/new: allocated on n1: n1/gpu-0 (a share memory=8Gi)"
    result = gpusched("dra", "--objects", objects(write, slice_(), claim("old", status=taken), claim("new", "9Gi")))
    assert result.exit_code == 1 and "claim ml/new: cannot allocate all claims" in result.lines[-1]


def test_a_policy_the_api_server_refuses_exits_2_naming_the_field(gpusched, write):
    bad = slice_({"default": "12Gi", "validRange": {"min": "8Gi", "step": "8Gi"}})
    result = gpusched("dra", "--objects", objects(write, bad, claim("a")))
    assert result.exit_code == 2 and result.stdout == ""
    assert "objects.yaml" in result.stderr and "spec.devices.0" in result.stderr
    assert "capacity[memory].requestPolicy.validRange.step: default is not a multiple of the step" in result.stderr
    result = gpusched("dra", "--objects", objects(write, slice_(multiple=None), claim("a")))
    assert result.exit_code == 2 and "allowMultipleAllocations must be true" in result.stderr


def test_a_negative_request_is_the_schedulers_error(gpusched, write):
    result = gpusched("dra", "--objects", objects(write, slice_(policy=None), claim("a", "-1Gi")))
    assert result.exit_code == 2
    assert (
        'running "DynamicResources" filter plugin: claim ml/a, request r: checking capacity for device '
        'gpu.test.io/n1/gpu-0: capacity "memory": capacity value is negative'
    ) in result.stderr


def test_without_the_gate_the_device_goes_whole(gpusched, write):
    """1.35 drops allowMultipleAllocations, the policy and the capacity requests: one claim has the device."""
    path = objects(write, slice_(), claim("a", "20Gi"), claim("b", "8Gi"))
    result = gpusched("dra", "--objects", path, "--k8s-version", "1.35")
    assert result.lines[0] == "claim ml/a: allocated on n1: n1/gpu-0"
    assert result.lines[1].startswith("claim ml/b: cannot allocate all claims")


def test_k8s_prints_the_share_of_the_pods_claim(gpusched, write):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"containers": [{"name": "c", "image": "x"}],
                    "resourceClaims": [{"name": "g", "resourceClaimName": "a"}]}}  # fmt: skip
    nodes = write("nodes.json", {"apiVersion": "v1", "kind": "List", "items": [node]})
    pods = write("pods.json", {"apiVersion": "v1", "kind": "List", "items": []})
    result = gpusched("k8s", "--nodes", nodes, "--pods", pods, write("pod.json", pod),
                      "--objects", objects(write, slice_(), claim("a", "20Gi")))  # fmt: skip
    assert "claim ml/a -> n1/gpu-0 (a share memory=24Gi)" in result.lines, result.stdout
