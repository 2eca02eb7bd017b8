"""On the real control plane of each release: which device selectors its API server accepts (gpusched must compile
exactly those, for that release), and DeviceTaintRules tainting devices for the real allocator as gpusched predicts
(from 1.37, where resource.k8s.io/v1 serves them).

The acceptance cases marked xfail are what gpusched does not model (cel-go's type checker sees attribute values as
google.protobuf.Any, and its cost estimator is not reproduced): strict, so a fix shows up as an unexpected pass.
"""

from __future__ import annotations

import itertools

import pytest

from gpusched.conformance.api import Rest, RestError
from gpusched.conformance.differential import verdict
from gpusched.planner.dra import features
from gpusched.planner.dra.cel import CelError, compile_selector
from gpusched.planner.dra.objects import objects_from
from gpusched.planner.scheduler.framework import Version
from gpusched.planner.scheduler.predict import parse_version, predict

RESOURCE = "/apis/resource.k8s.io/v1"
A = "device.attributes['gpu.example.com']"
LISTS_EXTENSION = [  # ext.Lists(3): CEL compatibility version 1.34, so new selectors may use it from 1.35
    "[3, 1].sort() == [1, 3] && [1, 2].slice(0, 1) == [1] && [[1]].flatten() == [1] && lists.range(2) == [0, 1]",
    "[1, 1].distinct() == [1] && [1, 2].reverse() == [2, 1] && [2, 1].sortBy(x, x) == [1, 2]",
]
MULTIPLE = "device.allowMultipleAllocations == false"  # a device field only with DRAConsumableCapacity (1.37)
ACCEPTED = [
    f"{A}.?model.orValue('none') == 'none' && {A}[?'index'].hasValue()",
    "optional.of(1).hasValue() && optional.none().orValue(2) == 2",
    "sets.contains([1, 2], [1]) && sets.intersects([1], [1]) && sets.equivalent([1], [1, 1])",
    *LISTS_EXTENSION,
    "[1, 2].isSorted() && [1, 2].sum() == 3 && [1, 2].min() == 1 && [1, 2].max() == 2",
    "[1, 2].first().hasValue() && [1, 2].last().value() == 2",
    "'%s-%d'.format(['a', 1]) == 'a-1' && strings.quote('a') == '\"a\"'",
    "[1, 2].all(i, v, v > i) && {'a': 1}.exists(k, v, v == 1) && [1].existsOne(i, v, v == 1)",
    "[1, 2].transformList(i, v, v * 2) == [2, 4] && [1, 2].transformList(i, v, v > 1, v) == [2]",
    f"cel.bind(a, {A}, a.?model.orValue('') == '')",
    "ip('10.0.0.1').family() == 4 && isIP('::1') && ip('::1').isLoopback() && cidr('10.0.0.0/8').containsIP('10.1.1.1')",
    "cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8') && cidr('10.0.0.0/8').prefixLength() == 8",
    "url('https://x.io:80/p?a=1').getHost() == 'x.io:80' && isURL('https://x.io') && url('/p').getEscapedPath() == '/p'",
    "'abc'.find('b') == 'b' && 'abcb'.findAll('b') == ['b', 'b'] && 'abc'.findAll('[a-c]', 2).size() == 2",
    "semver('v1.2', true) == semver('1.2.0') && isSemver('01.2.3', true) && semver('1.2.3').major() == 1",
    "quantity('1Gi').isGreaterThan(quantity('1Mi')) && quantity('1').add(2) == quantity('3')",
    f"{A}.model > 3",  # a runtime error, not a compile error: attribute values are not typed
    f"[1, 3].exists(i, v, v == {A}.index) && ip(['10.0.0.1', '10.0.0.300'][{A}.index % 2]).family() == 4",
    MULTIPLE,
    "device.attributes.all(d, device.attributes.all(e, device.attributes.all(f, true)))",
    "[1, 2].indexOf(2) == 1 && [1, 2].lastIndexOf(1) == 0 && string(ip('10.0.0.1')) == '10.0.0.1'",
    "{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}",  # likewise
]
SINCE = {**dict.fromkeys(LISTS_EXTENSION, (1, 35)), MULTIPLE: (1, 37)}  # the rest of ACCEPTED: from 1.34
REFUSED = [
    "device.driver ==",
    "device.nosuch == 1",
    "nosuch(1)",
    f"{A}.model.size() > 'x'",
    "'abc'.reverse() == 'cba'",  # strings extension version 2: no reverse
    "math.greatest(1, 2) == 2",  # not in Kubernetes' environment
    "[1].includes(1)",  # library.Lists version 1 is 1.37's, past the compatibility version 1.36
    "['a'].join('-') == 'a'",  # cel-go cannot size a list's elements here: the cost is unbounded
    f"{A}.model.split(',').join('-') == 'a'",
    "device.attributes.all(d, device.attributes.all(e, device.attributes.all(f, device.attributes.all(g, true))))",
]
NOT_MODELLED = [
    pytest.param(f"[{A}.index, 6].max() == 6", marks=pytest.mark.xfail(strict=True, reason="mixed literal of Any")),
    pytest.param(
        f"'%d'.format([{A}.index]) == '1'", marks=pytest.mark.xfail(strict=True, reason="format of an Any value")
    ),
    pytest.param(
        f"{A}.s.split(',').all(x, x.split(';').all(y, y.size() > 0))",
        marks=pytest.mark.xfail(strict=True, reason="cel-go's cost estimate of unsized strings"),
    ),
    pytest.param(
        "url('https://x.io/a').getEscapedPath().findAll('[A-Z]').size() == 1",
        marks=pytest.mark.xfail(strict=True, reason="cel-go's cost estimate of unsized strings"),
    ),
]
_names = itertools.count()


def accepted_by_the_api_server(rest: Rest, expression: str) -> bool:
    name = f"cel-{next(_names)}"
    body = {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}
    try:
        rest.create(f"{RESOURCE}/deviceclasses", body)
    except RestError as error:
        assert error.status == 422, error
        return False
    rest.delete(f"{RESOURCE}/deviceclasses/{name}")
    return True


def compiled_by_gpusched(expression: str, release: Version) -> bool:
    try:
        compile_selector(expression, release)
    except CelError:
        return False
    return True


@pytest.fixture(scope="module")
def rest(control_plane):
    client = Rest(control_plane.kubeconfig)
    yield client
    client.close()


@pytest.fixture(scope="module")
def release(control_plane) -> Version:
    return parse_version(control_plane.info.version)


@pytest.mark.parametrize("expression", [*ACCEPTED, *REFUSED, *NOT_MODELLED])
def test_gpusched_compiles_exactly_what_the_api_server_accepts(rest, release, expression):
    assert compiled_by_gpusched(expression, release) == accepted_by_the_api_server(rest, expression)


def test_the_lists_above_are_what_the_api_server_does(rest, release):
    """The corpus is labelled by the real server, not by hand."""
    accepted = [expression for expression in ACCEPTED if SINCE.get(expression, (1, 34)) <= release[:2]]
    assert all(accepted_by_the_api_server(rest, expression) for expression in accepted)
    refused = [*REFUSED, *(expression for expression in ACCEPTED if expression not in accepted)]
    assert not any(accepted_by_the_api_server(rest, expression) for expression in refused)


# --- DeviceTaintRules -------------------------------------------------------------------------------------------

NODE, NAMESPACE = "taint-node", "taint-rules"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
CLAIMS = f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims"
TAINT = {"key": "gpu.example.com/xid", "value": "79", "effect": "NoSchedule"}


def _listed(rest: Rest, path: str, kind: str, version: str = "resource.k8s.io/v1") -> dict:
    items = [{"apiVersion": version, "kind": kind, **item} for item in rest.get(path)["items"]]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _prediction(rest: Rest, pod: dict):
    collections = {"deviceclasses": "DeviceClass", "devicetaintrules": "DeviceTaintRule",
                   "resourceslices": "ResourceSlice"}  # fmt: skip
    documents = [(name, [_listed(rest, f"{RESOURCE}/{name}", kind)]) for name, kind in collections.items()]
    documents.append(("resourceclaims", [_listed(rest, CLAIMS, "ResourceClaim")]))
    nodes = _listed(rest, "/api/v1/nodes", "Node", "v1")
    return predict(nodes, _listed(rest, "/api/v1/pods", "Pod", "v1"), pod, objects=objects_from(documents, pods=False))


def _pod(name: str, claim: str) -> dict:
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"claims": [{"name": "gpus"}]}}
    spec = {"resourceClaims": [{"name": "gpus", "resourceClaimName": claim}], "containers": [container],
            "nodeSelector": {"kubernetes.io/hostname": NODE}}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def _claim(name: str, count: int, tolerations: list[dict] | None = None) -> dict:
    exactly: dict = {"deviceClassName": "taint-gpu", "count": count}
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"metadata": {"name": name}, "spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}}


@pytest.fixture(scope="module")
def tainted(rest, release):
    """One node, a slice of two devices, and a rule tainting gpu-0 of that pool."""
    if not features.enabled("DRADeviceTaintRules", release):
        pytest.skip("DeviceTaintRule needs DRADeviceTaintRules: resource.k8s.io/v1 serves it from 1.37")
    status = {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
    rest.create("/api/v1/nodes", {"metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
                                  "status": {**status, "allocatable": dict(status["capacity"])}})  # fmt: skip
    rest.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    rest.create(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "taint-gpu"},
                "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})  # fmt: skip
    rest.create(f"{RESOURCE}/devicetaintrules", {"metadata": {"name": "xid-79"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com", "pool": NODE, "device": "gpu-0"}, "taint": TAINT}})  # fmt: skip
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(2)]
    rest.create(f"{RESOURCE}/resourceslices", {"metadata": {"name": "taint-slice"}, "spec": {
        "driver": "gpu.example.com", "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
        "nodeName": NODE, "devices": devices}})  # fmt: skip
    try:
        yield rest
    finally:
        rest.delete(PODS)
        rest.wait(lambda: not rest.get(PODS)["items"])
        rest.delete(CLAIMS)
        for path in ("resourceslices/taint-slice", "devicetaintrules/xid-79", "deviceclasses/taint-gpu"):
            rest.delete(f"{RESOURCE}/{path}")
        rest.delete(f"/api/v1/nodes/{NODE}")


def _settled(rest: Rest, name: str) -> tuple[str | None, str | None]:
    return rest.wait(lambda: verdict(rest.get(f"{PODS}/{name}")), timeout=60)


def test_a_rule_tainted_device_is_skipped_unless_tolerated(tainted):
    rest = tainted
    rest.create(CLAIMS, _claim("both", 2))
    pod = _pod("both", "both")
    expected = _prediction(rest, pod)
    rest.create(PODS, pod)
    node, message = _settled(rest, "both")
    assert node is None and "cannot allocate all claims" in message
    assert expected.message == message and not expected.feasible
    tolerate = [{"key": "gpu.example.com/xid", "operator": "Equal", "value": "79", "effect": "NoSchedule"}]
    rest.create(CLAIMS, _claim("tolerant", 2, tolerate))
    pod = _pod("tolerant", "tolerant")
    expected = _prediction(rest, pod)
    rest.create(PODS, pod)
    assert _settled(rest, "tolerant") == (NODE, None)
    assert expected.feasible == [NODE]
    real = rest.get(f"{CLAIMS}/tolerant")["status"]["allocation"]["devices"]["results"]
    predicted = expected.claims[0].allocation["devices"]["results"]
    assert [(r["device"], r.get("tolerations")) for r in real] == [
        (r["device"], r.get("tolerations")) for r in predicted
    ]
