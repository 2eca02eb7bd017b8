"""The API server's own checks of a DRA selector, run on the library's checked AST of it in the API server's types.

The environment that evaluates selectors (cel.py) sees `device` as a map of dyn, so that one Python value can be
bound per device. The API server declares it as an object (k8s.io/dynamic-resource-allocation/cel/compile.go,
the 1.37 device type with allowMultipleAllocations: DRAConsumableCapacity is on by default, DRAListTypeAttributes
off): `driver` a string, `attributes` a map of maps of google.protobuf.Any, `capacity` a map of maps of Quantity,
and Kubernetes' types are their own (kubernetes.Quantity, kubernetes.Semver, kubernetes.URL, net.IP, net.CIDR).
This module checks the expression a second time in a check-only environment declared that way (the fields as
qualified variables `device.driver`, ...; nothing here is ever evaluated): what it refuses, the API server's
checker refuses (a comprehension over an attribute value, `device.driver + 1`). It then runs over the checked AST
what cel-go adds after type checking:
- the homogeneous aggregate literal validator (cel-go cel/validator.go; the API server's base environment enables
  it): every element of a list literal, every key and value of a map literal, has the first one's type, except
  inside the arguments of `format`: `[attr, 6]` is refused ("expected type 'any' but found 'int'");
- the strings extension's format validator (ext/formatting.go, strings version 2): a literal format string with a
  list literal of arguments is checked clause by clause against the arguments' types: `'%d'.format([attr])` is
  refused, an attribute being google.protobuf.Any;
- `<list(A)>.indexOf(A)`: the library has no type parameters to declare Kubernetes' list functions with;
- the duration, timestamp and regex literal validators (cel.ASTValidators in the API server's base environment);
- the output type (compile.go's validateOutputType: bool, or the attribute type);
- what the program planner evaluates when it builds the program: constant conversions (int('x'), uint(-1), with
  Go's number parsing) and literal regular expressions (matches, find, findAll; Go's regexp words);
- the cost estimate (celcost), refused above the API server's limit with its words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from .celast import KUBERNETES_NAMES, CelType, Checked, Node, read_checked
from .celcost import MAX_COST, estimate, iterations

__all__ = [
    "CheckError",
    "blank_literals",
    "InstantiationError",
    "OutputTypeError",
    "api_server_problems",
    "checked",
    "member_words",
]

# Kubernetes' functions as the API server declares them (k8s.io/apiserver/pkg/cel/library): name, overload id,
# member, parameter types, result type. Q, V, U, I, C are Kubernetes' types; list functions come per element type.
_K8S = {"Q": "kubernetes.Quantity", "V": "kubernetes.Semver", "U": "kubernetes.URL", "I": "net.IP", "C": "net.CIDR"}
_COMPARABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
_SUMMABLE = ("int", "uint", "double", "duration")
_DECLARED: list[tuple[str, str, bool, tuple[str, ...], str]] = [
    ("quantity", "string_to_quantity", False, ("string",), "Q"),
    ("isQuantity", "is_quantity_string", False, ("string",), "bool"),
    ("sign", "quantity_sign", False, ("Q",), "int"),
    ("asInteger", "quantity_get_int", True, ("Q",), "int"),
    ("isInteger", "quantity_is_integer", True, ("Q",), "bool"),
    ("asApproximateFloat", "quantity_get_float", True, ("Q",), "double"),
    ("add", "quantity_add", True, ("Q", "Q"), "Q"),
    ("add", "quantity_add_int", True, ("Q", "int"), "Q"),
    ("sub", "quantity_sub", True, ("Q", "Q"), "Q"),
    ("sub", "quantity_sub_int", True, ("Q", "int"), "Q"),
    ("isGreaterThan", "quantity_is_greater_than", True, ("Q", "Q"), "bool"),
    ("isLessThan", "quantity_is_less_than", True, ("Q", "Q"), "bool"),
    ("compareTo", "quantity_compare_to", True, ("Q", "Q"), "int"),
    ("semver", "string_to_semver", False, ("string",), "V"),
    ("semver", "string_bool_to_semver", False, ("string", "bool"), "V"),
    ("isSemver", "is_semver_string", False, ("string",), "bool"),
    ("isSemver", "is_semver_string_bool", False, ("string", "bool"), "bool"),
    ("major", "semver_major", True, ("V",), "int"),
    ("minor", "semver_minor", True, ("V",), "int"),
    ("patch", "semver_patch", True, ("V",), "int"),
    ("isGreaterThan", "semver_is_greater_than", True, ("V", "V"), "bool"),
    ("isLessThan", "semver_is_less_than", True, ("V", "V"), "bool"),
    ("compareTo", "semver_compare_to", True, ("V", "V"), "int"),
    ("ip", "string_to_ip", False, ("string",), "I"),
    ("ip", "cidr_ip", True, ("C",), "I"),
    ("isIP", "is_ip", False, ("string",), "bool"),
    ("ip.isCanonical", "ip_is_canonical", False, ("string",), "bool"),
    ("family", "ip_family", True, ("I",), "int"),
    ("isUnspecified", "ip_is_unspecified", True, ("I",), "bool"),
    ("isLoopback", "ip_is_loopback", True, ("I",), "bool"),
    ("isLinkLocalMulticast", "ip_is_link_local_multicast", True, ("I",), "bool"),
    ("isLinkLocalUnicast", "ip_is_link_local_unicast", True, ("I",), "bool"),
    ("isGlobalUnicast", "ip_is_global_unicast", True, ("I",), "bool"),
    ("cidr", "string_to_cidr", False, ("string",), "C"),
    ("isCIDR", "is_cidr", False, ("string",), "bool"),
    ("containsIP", "cidr_contains_ip_string", True, ("C", "string"), "bool"),
    ("containsIP", "cidr_contains_ip_ip", True, ("C", "I"), "bool"),
    ("containsCIDR", "cidr_contains_cidr_string", True, ("C", "string"), "bool"),
    ("containsCIDR", "cidr_contains_cidr", True, ("C", "C"), "bool"),
    ("masked", "cidr_masked", True, ("C",), "C"),
    ("prefixLength", "cidr_prefix_length", True, ("C",), "int"),
    ("k8sString", "ip_to_string", False, ("I",), "string"),  # `string`, renamed as in cel.py
    ("k8sString", "cidr_to_string", False, ("C",), "string"),
    ("url", "string_to_url", False, ("string",), "U"),
    ("isURL", "is_url_string", False, ("string",), "bool"),
    ("getScheme", "url_get_scheme", True, ("U",), "string"),
    ("getHost", "url_get_host", True, ("U",), "string"),
    ("getHostname", "url_get_hostname", True, ("U",), "string"),
    ("getPort", "url_get_port", True, ("U",), "string"),
    ("getEscapedPath", "url_get_escaped_path", True, ("U",), "string"),
    ("getQuery", "url_get_query", True, ("U",), "query"),
    ("find", "string_find_string", True, ("string", "string"), "string"),
    ("findAll", "string_find_all_string", True, ("string", "string"), "strings"),
    ("findAll", "string_find_all_string_int", True, ("string", "string", "int"), "strings"),
    ("k8sListIndexOf", "list_a_index_of_int", True, ("list", "dyn"), "int"),  # `indexOf` on a list, renamed
    ("k8sListLastIndexOf", "list_a_last_index_of_int", True, ("list", "dyn"), "int"),
    *[("isSorted", f"list_{t}_is_sorted_bool", True, (f"list<{t}>",), "bool") for t in _COMPARABLE],
    *[("sum", f"list_{t}_sum_{t}", True, (f"list<{t}>",), t) for t in _SUMMABLE],
    *[("max", f"list_{t}_max_{t}", True, (f"list<{t}>",), t) for t in _COMPARABLE],
    *[("min", f"list_{t}_min_{t}", True, (f"list<{t}>",), t) for t in _COMPARABLE],
]


def _unused(*_: Any) -> Any:
    raise AssertionError("the check-only environment is never evaluated")


@cache
def _check_env() -> Any:
    from cel_expr_python import cel

    from .cel import extensions_config

    def kind(code: str) -> Any:
        simple = {"string": cel.Type.STRING, "int": cel.Type.INT, "uint": cel.Type.UINT, "bool": cel.Type.BOOL,
                  "double": cel.Type.DOUBLE, "bytes": cel.Type.BYTES, "dyn": cel.Type.DYN,
                  "duration": cel.Type.DURATION, "timestamp": cel.Type.TIMESTAMP}  # fmt: skip
        if code in simple:
            return simple[code]
        if code in _K8S:
            return cel.Type.AbstractType(_K8S[code])
        if code.startswith("list<"):
            return cel.Type.List(kind(code[5:-1]))
        return {
            "list": cel.Type.List(cel.Type.DYN),
            "strings": cel.Type.List(cel.Type.STRING),
            "query": cel.Type.Map(cel.Type.STRING, cel.Type.List(cel.Type.STRING)),
        }[code]

    overloads: dict[str, list[Any]] = {}
    for name, overload_id, member, parameters, result in _DECLARED:
        types = [kind(p) for p in parameters]
        overloads.setdefault(name, []).append(
            cel.Overload(overload_id, kind(result), types, is_member=member, impl=_unused)
        )
        if not member:  # a twin, so that `q.sign()` checks and is refused in cel-go's words (_global_as_member)
            twin = overload_id + _AS_MEMBER
            overloads[name].append(cel.Overload(twin, kind(result), types, is_member=True, impl=_unused))
    attribute = cel.Type("google.protobuf.Any")
    variables = {
        "device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN),  # `device` alone; its fields resolve below
        "device.driver": cel.Type.STRING,
        "device.allowMultipleAllocations": cel.Type.BOOL,
        "device.attributes": cel.Type.Map(cel.Type.STRING, cel.Type.Map(cel.Type.STRING, attribute)),
        "device.capacity": cel.Type.Map(cel.Type.STRING, cel.Type.Map(cel.Type.STRING, kind("Q"))),
    }
    return cel.NewEnv(
        config=extensions_config(),
        functions=[cel.FunctionDecl(name, group) for name, group in overloads.items()],
        variables=variables,
    )


def checked(source: str) -> Checked:
    """The source as the API server's types check it; CheckError with the checker's report where they refuse it."""
    try:
        return read_checked(_check_env().compile(_presence_tests_on_device(source)).serialize())
    except RuntimeError as error:
        raise CheckError(str(error)) from None


def _presence_tests_on_device(source: str) -> str:
    """The library's checker turns `has(device.driver)` into the identifier `device.driver` it declares, a string:
    spelled `has(device.Driver)` it tests a field of `device` (a map here), a bool at the same cost and place."""
    code = blank_literals(source)
    for found in _PRESENCE.finditer(code):
        at = found.start(1)
        source = source[:at] + source[at].upper() + source[at + 1 :]
    return source


class CheckError(Exception):
    """The check-only environment refuses the source: the API server's checker would."""


STRING_LITERAL = re.compile(r"""[rRbB]{0,2}('''.*?'''|\"\"\"(?:.|\n)*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")


def blank_literals(text: str) -> str:
    """The text with each string literal's content blanked, every offset kept."""
    return STRING_LITERAL.sub(lambda literal: '"' + " " * (len(literal.group()) - 2) + '"', text)


_PRESENCE = re.compile(r"\bhas\s*\(\s*device\s*\.\s*(driver|attributes|capacity|allowMultipleAllocations)\s*\)")
# the library's words for what cel-go's checker says otherwise
_CHECKER_WORDS = [("cannot be the range of a comprehension", "cannot be range of a comprehension")]
_ERROR_HEAD = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")


Evaluate = Callable[[str], "str | None"]  # a constant expression's error in cel-go's words, None if it has none


def api_server_problems(source: str, evaluate: Evaluate) -> tuple[list[tuple[int, str]], bool, int]:
    """(offset, message) of each check the API server refuses the source for, whether its cost is over the
    limit, and the most comprehension iterations it can run (celcost.iterations); offsets are into `source`.
    `evaluate` runs a constant expression (the library evaluates it)."""
    try:
        tree = checked(source)
    except CheckError as error:
        lines = source.split("\n")
        found = []
        for line, column, message in _ERROR_HEAD.findall(str(error)):
            for theirs, ours in _CHECKER_WORDS:
                message = message.replace(theirs, ours)
            at = sum(len(part) + 1 for part in lines[: int(line) - 1]) + int(column) - 1
            found.append((at, member_words(source, at, message)))
        return found, False, 0
    nodes = _nodes(tree.root)
    problems = _homogeneous(tree, nodes) + _formats(tree, nodes) + _list_searches(tree, nodes)
    problems += _global_as_member(tree, nodes)
    problems += _literal_arguments(tree, nodes, evaluate)
    if problems:
        return sorted(problems), False, 0
    result = tree.type(tree.root)
    if result.kind not in ("bool", "any"):
        raise OutputTypeError(f"must evaluate to bool or the unknown type, not {result.spelled()}")
    _instantiate(tree.root, evaluate)
    over = estimate(tree) > MAX_COST
    return [], over, 0 if over else iterations(tree)


class InstantiationError(Exception):
    """The API server's program planner evaluates constant conversions and compiles literal regular expressions
    when it builds the program (cel-go interpreter/decorators.go, cel.OptOptimize; the Kubernetes regex library):
    one that fails refuses the selector as "program instantiation failed"."""


class OutputTypeError(Exception):
    """A selector must be a bool, or an attribute value (compile.go's validateOutputType)."""


_NO_OVERLOAD = re.compile(r"^(found no matching overload for '[^']*' applied to ')\((.*)\)'$")


def member_words(source: str, at: int, message: str) -> str:
    """cel-go writes a member call's argument types as `target.(args)`, the library as `(target, args)`: the call
    at `at` (its opening parenthesis) is a member call when a dot comes before its name."""
    match = _NO_OVERLOAD.match(message)
    if match is None or not source.startswith("(", at):  # operators are reported where their symbol is
        return message
    name, start = match.group(1).split("'")[1], at
    while start > 0 and source[start - 1].isspace():
        start -= 1
    start -= len(name)
    if source[start : start + len(name)] != name:  # sets.contains, strings.quote, ...: global functions
        return message
    while start > 0 and source[start - 1].isspace():
        start -= 1
    if start == 0 or source[start - 1] != ".":
        return message
    types, depth, cut = match.group(2), 0, -1
    for index, char in enumerate(types):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            cut = index
            break
    target, rest = (types, "") if cut < 0 else (types[:cut], types[cut + 1 :].strip())
    return f"{match.group(1)}{target}.({rest})'"


def _nodes(root: Node) -> list[tuple[Node, bool]]:
    """Every node with whether it lies inside the arguments of a `format` call."""
    found, stack = [], [(root, False)]
    while stack:
        node, inside_format = stack.pop()
        found.append((node, inside_format))
        if node.target is not None:
            stack.append((node.target, inside_format))
        exempt = inside_format or (node.kind == "call" and node.name == "format")
        stack.extend((child, exempt) for child in [*node.args, *node.parts.values()])
    return found


def _equivalent(a: CelType, b: CelType) -> bool:
    """cel-go's Type.IsEquivalentType: same kind, name and parameters (type parameters by kind only)."""
    if a.kind != b.kind or len(a.params) != len(b.params):
        return False
    if a.kind != "param" and a.name != b.name:
        return False
    return all(_equivalent(x, y) for x, y in zip(a.params, b.params, strict=True))


def _element(tree: Checked, node: Node, optional: bool) -> CelType:
    kind = tree.type(node)
    return kind.params[0] if optional and kind.params else kind


def _homogeneous(tree: Checked, nodes: list[tuple[Node, bool]]) -> list[tuple[int, str]]:
    problems = []
    for node, exempt in nodes:
        if exempt or node.kind not in ("list", "map"):
            continue
        if node.kind == "list":
            columns = [[(e, _element(tree, e, i in node.optional)) for i, e in enumerate(node.args)]]
        else:
            keys, values = node.args[0::2], node.args[1::2]
            columns = [[(k, tree.type(k)) for k in keys],
                       [(v, _element(tree, v, i in node.optional)) for i, v in enumerate(values)]]  # fmt: skip
        problems += _mismatches(tree, node, columns)
    return problems


def _mismatches(tree: Checked, node: Node, columns: list[list[tuple[Node, CelType]]]) -> list[tuple[int, str]]:
    """A list stops at its first mismatch; a map reports each mismatching key and value."""
    found = []
    if node.kind == "list":
        first = columns[0][0][1] if columns[0] else None
        for element, kind in columns[0][1:]:
            if first is not None and not _equivalent(first, kind):
                found.append((tree.positions.get(element.id, 0), _expected(first, kind)))
                break
        return found
    keys, values = columns
    for (key, key_type), (value, value_type) in list(zip(keys, values, strict=True))[1:]:
        if not _equivalent(keys[0][1], key_type):
            found.append((tree.positions.get(key.id, 0), _expected(keys[0][1], key_type)))
        if not _equivalent(values[0][1], value_type):
            found.append((tree.positions.get(value.id, 0), _expected(values[0][1], value_type)))
    return found


def _expected(expected: CelType, found: CelType) -> str:
    return f"expected type '{expected}' but found '{found}'"


# --- indexOf and lastIndexOf on a list: <list(A)>.indexOf(A), A one type parameter -------------------------


def _assignable(a: CelType, b: CelType) -> bool:
    """cel-go's checker: dyn, google.protobuf.Any, errors and type parameters match anything; containers and
    Kubernetes' types match by name and parameters; the rest by kind."""
    if {a.kind, b.kind} & {"dyn", "any", "error", "param"}:
        return True
    if "null" in (a.kind, b.kind):
        other = b if a.kind == "null" else a
        return other.kind in ("null", "opaque", "message", "timestamp", "duration", "wrapper")
    if a.kind != b.kind or a.name != b.name or len(a.params) != len(b.params):
        return False
    return all(_assignable(x, y) for x, y in zip(a.params, b.params, strict=True))


def _list_searches(tree: Checked, nodes: list[tuple[Node, bool]]) -> list[tuple[int, str]]:
    problems = []
    for node, _ in nodes:
        if node.kind != "call" or node.name not in ("k8sListIndexOf", "k8sListLastIndexOf") or node.target is None:
            continue
        listed, sought = tree.type(node.target), [tree.type(arg) for arg in node.args]
        if listed.kind == "list" and len(sought) == 1 and not _assignable(listed.params[0], sought[0]):
            name = KUBERNETES_NAMES[node.name]
            problems.append((tree.positions.get(node.id, 0),
                             f"found no matching overload for '{name}' applied to '{listed}.({sought[0]})'"))  # fmt: skip
    return problems


_AS_MEMBER = "_as_member"


def _global_as_member(tree: Checked, nodes: list[tuple[Node, bool]]) -> list[tuple[int, str]]:
    """A Kubernetes function called as a member of its argument (`quantity('1').sign()`): cel-go finds no
    overload for the call; the library would only say the name is undeclared."""
    problems = []
    for node, _ in nodes:
        chosen = tree.overloads.get(node.id, [])
        if node.kind == "call" and node.target is not None and chosen and all(o.endswith(_AS_MEMBER) for o in chosen):
            types = ", ".join(str(tree.type(arg)) for arg in node.args)
            name = KUBERNETES_NAMES.get(node.name, node.name)
            problems.append((tree.positions.get(node.id, 0),
                             f"found no matching overload for '{name}' applied to '{tree.type(node.target)}.({types})'"))  # fmt: skip
    return problems


# --- literal arguments: checked after the type check, then evaluated when the program is built ----------------

_CONVERSIONS = ("bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint")
_REGEX_CALLS = ("matches", "find", "findAll")  # the pattern follows the string, as target or first argument


def _literal_arguments(tree: Checked, nodes: list[tuple[Node, bool]], evaluate: Evaluate) -> list[tuple[int, str]]:
    """cel-go's duration, timestamp and regex literal validators: the first argument of duration(), timestamp()
    and matches() (for `s.matches(p)` the pattern, for `matches(s, p)` the string), when a literal, must work."""
    problems = []
    for node, _ in nodes:
        if node.kind != "call" or node.name not in ("duration", "timestamp", "matches") or not node.args:
            continue
        literal = node.args[0]
        if literal.kind != "const":
            continue
        written = _literal(literal)
        if node.name == "duration":
            written = (
                written.replace("\u00b5", "u").replace("\u03bc", "u").replace("µ", "u").replace("μ", "u")
            )  # Go's µs
        probe = f"''.matches({written})" if node.name == "matches" else f"{node.name}({written})"
        if evaluate(probe) is not None:
            problems.append((tree.positions.get(literal.id, 0), f"invalid {node.name} argument"))
    return problems


def _instantiate(node: Node, evaluate: Evaluate) -> bool:
    """Whether the node is a constant once the planner has folded it; InstantiationError where folding fails."""
    parts = ([node.target] if node.target is not None else []) + node.args + list(node.parts.values())
    constant = [_instantiate(part, evaluate) for part in parts]
    if node.kind == "const":
        return True
    if node.kind in ("list", "map"):
        return all(constant)
    if node.kind != "call":
        return False
    if node.name in _REGEX_CALLS:
        whole = [node.target, *node.args] if node.target is not None else node.args
        if len(whole) > 1 and whole[1].kind == "const" and whole[1].name == "string":
            error = evaluate(f"''.matches({_literal(whole[1])})")
            if error is not None:
                raise InstantiationError(f"program instantiation failed: {error}")
    if node.name in _CONVERSIONS and node.target is None and len(node.args) == 1 and constant[0]:
        literal = node.args[0]
        if node.name in _GO_PARSERS and literal.kind == "const" and literal.name == "string":
            error = _go_number(node.name, str(literal.value))
        else:
            error = evaluate(_go_micro(_unparsed(node)) if node.name == "duration" else _unparsed(node))
        if error is not None:
            raise InstantiationError(f"program instantiation failed: {error}")
        return True
    return False


_GO_PARSERS = {
    "int": re.compile(r"[+-]?[0-9]+"),  # strconv.ParseInt(s, 10, 64)
    "uint": re.compile(r"[0-9]+"),  # strconv.ParseUint(s, 10, 64)
    "double": re.compile(  # strconv.ParseFloat(s, 64): decimal, hexadecimal with a p exponent, inf, nan
        r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
        r"[pP][+-]?[0-9]+|(?i:inf|infinity|nan))"
    ),
}
_BOUNDS = {"int": (-(2**63), 2**63 - 1), "uint": (0, 2**64 - 1)}


def _go_number(kind: str, text: str) -> str | None:
    """int(), uint() and double() of a string literal parse it as Go's strconv does (the library's parser also
    takes surrounding spaces, and gives infinity for 1e400): the conversion error, or None."""
    refused = f"type conversion error from 'string' to '{kind}'"
    if not _GO_PARSERS[kind].fullmatch(text):
        return refused
    if kind == "double":
        value = float.fromhex(text) if "x" in text.lower() else float(text)
        return refused if math.isinf(value) and "inf" not in text.lower() else None
    low, high = _BOUNDS[kind]
    return None if low <= int(text) <= high else refused


def _go_micro(text: str) -> str:
    """Go's durations take µs and μs for microseconds; the library's only us."""
    return text.replace("µ", "u").replace("μ", "u")


def _unparsed(node: Node) -> str:
    """A constant subexpression (literals, list and map literals of them, conversions) written back as CEL."""
    if node.kind == "const":
        return _literal(node)
    if node.kind == "list":
        return "[" + ", ".join(_unparsed(e) for e in node.args) + "]"
    if node.kind == "map":
        pairs = zip(node.args[0::2], node.args[1::2], strict=True)
        return "{" + ", ".join(f"{_unparsed(k)}: {_unparsed(v)}" for k, v in pairs) + "}"
    return f"{node.name}({', '.join(_unparsed(a) for a in node.args)})"


def _literal(node: Node) -> str:
    value = node.value
    if node.name == "string":
        assert isinstance(value, str)
        escaped = "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" if ord(c) < 0x10000
                          else f"\\U{ord(c):08x}" for c in value)  # fmt: skip
        return f'"{escaped}"'
    if node.name == "bytes":
        assert isinstance(value, bytes)
        return 'b"' + "".join(f"\\x{b:02x}" for b in value) + '"'
    if node.name == "uint":
        return f"{value}u"
    if node.name == "bool":
        return "true" if value else "false"
    if node.name == "null":
        return "null"
    return repr(value)


# --- the format validator ---------------------------------------------------------------------------------------

_CLAUSE_KINDS = {
    "d": (("int", "uint"), "decimal clause can only be used on integers"),
    "f": (("double", "string"), "fixed-point clause can only be used on doubles"),
    "e": (("double", "string"), "scientific clause can only be used on doubles"),
    "b": (("int", "uint", "bool"), "only integers and bools can be formatted as binary"),
    "x": (("int", "uint", "string", "bytes"), "only integers, byte buffers, and strings can be formatted as hex"),
    "X": (("int", "uint", "string", "bytes"), "only integers, byte buffers, and strings can be formatted as hex"),
    "o": (("int", "uint"), "octal clause can only be used on integers"),
}
_STRING_KINDS = ("list", "map", "int", "uint", "double", "bool", "string", "timestamp", "bytes", "duration", "type",
                 "null")  # fmt: skip
_STRING_CLAUSE = (
    "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, "
    "and timestamps"
)


def _formats(tree: Checked, nodes: list[tuple[Node, bool]]) -> list[tuple[int, str]]:
    problems = []
    for node, _ in nodes:
        if not (node.kind == "call" and node.name == "format" and node.target is not None and len(node.args) == 1):
            continue
        if node.target.kind != "const" or not isinstance(node.target.value, str) or node.args[0].kind != "list":
            continue
        if tree.overloads.get(node.id) and "string_format" not in tree.overloads[node.id]:
            continue
        problem = _format_problem(tree, node.target.value, node.args[0].args)
        if problem:
            where, message = problem
            problems.append((tree.positions.get(where.id if where else node.id, 0), message))
    return problems


def _format_problem(tree: Checked, text: str, args: list[Node]) -> tuple[Node | None, str] | None:
    """The first clause of the format string whose argument has the wrong type (cel-go's parseFormatString)."""
    i = used = 0
    while i < len(text):
        if text[i] != "%":
            i += 1
            continue
        if text[i + 1 : i + 2] == "%":
            i += 2
            continue
        used += 1
        if i + 1 >= len(text):
            return None, "unexpected end of string"
        if used > len(args):
            return None, f"index {used - 1} out of range"
        verb_at, problem = _precision_end(text, i + 1)
        if problem:
            return None, f"could not parse formatting clause: error while parsing precision: {problem}"
        verb, arg = text[verb_at], args[used - 1]
        if verb == "s":
            bad = _string_clause_bad(tree, arg)
            if bad is not None:
                return bad, f"error during formatting: {_STRING_CLAUSE}, was given {tree.type(bad).type_name}"
        elif verb in _CLAUSE_KINDS:
            kinds, words = _CLAUSE_KINDS[verb]
            kind = tree.type(arg)
            if kind.kind != "dyn" and kind.kind not in kinds:
                return arg, f"error during formatting: {words}, was given {kind.type_name}"
        else:
            return None, f'could not parse formatting clause: unrecognized formatting clause "{verb}"'
        i = verb_at + 1
    if len(args) > used:
        return None, f"too many arguments supplied to string.format (expected {used}, got {len(args)})"
    return None


def _precision_end(text: str, at: int) -> tuple[int, str]:
    """Where the verb of a clause is, past a `.digits` precision (cel-go's parsePrecision), or why it is not."""
    if text[at] != ".":
        return at, ""
    end = at + 1
    while True:
        if end >= len(text):
            return end, "could not find end of precision specifier"
        if not "0" <= text[end] <= "9":
            break
        end += 1
    digits = text[at + 1 : end]
    if not digits:
        return end, 'error while converting precision to integer: strconv.Atoi: parsing "": invalid syntax'
    if int(digits) >= 2**63:
        return end, f'error while converting precision to integer: strconv.Atoi: parsing "{digits}": value out of range'
    return end, ""


def _string_clause_bad(tree: Checked, arg: Node) -> Node | None:
    """The argument (or, inside a list or map literal, the element) that `%s` cannot format."""
    kind = tree.type(arg)
    if kind.kind != "dyn" and kind.kind not in _STRING_KINDS:
        return arg
    for child in arg.args if arg.kind in ("list", "map") else ():
        bad = _string_clause_bad(tree, child)
        if bad is not None:
            return bad
    return None
