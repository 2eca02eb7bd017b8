"""The whole Kubernetes 1.37 CEL environment for device selectors: optional syntax, the sets, lists and strings
extensions, two-variable comprehensions, ip/cidr, url, regex, semver normalisation, and cel-go's error words."""

from __future__ import annotations

import re

import pytest

from gpusched.models.dra import DeviceAttribute, DeviceCapacity
from gpusched.planner.dra.cel import CelError, compile_selector, device_view

D = "gpu.example.com"


def nic():
    attributes = {
        "ip": DeviceAttribute(string_value="10.1.2.3"),
        "subnet": DeviceAttribute(string_value="10.1.0.0/16"),
        "endpoint": DeviceAttribute(string_value="https://user@nic.example.com:8443/v1/x?a=1&a=2&b="),
        "firmware": DeviceAttribute(string_value="v2.07"),
        "cores": DeviceAttribute(int_value=4),
    }
    return device_view(f"{D}/n/nic-0", D, attributes, {"lanes": DeviceCapacity(value="8")})


A = f'device.attributes["{D}"]'


@pytest.mark.parametrize(
    "expression",
    [
        # optional syntax (cel.OptionalTypes, since 1.28)
        f"{A}.?model.orValue('none') == 'none'",
        f"!{A}.?model.hasValue() && {A}.?cores.hasValue()",
        f"{A}[?'cores'].value() == 4",
        "optional.of(3).orValue(1) == 3 && optional.none().orValue(1) == 1",
        'device.attributes["other.io"].?x.orValue(1) == 1',  # an unknown domain is an empty map, also for .?
        # sets (ext.Sets)
        "sets.contains([1, 2, 3], [3, 1]) && sets.intersects([1], [2, 1]) && sets.equivalent([1, 1, 2], [2, 1])",
        # lists (ext.Lists v3, library.Lists v1)
        "[3, 1, 2].sort() == [1, 2, 3] && [1, 2, 3].slice(1, 2) == [2] && [[1], [2, 3]].flatten() == [1, 2, 3]",
        "[1, 1, 2].distinct() == [1, 2] && [1, 2].reverse() == [2, 1] && lists.range(3) == [0, 1, 2]",
        "[3, 1].sortBy(x, -x) == [3, 1] && [1, 2, 3].isSorted() && ![2, 1].isSorted()",
        "[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [4, 2, 9].min() == 2 && [4, 2, 9].max() == 9",
        "[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [1].indexOf(dyn(true)) == -1",
        "[1.0].indexOf(dyn(1)) == 0",  # A is double: an int needs dyn() past the checker
        "'abc'.indexOf('c') == 2 && [[1], [2]].indexOf([2]) == 1 && [1].lastIndexOf(2) == -1",
        "string(ip('2001:DB8::1')) == '2001:db8::1' && string(cidr('10.1.2.3/8')) == '10.1.2.3/8' && string(1) == '1'",
        "[[1, 2].indexOf(2)].indexOf(1) == 0",
        "[1, 2].first().value() == 1 && [1, 2].last().value() == 2 && ![].first().hasValue()",
        # strings (ext.Strings v2): format and quote
        f"'%s has %d cores'.format([device.driver, int({A}.cores)]) == '{D} has 4 cores'",  # an attribute is Any
        "strings.quote('a\"b') == '\"a\\\\\"b\"' && 'a,b'.split(',') == ['a', 'b']",
        # bindings and two-variable comprehensions (ext.TwoVarComprehensions, since 1.32)
        f"cel.bind(a, {A}, a.cores == 4)",
        "[10, 20].all(i, v, v == (i + 1) * 10) && [10, 20].exists(i, v, i == 1 && v == 20)",
        "{'a': 1, 'b': 2}.existsOne(k, v, v == 2) && [1, 2].transformList(i, v, i + v) == [1, 3]",
        "[1, 2, 3].transformList(i, v, v > 1, v * 10) == [20, 30]",
        # ip and cidr (library.IP, library.CIDR)
        f"ip({A}.ip).family() == 4 && cidr({A}.subnet).containsIP(ip({A}.ip)) && cidr({A}.subnet).containsIP('10.1.9.9')",
        "isIP('::1') && !isIP('10.0.0.01') && !isIP('fe80::1%eth0') && ip('::1').isLoopback()",
        "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast() && ip('fe80::1').isLinkLocalUnicast()",
        "ip('224.0.0.251').isLinkLocalMulticast() && ip('0.0.0.0').isUnspecified() && ip('2001:db8::') == ip('2001:DB8::0')",
        "cidr('10.1.2.3/8').ip() == ip('10.1.2.3') && cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')",
        "cidr('10.0.0.0/8').containsCIDR('10.2.0.0/16') && !cidr('10.2.0.0/16').containsCIDR(cidr('10.0.0.0/8'))",
        "cidr('::1/128').prefixLength() == 128 && isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0/08') && !isCIDR('10.0.0.0')",
        # url (library.URLs)
        f"url({A}.endpoint).getScheme() == 'https' && url({A}.endpoint).getHost() == 'nic.example.com:8443'",
        f"url({A}.endpoint).getHostname() == 'nic.example.com' && url({A}.endpoint).getPort() == '8443'",
        f"url({A}.endpoint).getEscapedPath() == '/v1/x' && url({A}.endpoint).getQuery() == {{'a': ['1', '2'], 'b': ['']}}",
        "isURL('https://x.io') && isURL('/path') && !isURL('x.io') && url('https://[::1]:80').getHostname() == '::1'",
        # regex (library.Regex)
        "'abc 123 45'.find('[0-9]+') == '123' && 'abc 123 45'.findAll('[0-9]+') == ['123', '45']",
        "'a1b2c3'.findAll('[0-9]', 2) == ['1', '2'] && 'abc'.find('x') == ''",
        # semver(s, true) normalises (library.SemverLib v1)
        f"semver({A}.firmware, true) == semver('2.7.0') && isSemver('v1.02', true) && !isSemver('v1.02')",
        "semver('1.2.3+build') == semver('1.2.3') && semver('01.1.1', true).major() == 1",
        # Quantity arithmetic with capacities
        f"device.capacity['{D}'].lanes.add(quantity('8')) == quantity('16')",
        "device.allowMultipleAllocations == false",
        "sign(quantity('-1')) == -1 && ip.isCanonical('10.0.0.1') && !ip.isCanonical('2001:DB8::1')",
    ],
)
def test_kubernetes_environment(expression):
    assert compile_selector(expression).matches(nic()) is True


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("9223372036854775807 + 1 > 0", "integer overflow"),
        ("-9223372036854775808 - 1 < 0", "integer overflow"),
        (f"int(double({A}.cores) * 1e30) > 0", "integer overflow"),  # int(1e30): refused when the program is built
        ("1 / 0 == 1", "division by zero"),
        ("1 % 0 == 1", "modulus by zero"),
        ("[1][3] == 1", "index out of bounds: 3"),
        ("[1, 2].sort()[-1] == 1", "index out of bounds: -1"),
        (f"{A}.nosuch == 1", "no such key: nosuch"),  # 1.37's optional-chaining hint is the allocator's (search.py)
        ("{'a': 1}['b'] == 1", "no such key: b"),
        (f"{A}.cores < 'x'", "no such overload"),
        ("[].min() == 1", "min called on empty list"),
        ("[dyn('a'), dyn(1)].isSorted()", "no such overload"),
        ("ip('10.0.0.300').family() == 4", 'IP Address "10.0.0.300" parse error during conversion from string'),
        ("ip('::ffff:1.2.3.4').family() == 6", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
        ("cidr('10.0.0.0').prefixLength() == 0", "network address parse error during conversion from string"),
        ("url('x.io').getHost() == ''", "URL parse error during conversion from string"),
        ("semver('1.2-rc', true).major() == 1", "short version cannot contain PreRelease/Build meta data"),
        ("'a'.find('(' + device.driver) == ''", "Illegal regex"),
    ],
)
def test_runtime_errors_in_cel_go_words(expression, error):
    with pytest.raises(CelError) as caught:
        compile_selector(expression).matches(nic())
    assert error in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("device.attributes.size() == 'x'", "found no matching overload for '_==_' applied to '(int, string)'"),
        ("sets.contains(1, [1])", "found no matching overload for 'sets.contains'"),
        ("[1].all(i, v, w, true)", "ERROR: <input>:1:"),
        ("device.nosuch == 1", "undefined field 'nosuch'"),
        ("device.?nosuch.orValue(1) == 1", "undefined field 'nosuch'"),
        ("nosuch(1)", "undeclared reference to 'nosuch'"),
        ("quantity('-1').sign() == -1", "found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'"),
        # what the API server's validators refuse after the type check
        ("['a', 1].isSorted()", "ERROR: <input>:1:7: expected type 'string' but found 'int'"),
        (f"[{A}.cores, 6].max() == 6", "ERROR: <input>:1:46: expected type 'any' but found 'int'"),
        ("{'a': 1, 2: 'b'}.size() == 2", "expected type 'string' but found 'int'"),
        (
            f"'%d'.format([{A}.cores]) == '4'",
            "decimal clause can only be used on integers, was given google.protobuf.Any",
        ),
        (f"'%s'.format([[{A}.cores]]) == '4'", "string clause can only be used on strings, bools, bytes, ints"),
        ("'%d %d'.format([1]) == ''", "index 1 out of range"),
        ("'%d'.format([1, 2]) == ''", "too many arguments supplied to string.format (expected 1, got 2)"),
        ("'%z'.format([1]) == ''", 'could not parse formatting clause: unrecognized formatting clause "z"'),
        (
            "[1].indexOf(true) == 0",
            "ERROR: <input>:1:12: found no matching overload for 'indexOf' applied to 'list(int).(bool)'",
        ),
        ("[[1]].lastIndexOf([1.0]) == 0", "'lastIndexOf' applied to 'list(list(int)).(list(double))'"),
        ("  device.nosuch == 1", "ERROR: <input>:1:9: undefined field 'nosuch'"),
    ],
)
def test_compile_errors(expression, error):
    with pytest.raises(CelError) as caught:
        compile_selector(expression)
    assert str(caught.value).startswith("compilation failed: ")
    assert error in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("int(1e30) > 0", "program instantiation failed: integer overflow"),
        ("uint(-1) > 0u", "program instantiation failed: unsigned integer overflow"),
        ("int('abc') > 0", "program instantiation failed: type conversion error from 'string' to 'int'"),
        ("int(' 1') > 0", "program instantiation failed: type conversion error from 'string' to 'int'"),  # Go's
        ("double('1e400') > 0.0", "program instantiation failed: type conversion error from 'string' to 'double'"),
        ("[1, 2][int('x')] == 1", "program instantiation failed: type conversion error from 'string' to 'int'"),
        ("string(b'\\xff') == ''", "program instantiation failed: invalid UTF-8 in bytes, cannot convert to string"),
        ("'a'.find('(') == ''", "program instantiation failed: error parsing regexp: missing closing ): `(`"),
        (
            "'a'.findAll('a**') == []",
            "program instantiation failed: error parsing regexp: invalid nested repetition operator: `**`",
        ),
        ("matches('a', '[')", "program instantiation failed: error parsing regexp: missing closing ]: `[`"),
    ],
)
def test_constants_the_api_server_folds_when_it_builds_the_program(expression, error):
    """The API server evaluates constant conversions and compiles literal regular expressions before storing the
    selector (each case checked against the 1.37.2 API server)."""
    with pytest.raises(CelError) as caught:
        compile_selector(expression)
    assert str(caught.value) == error


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("duration('x') > duration('1s')", "ERROR: <input>:1:10: invalid duration argument"),
        ("timestamp('x') > timestamp('2020-01-01T00:00:00Z')", "ERROR: <input>:1:11: invalid timestamp argument"),
        ("'a'.matches('(')", "ERROR: <input>:1:13: invalid matches argument"),
    ],
)
def test_literal_arguments_the_api_server_checks(expression, error):
    with pytest.raises(CelError, match=f"^compilation failed: {re.escape(error)}"):
        compile_selector(expression)


def test_go_durations_take_micro_signs():
    compile_selector("duration('1µs') > duration('0s') && duration('1μs') > duration('0s')")


def test_unknown_domain_is_empty_only_for_that_evaluation():
    view = nic()
    assert compile_selector('device.attributes["other.io"].size() == 0').matches(view)
    assert compile_selector('!("other.io" in device.attributes)').matches(view)


@pytest.mark.parametrize(
    ("expression", "what"),
    [
        ("{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}", "transformMap()"),
        ("format.dns1123Label().validate('a').hasValue()", "Kubernetes' format library"),
    ],
)
def test_what_the_library_lacks_compiles_and_fails_on_every_device(expression, what):
    """Kubernetes accepts these (the API server stores them), so loading must not refuse them; gpusched cannot
    run them, so every device reports why instead of a silent match or mismatch."""
    selector = compile_selector(expression)
    with pytest.raises(CelError, match=f"not modelled by gpusched: {re.escape(what)}"):
        selector.matches(nic())


@pytest.mark.parametrize(
    "expression",
    [
        "['a'].join('-') == 'a'",  # the API server refuses every join(): it cannot size the list's elements
        "['a'].lastIndexOf('b') == -1",  # nor search a list of strings: each comparison's cost is unbounded
        "device.attributes.all(d, device.attributes.all(e, device.attributes.all(f, device.attributes.all(g, true))))",
        "device.attributes.all(d, device.attributes.all(e, device.attributes.all(f, device.attributes.exists(g, v, true))))",
    ],
)
def test_over_budget_selectors_are_refused_as_the_api_server_refuses_them(expression):
    with pytest.raises(CelError, match="^too complex, exceeds cost limit$"):
        compile_selector(expression)


def test_a_compile_error_next_to_a_renamed_call_is_reported_alone():
    with pytest.raises(CelError) as caught:
        compile_selector("[1].indexOf(1) == 'x'")
    assert "found no matching overload for '_==_' applied to '(int, string)'" in str(caught.value)
    assert "indexOf" not in str(caught.value).split("|")[0]
