"""On the real control plane of each release: which device selectors its API server accepts (gpusched must compile
exactly those, for that release, and refuse the others in the API server's words), and DeviceTaintRules tainting
devices for the real allocator as gpusched predicts (from 1.37, where resource.k8s.io/v1 serves them).

The corpus is labelled by the real server (test_the_lists_above_are_what_the_api_server_does), not by hand: what its
types refuse (attribute values are google.protobuf.Any; device is an object), what its validators refuse after the
type check (homogeneous literals, format clauses), and what its cost estimate refuses, at the exact size where it
starts refusing (LIMITS: the largest N it accepts, found by bisecting against this server).
"""

from __future__ import annotations

import itertools
import re

import pytest

from gpusched.conformance.api import Rest, RestError
from gpusched.conformance.differential import verdict
from gpusched.planner.dra import features
from gpusched.planner.dra.cel import CelError, compile_selector
from gpusched.planner.dra.objects import objects_from
from gpusched.planner.scheduler.framework import NEWEST, Version
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
    "{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}",  # accepted; gpusched's library cannot run it
    # the API server's types: an attribute is google.protobuf.Any, which converts, compares and indexes as dyn
    f"{A}.x",  # an expression may evaluate to the attribute type
    f"{A}.x + 1 == 2 && {A}.x[0] == 1 && 1 in {A}.x && {A}.x.y == 1 && {A}.x == {A}.y",
    f"{A}.x == quantity('1') && has({A}.x) && has(device.driver) && int(device.driver) > 0",
    f"dyn({A}.l).exists(p, p == 1) && [{A}.l].exists(p, p == 1) && [1].indexOf({A}.x) == 0",
    "cel.bind(d, device, d.driver == 'x') && [device.driver, 'a'].size() == 2 && [1].indexOf(dyn(true)) == -1",
    "'%.2f %e %o %b %x'.format([1.0, 1.0, 1u, true, 'a']) == '' && '%s'.format([[1, 'a']]) == '' && '100%%'.format([]) == ''",
    "[?optional.of(1), 2].size() == 2 && [device.capacity['a'].c, quantity('1')].size() == 2",
    "duration('1h30m') > duration('1µs') && duration('-1.5h') < duration('0s') && int(string(1)) == 1",
    "int('+1') > 0 && double('inf') > 0.0 && bool('TRUE') && 'a'.find(device.driver) == ''",
    "sign(quantity('-1')) == -1 && ip.isCanonical('10.0.0.1') && !ip.isCanonical('2001:DB8::1')",
    # priced at or under the limit
    "'aa'" + ".replace('a', 'aa')" * 21 + ".size() > 0",  # each replace doubles the longest result
    "'a'.replace('a', device.driver).replace('a', device.driver).size() > 0",
    f"{A}.s.split(',').exists(p, p == 'a') && {A}.s.replace('', 'b').size() > 2 && {A}.s.matches('a+b')",
    "device.attributes.exists(d, v, v.exists(k, w, w == 1)) && device.attributes.transformList(k, v, k).size() > 0",
    "device.capacity['a'].all(k, v, v.isGreaterThan(quantity('1'))) && device.driver.matches('^a.*$')",
    f"cidr('10.0.0.0/8').containsIP({A}.s) && url({A}.s).getHost() == 'x' && strings.quote({A}.s) == ''",
]
SINCE = {**dict.fromkeys(LISTS_EXTENSION, (1, 35)), MULTIPLE: (1, 37)}  # the rest of ACCEPTED: from 1.34
REFUSED = [
    "device.driver ==",
    "device.nosuch == 1",
    "  device.nosuch == 1",
    "nosuch(1)",
    f"{A}.model.size() > 'x'",
    "'abc'.reverse() == 'cba'",  # strings extension version 2: no reverse
    "math.greatest(1, 2) == 2",  # not in Kubernetes' environment
    "[1].includes(1)",  # library.Lists version 1 is 1.37's, past the compatibility version 1.36
    # the API server's types refuse these first
    "device.driver + 1 == 'x'",
    "device.capacity['a'].x > 1",
    "device.capacity['a'].x.isGreaterThan(1)",
    "quantity('1') == semver('1.0.0')",
    "string(device.capacity['a'].c) == ''",
    "quantity('-1').sign() == -1",  # sign is a function of a Quantity, not a member
    f"{A}.l.exists(p, p == 1)",  # an attribute is no list to the checker
    f"cel.bind(q, {A}.l, q.all(i, v, v == 1))",
    "[1].indexOf(true) == 0",
    "[[1]].lastIndexOf([1.0]) == 0",
    # a selector evaluates to bool or to the attribute type
    "1",
    "device.driver",
    f"{A}.x ? 1 : 2",
    A,
    "[1]",
    # the validators after the type check: homogeneous literals, format clauses
    f"[{A}.index, 6].max() == 6",
    "['a', 1].isSorted()",
    f"{{{A}.x: 1, 'a': 2}}.size() == 2",
    "[ip('1.2.3.4'), cidr('1.0.0.0/8')].size() == 2",
    "[optional.of(1), optional.of('a')].size() == 2",
    "[1, ?optional.of('a')].size() == 2",
    f"'%d'.format([{A}.index]) == '1'",
    f"'%s'.format([{{'a': {A}.x}}]) == ''",
    "'%s'.format([device.capacity['a'].c]) == ''",
    "'%x'.format([ip('1.2.3.4')]) == ''",
    "'%f'.format([1]) == ''",
    "'%'.format([1]) == ''",
    "'%.f'.format([1.0]) == ''",
    "'%.3'.format([1.0]) == ''",
    "'%s'.format(['a', 'b']) == ''",
    "'%s'.format([]) == ''",
    # literal arguments checked after the type check, and constants the API server folds building the program
    "duration('x') > duration('1s')",
    "timestamp('2020-01-01') > timestamp('2020-01-01T00:00:00Z')",
    "'a'.matches('(')",
    "matches('a', 'a**')",
    "'a'.find('(') == '' ",
    "'a'.findAll('[[:foo:]]') == []",
    "'a'.find('a{2,1}') == ''",
    "'a'.find('\\\\') == ''",
    "int(1e30) > 0",
    "uint(-1) > 0u",
    "int('abc') > 0",
    "int(' 1') > 0",
    "double('1e400') > 0.0",
    "[int('x'), 1].size() == 2",
    "{'a': uint(-1)}.size() == 1",
    "string(b'\\xff') == ''",
    "duration(string(1)) > duration('1s')",
    # over the cost limit
    "'aa'" + ".replace('a', 'aa')" * 22 + ".size() > 0",
    "['a'].join('-') == 'a'",  # cel-go cannot size a list's elements here: the cost is unbounded
    f"{A}.model.split(',').join('-') == 'a'",
    "['a', 'b'].isSorted()",
    "'abc'.indexOf('c') == 2 && ['a'].lastIndexOf('b') == -1",
    "device.attributes.all(d, device.attributes.all(e, device.attributes.all(f, device.attributes.all(g, true))))",
    f"{A}.s.split(',').all(x, x.split(';').all(y, y.size() > 0))",
    "url('https://x.io/a').getEscapedPath().findAll('[A-Z]').size() == 1",
]
# lists.range(N).all(x, BODY): the largest N the API server accepts (bisected against it); N + 1 is refused
LIMITS = [
    ("true", 249997),
    (f"{A}.s == 'abc'", 111109),
    (f"{A}.s.contains('ab')", 66665),
    (f"{A}.s + 'x' == 'y'", 62499),
    (f"{A}.s.replace('a', 'bb') == 'a'", 45454),
    (f"{A}.s.split(',').size() > 1", 43477),
    (f"{A}.s.findAll('a').size() > 1", 58822),
    (f"{A}.s in ['a', 'b']", 49999),
    ("device.attributes.exists(d, true)", 7407),
    ("device.capacity['a'].all(k, v, v.isGreaterThan(quantity('1')))", 4999),
    ("device.attributes.all(d, device.attributes[d].exists(k, true))", 229),
    (f"{A}.s.split(',').all(p, p.size() < 3)", 2463),
    ("device.driver.contains(" + A + ".s)", 16948),
    ("[x].sortBy(y, -y).size() == 1", 14925),
    ("[1, 2, 3].filter(y, y > x).size() > 0", 13333),
    (f"cel.bind(v, {A}.s, v.size() + v.size() > 2)", 41666),
    (f"string(bytes({A}.s)) == ''", 24389),
]
_names = itertools.count()
_DETAIL = re.compile(r'^(Invalid value: "(?:[^"\\]|\\.)*": |Forbidden: |Internal error: )', re.S)


def _at_limit() -> list[str]:
    return [f"lists.range({n + extra}).all(x, {body})" for body, n in LIMITS for extra in (0, 1)]


def api_server_verdict(rest: Rest, expression: str) -> str | None:
    """None when the API server accepts the selector, else its words (the field error's detail)."""
    name = f"cel-{next(_names)}"
    body = {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}
    try:
        rest.create(f"{RESOURCE}/deviceclasses", body)
    except RestError as error:
        assert error.status == 422, error
        assert len(error.causes) == 1, error
        return _DETAIL.sub("", error.causes[0])
    rest.delete(f"{RESOURCE}/deviceclasses/{name}")
    return None


def gpusched_verdict(expression: str, release: Version) -> str | None:
    try:
        compile_selector(expression, release)
    except CelError as error:
        return str(error)
    return None


@pytest.fixture(scope="module")
def rest(control_plane):
    client = Rest(control_plane.kubeconfig)
    yield client
    client.close()


@pytest.fixture(scope="module")
def release(control_plane) -> Version:
    return parse_version(control_plane.info.version)


@pytest.mark.parametrize("expression", [*ACCEPTED, *REFUSED, *_at_limit()])
def test_gpusched_refuses_exactly_what_the_api_server_refuses_in_its_words(rest, release, expression):
    ours, theirs = gpusched_verdict(expression, release), api_server_verdict(rest, expression)
    if release[:2] == NEWEST:
        assert ours == theirs
    else:  # the words were taken from the newest release's cel-go; an older one is held to the verdict
        assert (ours is None) == (theirs is None), (ours, theirs)


def test_the_lists_above_are_what_the_api_server_does(rest, release):
    """The corpus is labelled by the real server, not by hand."""
    accepted = [expression for expression in ACCEPTED if SINCE.get(expression, (1, 34)) <= release[:2]]
    assert [e for e in accepted if api_server_verdict(rest, e) is not None] == []
    refused = [*REFUSED, *(expression for expression in ACCEPTED if expression not in accepted)]
    assert [e for e in refused if api_server_verdict(rest, e) is None] == []
    if release[:2] == NEWEST:  # the limits were bisected against the newest release's cost estimate
        limits = [(e, api_server_verdict(rest, e) is None) for e in _at_limit()]
        assert limits == [(e, i % 2 == 0) for i, (e, _) in enumerate(limits)]


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
