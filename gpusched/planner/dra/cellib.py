"""Kubernetes' CEL library functions (k8s.io/apiserver/pkg/cel/library), as Python functions the CEL runtime calls.

The runtime holds only CEL values, so each Kubernetes type is a one-key map: {"__quantity__": exact decimal},
{"__semver__": "1.2.3"}, {"__ip__": "10.0.0.1"}, {"__cidr__": "10.0.0.0/8"}, {"__url__": "https://..."}; its text is
canonical, so CEL's map equality is Kubernetes' value equality (quantity("1Gi") == quantity("1024Mi")).
A function that fails raises LibraryError with cel-go's words; the runtime passes them through.
"""

from __future__ import annotations

import ipaddress
import json
import re
import urllib.parse
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from .celwords import go_regex_error
from .netip import AddrError, parse_addr, parse_prefix

__all__ = ["LibraryError", "QUANTITY", "SEMVER", "DECLARATIONS", "parse_k8s_quantity", "type_name"]

QUANTITY, SEMVER, IP, CIDR, URL = "__quantity__", "__semver__", "__ip__", "__cidr__", "__url__"
_KINDS = {QUANTITY: "Quantity", SEMVER: "Semver", IP: "net.IP", CIDR: "net.CIDR", URL: "url.URL"}
_QUANTITY_FORM = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_SUFFIX: dict[str, int | Decimal] = {
    "": 1,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_SEMVER_FORM = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


class LibraryError(Exception):
    """Raised inside a library function: its text is the runtime error cel-go would give."""


def _overload(*values: Any) -> LibraryError:
    return LibraryError("no such overload")


def type_name(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1:
        kind = _KINDS.get(next(iter(value)))
        if kind:
            return kind
    return {bool: "bool", int: "int", float: "double", str: "string", dict: "map", list: "list"}.get(type(value), "dyn")


def _kind(value: Any, key: str) -> str:
    if isinstance(value, dict) and key in value:
        return str(value[key])
    raise _overload(value)


# --- Quantity (k8s.io/apiserver/pkg/cel/library/quantity.go) ----------------------------------------------------


def parse_k8s_quantity(text: str) -> Decimal:
    """resource.ParseQuantity: a number, then one suffix (binary, decimal SI, or an e-exponent)."""
    match = re.match(_QUANTITY_FORM, text)
    number, suffix = (match.group(1), match.group(2)) if match else ("", "")
    try:
        if suffix in _SUFFIX:
            return Decimal(number) * _SUFFIX[suffix]
        if suffix[:1] in "eE":
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
    except (InvalidOperation, ValueError):
        pass
    raise LibraryError(f"quantities must match the regular expression '{_QUANTITY_FORM}'")


def make_quantity(amount: Decimal) -> dict[str, str]:
    return {QUANTITY: format(amount.normalize(), "f") if amount else "0"}


def _amount(value: Any) -> Decimal:
    if isinstance(value, dict) and QUANTITY in value:
        return Decimal(value[QUANTITY])
    raise _overload(value)


def _quantity(text: Any) -> dict[str, str]:
    if not isinstance(text, str):
        raise _overload(text)
    return make_quantity(parse_k8s_quantity(text))


def _is_quantity(text: Any) -> bool:
    if not isinstance(text, str):
        raise _overload(text)
    try:
        parse_k8s_quantity(text)
    except LibraryError:
        return False
    return True


def _operand(value: Any) -> Decimal:
    """add/sub take a Quantity or an int."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    return _amount(value)


def _as_integer(value: Any) -> int:
    amount = _amount(value)
    if amount != amount.to_integral_value() or not -(2**63) <= amount < 2**63:
        raise LibraryError("cannot convert value to integer")
    return int(amount)


def _is_integer(value: Any) -> bool:
    amount = _amount(value)
    return amount == amount.to_integral_value() and -(2**63) <= amount < 2**63


# --- Semver (k8s.io/apiserver/pkg/cel/library/semverlib.go) -----------------------------------------------------


def make_semver(text: str) -> dict[str, str]:
    """A parsed version; build metadata is dropped, as blang/semver's EQ ignores it."""
    return {SEMVER: text.partition("+")[0]}


def _semver(text: Any, normalize: Any = False) -> dict[str, str]:
    if not isinstance(text, str) or not isinstance(normalize, bool):
        raise _overload(text)
    text, problem = _normalized(text) if normalize else (text, None)
    problem = problem or _semver_error(text)
    if problem:
        raise LibraryError(problem)
    return make_semver(text)


def _is_semver(text: Any, normalize: Any = False) -> bool:
    if not isinstance(text, str) or not isinstance(normalize, bool):
        raise _overload(text)
    text, problem = _normalized(text) if normalize else (text, None)
    return problem is None and _semver_error(text) is None


def _normalized(text: str) -> tuple[str, str | None]:
    """semver(s, true): drop a leading "v", strip leading zeros of each part, fill a short version with ".0"."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            parts[i] = part if part and part[0] in _DIGITS else "0" + part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            return text, "short version cannot contain PreRelease/Build meta data"
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts), None


_DIGITS = frozenset("0123456789")
_ALPHANUMERIC = _DIGITS | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


def _semver_error(text: str) -> str | None:
    """Why the parser behind CEL's semver() (github.com/blang/semver/v4 Parse) refuses the text, in its words; the
    runtime error carries them. None when it parses: major.minor.patch, then `-` prerelease, then `+` build."""
    if not text:
        return "Version string empty"
    parts = text.split(".", 2)
    if len(parts) != 3:
        return "No Major.Minor.Patch elements found"
    rest, _, build = parts[2].partition("+")
    patch, dash, prerelease = rest.partition("-")
    for label, number in (("major", parts[0]), ("minor", parts[1]), ("patch", patch)):
        problem = _number_error(label, number)
        if problem:
            return problem
    for identifier in prerelease.split(".") if dash else ():
        if not identifier:
            return "Prerelease is empty"
        if set(identifier) <= _DIGITS and len(identifier) > 1 and identifier[0] == "0":
            return f"Numeric PreRelease version must not contain leading zeroes {_go_quote(identifier)}"
        if not set(identifier) <= _ALPHANUMERIC:
            return f"Invalid character(s) found in prerelease {_go_quote(identifier)}"
    for identifier in build.split(".") if "+" in parts[2] else ():
        if not identifier:
            return "Build meta data is empty"
        if not set(identifier) <= _ALPHANUMERIC:
            return f"Invalid character(s) found in build meta data {_go_quote(identifier)}"
    return None


def _number_error(label: str, number: str) -> str | None:
    """One of major, minor, patch: digits only, no leading zero, and within an unsigned 64-bit integer."""
    if not set(number) <= _DIGITS:
        return f"Invalid character(s) found in {label} number {_go_quote(number)}"
    if len(number) > 1 and number[0] == "0":
        return f"{label.capitalize()} number must not contain leading zeroes {_go_quote(number)}"
    if not number or int(number) >= 2**64:
        reason = "invalid syntax" if not number else "value out of range"
        return f"strconv.ParseUint: parsing {_go_quote(number)}: {reason}"
    return None


def _go_quote(text: str) -> str:
    """Go's %q for the strings a version holds: double quotes, with `"` and `\\` escaped."""
    return json.dumps(text, ensure_ascii=False)


def _version_parts(value: Any) -> tuple[int, int, int, str]:
    if not (isinstance(value, dict) and SEMVER in value):
        raise _overload(value)
    match = _SEMVER_FORM.match(value[SEMVER])
    assert match is not None  # only _semver and attributes (validated) make these maps
    return int(match.group(1)), int(match.group(2)), int(match.group(3)), match.group(4) or ""


def _prerelease_key(pre: str) -> tuple[int, tuple[tuple[int, int, str], ...]]:
    """Semver precedence: a release sorts after its pre-releases; numeric identifiers before alphanumeric ones."""
    if not pre:
        return (1, ())
    return (0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))


def _version_key(value: Any) -> tuple[Any, ...]:
    major, minor, patch, pre = _version_parts(value)
    return (major, minor, patch, _prerelease_key(pre))


# --- comparisons shared by Quantity and Semver --------------------------------------------------------------------


def _ordered(left: Any, right: Any) -> tuple[Any, Any]:
    if isinstance(left, dict) and QUANTITY in left:
        return _amount(left), _amount(right)
    if isinstance(left, dict) and SEMVER in left:
        return _version_key(left), _version_key(right)
    raise _overload(left, right)


def _compare_to(left: Any, right: Any) -> int:
    one, other = _ordered(left, right)
    return (one > other) - (one < other)


def _greater(left: Any, right: Any) -> bool:
    one, other = _ordered(left, right)
    return bool(one > other)


def _less(left: Any, right: Any) -> bool:
    one, other = _ordered(left, right)
    return bool(one < other)


# --- IP and CIDR (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go; Go's net/netip) -------------------------------

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _parse_ip(text: str) -> _Address:
    """library.IP's parseIPAddr: netip.ParseAddr, then no zone and no IPv4-mapped IPv6 address."""
    try:
        address, zone = parse_addr(text)
    except AddrError as error:
        raise LibraryError(f"IP Address {_go_quote(text)} parse error during conversion from string: {error}") from None
    if zone:
        raise LibraryError(f"IP address {_go_quote(text)} with zone value is not allowed")
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        raise LibraryError(f"IPv4-mapped IPv6 address {_go_quote(text)} is not allowed")
    return address


def _ip(text: Any) -> dict[str, str]:
    if isinstance(text, str):
        return {IP: str(_parse_ip(text))}
    return {IP: _kind(text, CIDR).partition("/")[0]}  # cidr.ip(): the address as written, before the mask


def _address(value: Any) -> _Address:
    return ipaddress.ip_address(_kind(value, IP))


def _is_valid(parse: Callable[[str], Any], text: Any) -> bool:
    if not isinstance(text, str):
        raise _overload(text)
    try:
        parse(text)
    except LibraryError:
        return False
    return True


def _global_unicast(address: _Address) -> bool:
    """netip.Addr.IsGlobalUnicast: private ranges count; broadcast, loopback, link-local and multicast do not."""
    if address == ipaddress.ip_address("255.255.255.255"):
        return False
    return not (address.is_unspecified or address.is_loopback or address.is_multicast or _link_local(address))


def _link_local(address: _Address) -> bool:
    network = "169.254.0.0/16" if address.version == 4 else "fe80::/10"
    return address in ipaddress.ip_network(network)


def _link_local_multicast(address: _Address) -> bool:
    network = "224.0.0.0/24" if address.version == 4 else "ff02::/16"
    return address in ipaddress.ip_network(network)


def _parse_cidr(text: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    """library.CIDR's parseCIDR: netip.ParsePrefix, then no IPv4-mapped IPv6 address; the address is kept as written."""
    try:
        address, bits = parse_prefix(text)
    except AddrError as error:
        raise LibraryError(f"{_CIDR_WORDS}: {error}") from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        raise LibraryError(f"IPv4-mapped IPv6 address {_go_quote(text)} is not allowed")
    return ipaddress.ip_interface(f"{address}/{bits}")


_CIDR_WORDS = "network address parse error during conversion from string"


def _cidr(text: Any) -> dict[str, str]:
    """cidr(): its parseCIDR's error wrapped once more in the same words (as 1.37.2 says it, twice)."""
    if not isinstance(text, str):
        raise _overload(text)
    try:
        return {CIDR: str(_parse_cidr(text))}
    except LibraryError as error:
        raise LibraryError(f"{_CIDR_WORDS}: {error}") from None


def _interface(value: Any) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    return ipaddress.ip_interface(_kind(value, CIDR))


def _contains_ip(cidr: Any, other: Any) -> bool:
    address = _parse_ip(other) if isinstance(other, str) else _address(other)
    network = _interface(cidr).network
    return address.version == network.version and address in network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    inner = (_parse_cidr(other) if isinstance(other, str) else _interface(other)).network
    outer = _interface(cidr).network
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


# --- URL (k8s.io/apiserver/pkg/cel/library/urls.go; Go's net/url ParseRequestURI) ---------------------------------


def _parse_url(text: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(text)
    if not (parts.scheme or text.startswith("/")) or any(ord(char) < 0x20 or char == "\x7f" for char in text):
        raise LibraryError(
            f"URL parse error during conversion from string: parse {_go_quote(text)}: invalid URI for request"
        )
    return parts


def _url(text: Any) -> dict[str, str]:
    if not isinstance(text, str):
        raise _overload(text)
    _parse_url(text)
    return {URL: text}


def _split_url(value: Any) -> urllib.parse.SplitResult:
    return urllib.parse.urlsplit(_kind(value, URL))


def _hostname(value: Any) -> str:
    host = _split_url(value).netloc.rpartition("@")[2]
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rpartition(":")[0] if ":" in host else host


def _port(value: Any) -> str:
    host = _split_url(value).netloc.rpartition("@")[2]
    tail = host[host.find("]") + 1 :] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


def _escaped_path(value: Any) -> str:
    """url.URL.EscapedPath: the path, percent-encoded where a path must be (Go's encodePath)."""
    return urllib.parse.quote(urllib.parse.unquote(_split_url(value).path), safe="$&+,/:;=@-_.~")


def _query(value: Any) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_split_url(value).query, keep_blank_values=True)


# --- lists (k8s.io/apiserver/pkg/cel/library/lists.go) and regex (regex.go) ----------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _KINDS:
        raise _overload(value)  # Kubernetes types do not compare with < in these functions
    return value


def _is_sorted(items: list[Any]) -> bool:
    try:
        return all(_plain(a) <= _plain(b) for a, b in zip(items, items[1:], strict=False))
    except TypeError:
        raise _overload(items) from None


def _sum(items: list[Any]) -> Any:
    if any(isinstance(item, bool) or not isinstance(item, int | float) for item in items):
        raise _overload(items)
    return sum(items) if items else 0


def _extreme(name: str, pick: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    def choose(items: list[Any]) -> Any:
        if not items:
            raise LibraryError(f"{name} called on empty list")
        try:
            return pick([_plain(item) for item in items])
        except TypeError:
            raise _overload(items) from None

    return choose


def _same(one: Any, other: Any) -> bool:
    """CEL equality of two list elements: numbers compare across int and double, a bool is never a number."""
    return isinstance(one, bool) == isinstance(other, bool) and one == other


def _index_of(items: list[Any], item: Any) -> int:
    return next((i for i, found in enumerate(items) if _same(found, item)), -1)


def _last_index_of(items: list[Any], item: Any) -> int:
    return next((i for i in range(len(items) - 1, -1, -1) if _same(items[i], item)), -1)


def _string(value: Any) -> str:
    """string(ip) and string(cidr): the canonical text, as netip's String() prints it."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in (IP, CIDR):
        return str(next(iter(value.values())))
    raise _overload(value)


def _regex(pattern: str) -> re.Pattern[str]:
    """Go's regexp decides what is valid (RE2 syntax); Python's re runs what both accept."""
    if error := go_regex_error(pattern):
        raise LibraryError(f"Illegal regex: {error}")
    try:
        return re.compile(pattern)
    except re.error:
        raise LibraryError(f"not modelled by gpusched: the regular expression {pattern!r} (RE2 syntax)") from None


def _find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [match.group(0) for match in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


# --- declarations: (function, overload id, member?, parameter types, result type, implementation) ----------------
# Types: "obj" is a Kubernetes type (a one-key map), "list" list(dyn), "strings" list(string), "query" map(string,
# list(string)); "any" stands for one overload per concrete type (the runtime dispatches no `dyn` parameter), "same"
# for the type "any" took in that overload. Kubernetes' lists library is at version 0 (no `includes`): the API server
# compiles a new selector in the environment of its minimum compatibility version, 1.36 for 1.37. Quantity and Semver share compareTo/isGreaterThan/isLessThan: one overload dispatches on the key.

Declaration = tuple[str, str, bool, tuple[str, ...], str, Callable[..., Any]]
DECLARATIONS: list[Declaration] = [
    ("quantity", "string_to_quantity", False, ("string",), "obj", _quantity),
    ("isQuantity", "is_quantity_string", False, ("string",), "bool", _is_quantity),
    ("sign", "quantity_sign", False, ("obj",), "int", lambda q: (_amount(q) > 0) - (_amount(q) < 0)),  # sign(q)
    ("asInteger", "quantity_as_integer", True, ("obj",), "int", _as_integer),
    ("isInteger", "quantity_is_integer", True, ("obj",), "bool", _is_integer),
    ("asApproximateFloat", "quantity_get_float", True, ("obj",), "double", lambda q: float(_amount(q))),
    ("add", "quantity_add", True, ("obj", "obj"), "obj", lambda q, o: make_quantity(_amount(q) + _amount(o))),
    ("add", "quantity_add_int", True, ("obj", "int"), "obj", lambda q, o: make_quantity(_amount(q) + o)),
    ("sub", "quantity_sub", True, ("obj", "obj"), "obj", lambda q, o: make_quantity(_amount(q) - _amount(o))),
    ("sub", "quantity_sub_int", True, ("obj", "int"), "obj", lambda q, o: make_quantity(_amount(q) - o)),
    ("semver", "string_to_semver", False, ("string",), "obj", _semver),
    ("semver", "string_bool_to_semver_normalize", False, ("string", "bool"), "obj", _semver),
    ("isSemver", "is_semver_string", False, ("string",), "bool", _is_semver),
    ("isSemver", "is_semver_string_bool_normalize", False, ("string", "bool"), "bool", _is_semver),
    ("major", "semver_major", True, ("obj",), "int", lambda v: _version_parts(v)[0]),
    ("minor", "semver_minor", True, ("obj",), "int", lambda v: _version_parts(v)[1]),
    ("patch", "semver_patch", True, ("obj",), "int", lambda v: _version_parts(v)[2]),
    ("compareTo", "k8s_compare_to", True, ("obj", "obj"), "int", _compare_to),
    ("isGreaterThan", "k8s_is_greater_than", True, ("obj", "obj"), "bool", _greater),
    ("isLessThan", "k8s_is_less_than", True, ("obj", "obj"), "bool", _less),
    ("ip", "string_to_ip", False, ("string",), "obj", _ip),
    ("ip", "cidr_ip", True, ("obj",), "obj", _ip),
    ("isIP", "is_ip", False, ("string",), "bool", lambda t: _is_valid(_parse_ip, t)),
    ("ip.isCanonical", "ip_is_canonical", False, ("string",), "bool", lambda t: str(_parse_ip(t)) == t),
    ("family", "ip_family", True, ("obj",), "int", lambda v: _address(v).version),
    ("isUnspecified", "ip_is_unspecified", True, ("obj",), "bool", lambda v: _address(v).is_unspecified),
    ("isLoopback", "ip_is_loopback", True, ("obj",), "bool", lambda v: _address(v).is_loopback),
    (
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        True,
        ("obj",),
        "bool",
        lambda v: _link_local_multicast(_address(v)),
    ),
    ("isLinkLocalUnicast", "ip_is_link_local_unicast", True, ("obj",), "bool", lambda v: _link_local(_address(v))),
    ("isGlobalUnicast", "ip_is_global_unicast", True, ("obj",), "bool", lambda v: _global_unicast(_address(v))),
    ("cidr", "string_to_cidr", False, ("string",), "obj", _cidr),
    ("isCIDR", "is_cidr", False, ("string",), "bool", lambda t: _is_valid(_parse_cidr, t)),
    ("containsIP", "cidr_contains_ip_string", True, ("obj", "string"), "bool", _contains_ip),
    ("containsIP", "cidr_contains_ip_ip", True, ("obj", "obj"), "bool", _contains_ip),
    ("containsCIDR", "cidr_contains_cidr_string", True, ("obj", "string"), "bool", _contains_cidr),
    ("containsCIDR", "cidr_contains_cidr", True, ("obj", "obj"), "bool", _contains_cidr),
    ("masked", "cidr_masked", True, ("obj",), "obj", lambda c: {CIDR: str(_interface(c).network)}),
    ("prefixLength", "cidr_prefix_length", True, ("obj",), "int", lambda c: _interface(c).network.prefixlen),
    ("url", "string_to_url", False, ("string",), "obj", _url),
    ("isURL", "is_url_string", False, ("string",), "bool", lambda t: _is_valid(_parse_url, t)),
    ("getScheme", "url_get_scheme", True, ("obj",), "string", lambda u: _split_url(u).scheme),
    ("getHost", "url_get_host", True, ("obj",), "string", lambda u: _split_url(u).netloc.rpartition("@")[2]),
    ("getHostname", "url_get_hostname", True, ("obj",), "string", _hostname),
    ("getPort", "url_get_port", True, ("obj",), "string", _port),
    ("getEscapedPath", "url_get_escaped_path", True, ("obj",), "string", _escaped_path),
    ("getQuery", "url_get_query", True, ("obj",), "query", _query),
    ("isSorted", "list_is_sorted", True, ("list",), "bool", _is_sorted),
    ("sum", "list_sum", True, ("list",), "dyn", _sum),
    ("min", "list_min", True, ("list",), "dyn", _extreme("min", min)),
    ("max", "list_max", True, ("list",), "dyn", _extreme("max", max)),
    ("k8sListIndexOf", "list_a_index_of_int", True, ("list", "any"), "int", _index_of),
    ("k8sListLastIndexOf", "list_a_last_index_of_int", True, ("list", "any"), "int", _last_index_of),
    ("k8sString", "k8s_string_ip_cidr", False, ("obj",), "string", _string),
    ("find", "string_find_string", True, ("string", "string"), "string", _find),
    ("findAll", "string_find_all_string", True, ("string", "string"), "strings", _find_all),
    ("findAll", "string_find_all_string_int", True, ("string", "string", "int"), "strings", _find_all),
]
