"""On the real control plane: devices with consumable capacity (DRAConsumableCapacity, on by default from 1.36).

- The API server accepts exactly the request policies, capacity requests and constraints gpusched accepts (1.37).
- Pods one after another take shares of multi-allocatable devices: each real allocation (devices, consumedCapacity,
  a shareID on every share) is gpusched's, predicted from the state just before; a pod that no longer fits gets
  gpusched's message, and a negative capacity request stops the scheduler with gpusched's error.
- On a release with the gate off the API server drops the fields, and gpusched, for that release, allocates the
  device whole as that scheduler does.
"""

from __future__ import annotations

import itertools

import pytest

from gpusched.conformance.api import Rest, RestError
from gpusched.conformance.differential import verdict
from gpusched.errors import InputError
from gpusched.models.dra import ResourceClaim, ResourceSlice
from gpusched.planner.dra import features
from gpusched.planner.dra.objects import objects_from
from gpusched.planner.scheduler.predict import parse_version, predict

RESOURCE = "/apis/resource.k8s.io/v1"
DRIVER = "share.example.com"
NODE, NAMESPACE = "share-node", "consumable"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
CLAIMS = f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims"
_names = itertools.count()


def _version(rest: Rest) -> tuple[int, ...]:
    return parse_version(rest.get("/version")["gitVersion"])


def _device(name: str, policy: dict | None = None, multiple: bool | None = True, value: str = "80Gi") -> dict:
    capacity: dict = {"value": value}
    if policy is not None:
        capacity["requestPolicy"] = policy
    found: dict = {"name": name, "capacity": {"memory": capacity}}
    if multiple is not None:
        found["allowMultipleAllocations"] = multiple
    return found


def _slice(name: str, devices: list[dict], node: str = NODE) -> dict:
    spec = {"driver": DRIVER, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "nodeName": node,
            "devices": devices}  # fmt: skip
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def _claim(name: str, requests: list[dict], constraints: list[dict] | None = None) -> dict:
    devices: dict = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"devices": devices}}  # fmt: skip


def _request(name: str = "r", memory: str | None = None, count: int | None = None, **extra) -> dict:
    exactly: dict = {"deviceClassName": "share", **extra}
    if memory is not None:
        exactly["capacity"] = {"requests": {"memory": memory}}
    if count is not None:
        exactly["count"] = count
    return {"name": name, "exactly": exactly}


RANGE = {"default": "8Gi", "validRange": {"min": "8Gi", "max": "64Gi", "step": "8Gi"}}
SLICES = [
    ("multi, no policy", _device("d")),
    ("valid range", _device("d", RANGE)),
    ("valid values", _device("d", {"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]})),
    ("default only", _device("d", {"default": "100Gi"})),
    ("fractional range", _device("d", {"default": "500m", "validRange": {"min": "500m", "step": "250m"}}, value="4")),
    ("negative capacity", _device("d", multiple=None, value="-1")),  # accepted: only the allocator refuses it
    ("policy, single allocation", _device("d", RANGE, multiple=None)),
    ("policy, multiple false", _device("d", RANGE, multiple=False)),
    ("both kinds", _device("d", {**RANGE, "validValues": ["8Gi"]})),
    ("values without default", _device("d", {"validValues": ["10Gi"]})),
    ("default not a value", _device("d", {"default": "15Gi", "validValues": ["10Gi", "20Gi"]})),
    ("values unsorted", _device("d", {"default": "10Gi", "validValues": ["20Gi", "10Gi"]})),
    ("value above capacity", _device("d", {"default": "10Gi", "validValues": ["10Gi", "100Gi"]})),
    ("range without min", _device("d", {"default": "8Gi", "validRange": {"max": "64Gi"}})),
    ("range without default", _device("d", {"validRange": {"min": "8Gi"}})),
    ("default below min", _device("d", {"default": "4Gi", "validRange": {"min": "8Gi"}})),
    ("default off the steps", _device("d", {"default": "12Gi", "validRange": {"min": "8Gi", "step": "8Gi"}})),
    ("max off the steps", _device("d", {"default": "8Gi", "validRange": {"min": "8Gi", "max": "60Gi", "step": "8Gi"}})),
    ("step past capacity", _device("d", {"default": "8Gi", "validRange": {"min": "8Gi", "step": "80Gi"}})),
    ("zero step", _device("d", {"default": "8Gi", "validRange": {"min": "8Gi", "step": "0"}})),
    ("max above capacity", _device("d", {"default": "8Gi", "validRange": {"min": "8Gi", "max": "96Gi"}})),
    ("min above max", _device("d", {"default": "8Gi", "validRange": {"min": "16Gi", "max": "8Gi"}})),
    ("finer than milli", _device("d", {"default": "1500u", "validRange": {"min": "1m", "step": "1m"}}, value="4")),
]
CLAIMS_ACCEPTED = [
    ("capacity request", _claim("x", [_request(memory="10Gi")])),
    ("negative capacity request", _claim("x", [_request(memory="-1Gi")])),
    ("capacity of any name", _claim("x", [_request(memory="1")])),
    ("distinctAttribute", _claim("x", [_request(count=2)], [{"distinctAttribute": f"{DRIVER}/index"}])),
]
CLAIMS_ACCEPTED.append(
    (
        "both attributes",
        _claim("x", [_request(count=2)], [{"distinctAttribute": f"{DRIVER}/a", "matchAttribute": f"{DRIVER}/a"}]),
    ),  # fmt: skip
)
CLAIMS_REFUSED = [
    (
        "both, distinct unqualified",
        _claim("x", [_request(count=2)], [{"distinctAttribute": "a", "matchAttribute": f"{DRIVER}/a"}]),
    ),  # fmt: skip
    ("unqualified distinctAttribute", _claim("x", [_request(count=2)], [{"distinctAttribute": "index"}])),
]


def _accepted(rest: Rest, path: str, body: dict) -> bool:
    name = f"{body['metadata']['name']}-{next(_names)}"
    body = {**body, "metadata": {**body["metadata"], "name": name}}
    try:
        rest.create(path, body)
    except RestError as error:
        assert error.status == 422, error
        return False
    rest.delete(f"{path}/{name}")
    return True


def _parsed(model: type, body: dict) -> bool:
    try:
        objects_from([("test", [body])], pods=False) if model is ResourceClaim else ResourceSlice.model_validate(body)
    except (InputError, ValueError):
        return False
    return True


@pytest.fixture(scope="module")
def rest(control_plane):
    client = Rest(control_plane.kubeconfig)
    yield client
    client.close()


@pytest.fixture(scope="module")
def namespace(rest):
    try:
        rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    except RestError as error:
        assert error.status == 409
    return rest


@pytest.mark.parametrize("case", SLICES, ids=[name for name, _ in SLICES])
def test_gpusched_accepts_exactly_the_request_policies_the_api_server_accepts(rest, case):
    if not features.enabled("DRAConsumableCapacity", _version(rest)):
        pytest.skip("the release drops the fields before validating them")
    body = _slice("policy", [case[1]])
    assert _parsed(ResourceSlice, body) == _accepted(rest, f"{RESOURCE}/resourceslices", body)


@pytest.mark.parametrize("case", CLAIMS_ACCEPTED + CLAIMS_REFUSED, ids=[n for n, _ in CLAIMS_ACCEPTED + CLAIMS_REFUSED])
def test_gpusched_accepts_exactly_the_claims_the_api_server_accepts(namespace, case):
    if not features.enabled("DRAConsumableCapacity", _version(namespace)):
        pytest.skip("the release drops the fields before validating them")
    assert _parsed(ResourceClaim, case[1]) == _accepted(namespace, CLAIMS, case[1])


def test_the_corpus_is_labelled_by_the_api_server(namespace):
    if not features.enabled("DRAConsumableCapacity", _version(namespace)):
        pytest.skip("the release drops the fields before validating them")
    assert all(_accepted(namespace, CLAIMS, body) for _, body in CLAIMS_ACCEPTED)
    assert not any(_accepted(namespace, CLAIMS, body) for _, body in CLAIMS_REFUSED)


# --- shares, one pod after another ----------------------------------------------------------------------------


def _listed(rest: Rest, path: str, kind: str, version: str = "resource.k8s.io/v1") -> dict:
    items = [{"apiVersion": version, "kind": kind, **item} for item in rest.get(path)["items"]]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _prediction(rest: Rest, pod: dict):
    documents = [(name, [_listed(rest, f"{RESOURCE}/{name}", kind)])
                 for name, kind in (("deviceclasses", "DeviceClass"), ("resourceslices", "ResourceSlice"))]  # fmt: skip
    documents.append(("resourceclaims", [_listed(rest, CLAIMS, "ResourceClaim")]))
    nodes = _listed(rest, "/api/v1/nodes", "Node", "v1")
    pods = _listed(rest, "/api/v1/pods", "Pod", "v1")
    try:
        return predict(nodes, pods, pod, ".".join(map(str, _version(rest))), objects=objects_from(documents, False))
    except InputError as error:
        return error


def _pod(name: str, claims: list[str]) -> dict:
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"claims": [{"name": f"c{i}"} for i in range(len(claims))]}}  # fmt: skip
    spec = {"resourceClaims": [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)],
            "containers": [container]}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def _comparable(results: list[dict]) -> list[dict]:
    """A result with its shareID (a random UID in reality) marked as present."""
    return [{**r, "shareID": "<share>"} if "shareID" in r else r for r in results]


@pytest.fixture(scope="module")
def shared(namespace):
    """One node; gpu-0 shared by range (8Gi steps), gpu-1 shared by values, gpu-2 whole, gpu-3 shared freely."""
    rest = namespace
    if not features.enabled("DRAConsumableCapacity", _version(rest)):
        pytest.skip("the release drops the fields (test_without_the_gate_devices_are_allocated_whole)")
    status = {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
    rest.create("/api/v1/nodes", {"metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
                                  "status": {**status, "allocatable": dict(status["capacity"])}})  # fmt: skip
    rest.create(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "share"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})  # fmt: skip
    devices = [
        {**_device("gpu-0", RANGE), "attributes": {"index": {"int": 0}}},
        {**_device("gpu-1", {"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}, value="40Gi"),
         "attributes": {"index": {"int": 1}}},
        {**_device("gpu-2", multiple=None), "attributes": {"index": {"int": 2}}},
        {**_device("gpu-3"), "attributes": {"index": {"int": 3}}},
    ]  # fmt: skip
    rest.create(f"{RESOURCE}/resourceslices", _slice("share-slice", devices))
    try:
        yield rest
    finally:
        rest.delete(PODS)
        rest.wait(lambda: not rest.get(PODS)["items"])
        rest.delete(CLAIMS)
        rest.wait(lambda: not rest.get(CLAIMS)["items"], timeout=60)
        rest.delete(f"{RESOURCE}/resourceslices/share-slice")
        rest.delete(f"{RESOURCE}/deviceclasses/share")
        rest.delete(f"/api/v1/nodes/{NODE}")


STEPS = [  # (pod, its claims: name -> requests, constraints)
    ("p0", {"a": ([_request(memory="20Gi")], None)}),  # gpu-0: 20Gi rounds up to 24Gi
    ("p1", {"b": ([_request("x", memory="30Gi"), _request("y")], None)}),  # gpu-0 again: 32Gi, then the 8Gi default
    ("p2", {"c": ([_request(memory="15Gi", count=2)], [{"distinctAttribute": f"{DRIVER}/index"}])}),  # gpu-0, gpu-1
    ("p3", {"d": ([_request(memory="50Gi")], None)}),  # gpu-0 is full, 50Gi is no value of gpu-1: gpu-2, whole
    ("p4", {"e": ([_request(memory="20Gi")], None)}),  # gpu-1's second share
    ("p5", {"f": ([_request(memory="81Gi")], None)}),  # above every device's capacity: Pending
    ("p6", {"g": ([_request(memory="-1Gi")], None)}),  # rounded up on gpu-0 and gpu-1; on gpu-3 the scheduler's error
    ("p7", {"h": ([_request()], None)}),  # no request and no policy: the whole of gpu-3, as a share
    ("p8", {"i": ([_request(memory="1Gi")], None)}),  # nothing left: Pending
]


def test_pods_take_shares_as_gpusched_predicts(shared):
    rest = shared
    version = _version(rest)
    if not features.enabled("DRAConsumableCapacity", version):
        pytest.skip("the release drops the fields (test_without_the_gate_devices_are_allocated_whole)")
    for name, claims in STEPS:
        for claim_name, (requests, constraints) in claims.items():
            rest.create(CLAIMS, _claim(claim_name, requests, constraints))
        pod = _pod(name, list(claims))
        expected = _prediction(rest, pod)
        rest.create(PODS, pod)
        node, message = rest.wait(lambda name=name: verdict(rest.get(f"{PODS}/{name}")), timeout=60)
        if isinstance(expected, InputError):
            assert node is None and message is not None
            assert expected.message.split(" (expression: ")[0] in message, (name, message)
            continue
        if node is None:
            assert expected.message == message, name
            continue
        assert node in expected.feasible, name
        for claim_name, predicted in zip(claims, expected.claims, strict=True):
            real = rest.get(f"{CLAIMS}/{claim_name}")["status"]["allocation"]["devices"]["results"]
            assert _comparable(real) == _comparable(predicted.allocation["devices"]["results"]), (name, real)
            if features.enabled("DRAConsumableCapacity", version):
                assert all(("shareID" in r) == (r["device"] != "gpu-2") for r in real), real


def test_without_the_gate_devices_are_allocated_whole(namespace):
    """1.34 and 1.35 drop allowMultipleAllocations, requestPolicy and capacity requests: the device goes whole to
    the first claim, and gpusched says so for that release from the objects as written."""
    rest = namespace
    version = _version(rest)
    if features.enabled("DRAConsumableCapacity", version):
        pytest.skip("the release keeps the fields (test_pods_take_shares_as_gpusched_predicts)")
    node, slice_name = "whole-node", "whole-slice"
    status = {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
    rest.create("/api/v1/nodes", {"metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}},
                                  "status": {**status, "allocatable": dict(status["capacity"])}})  # fmt: skip
    rest.create(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "share"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})  # fmt: skip
    written = _slice(slice_name, [_device("gpu-0", RANGE)], node)
    rest.create(f"{RESOURCE}/resourceslices", written)
    try:
        kept = rest.get(f"{RESOURCE}/resourceslices/{slice_name}")["spec"]["devices"][0]
        assert "allowMultipleAllocations" not in kept and "requestPolicy" not in kept["capacity"]["memory"]
        for index in range(2):
            claim = _claim(f"w{index}", [_request(memory="8Gi")])
            rest.create(CLAIMS, claim)
            pod = _pod(f"w{index}", [f"w{index}"])
            expected = _prediction(rest, pod)
            as_written = predict(
                _listed(rest, "/api/v1/nodes", "Node", "v1"),
                _listed(rest, "/api/v1/pods", "Pod", "v1"),
                pod,
                ".".join(map(str, version)),
                objects=objects_from([("written", [written, claim, *_listed(rest, CLAIMS, "ResourceClaim")["items"][:-1],
                                                   *_listed(rest, f"{RESOURCE}/deviceclasses", "DeviceClass")["items"]])],
                                     False),
            )  # fmt: skip
            rest.create(PODS, pod)
            found, message = rest.wait(lambda index=index: verdict(rest.get(f"{PODS}/w{index}")), timeout=60)
            assert not isinstance(expected, InputError)
            assert (found is None) == (index == 1) and expected.feasible == ([node] if index == 0 else [])
            assert as_written.feasible == expected.feasible
            if found is None:
                assert expected.message == message == as_written.message
                continue
            real = rest.get(f"{CLAIMS}/w{index}")["status"]["allocation"]["devices"]["results"]
            assert real == expected.claims[0].allocation["devices"]["results"]
            assert real == as_written.claims[0].allocation["devices"]["results"]
            assert "shareID" not in real[0] and "consumedCapacity" not in real[0]
    finally:
        rest.delete(PODS)
        rest.wait(lambda: not rest.get(PODS)["items"])
        rest.delete(CLAIMS)
        rest.wait(lambda: not rest.get(CLAIMS)["items"], timeout=60)
        rest.delete(f"{RESOURCE}/resourceslices/{slice_name}")
        rest.delete(f"{RESOURCE}/deviceclasses/share")
        rest.delete(f"/api/v1/nodes/{node}")
