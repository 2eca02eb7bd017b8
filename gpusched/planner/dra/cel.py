"""CEL device selectors in Kubernetes' environment, evaluated by a real CEL library (cel-expr-python: cel-cpp).

Which library: the CEL runtimes pip installs for Python 3.11, against the features Kubernetes enables (optional
syntax `.?`/`[?]`/optional.of/orValue; sets; lists slice/flatten/distinct/reverse/sort/sortBy/range; strings
format/quote/join; cel.bind; two-variable all/exists/existsOne/transformList/transformMap; cel-go-like type checking)
and on speed (one selector of two attribute reads over 2,000 devices):

| library (pip)                             | of 21 feature probes | with binding the device | device bound |
|-------------------------------------------|----------------------|-------------------------|--------------|
| cel-expr-python 0.1.3 (cel-cpp, Google's) | 20 (not transformMap)| 12 µs                   | 2 µs         |
| common-expression-language 0.10 (Rust)    | 1 (optional.of)      | 19 µs                   | 0.9 µs       |
| cel-bind 0.8.4 (cel-cpp, no extensions)   | 2 (format, cel.bind) | -                       | -            |
| python-cel 0.1.1 (cel-rust 0.9)           | 0; 2^63-1 + 1 is     | -                       | -            |
|                                           | false, 1/0 panics    |                         |              |
| cel-python 0.5 (pure Python)              | 0                    | 296 µs                  | -            |

cel-expr-python enables its extensions through an environment config (`extensions:` YAML), and its checker's
errors read like cel-go's (`ERROR: <input>:1:14: found no matching overload for ...`).

What the library lacks, and what this module does:
- Kubernetes' types (Quantity, Semver, IP, CIDR, URL) are one-key maps (cellib), their functions Python functions;
- an unknown attribute domain reads as an empty map (Kubernetes wraps the map with a default): a missing domain is
  added as {} for that evaluation and the expression re-run, so only a missing *attribute* is "no such key";
- `device` is a map to the checker, so a field that the Kubernetes device type lacks is refused here at compile time;
- runtime errors are reworded to cel-go's ("no such key: x", "integer overflow", "division by zero", conversions and
  regular expressions: celwords);
- format, substring and charAt run cel-go's strings extension (celstrings): the program runs them by names of ours,
  after the checks ran on the expression as written;
- no cost estimator and no runtime cost limit: celcheck runs the API server's checks (its types, its literal and
  format validators, its cost estimate: celcost) on the library's checked AST of the expression.
- list indexOf/lastIndexOf and string(ip)/string(cidr) have names the library's extensions own: where its checker
  finds no overload for them, the call is renamed to ours at the position it names, and compiled again.
Not available in this library: transformMap (the runtime lacks its insert function) and Kubernetes' format library.
A selector using one compiles (the API server accepts it) and fails on every device with "not modelled by gpusched:
...", so only the claims that use it are affected, and say why.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ...models.dra import DeviceAttribute, DeviceCapacity
from ..scheduler.framework import NEWEST, Version
from . import features
from .celast import KUBERNETES_NAMES
from .celcheck import InstantiationError, OutputTypeError, api_server_problems, blank_literals, member_words
from .celcost import COST_WORDS, MAX_EXPRESSION_LENGTH
from .cellib import DECLARATIONS, QUANTITY, SEMVER, LibraryError, make_quantity, make_semver, parse_k8s_quantity
from .cellib import type_name as _type_name
from .celstrings import RUNTIME_FUNCTIONS
from .celwords import go_words

__all__ = [
    "CelError",
    "Selector",
    "compile_selector",
    "check_cost",
    "extensions_config",
    "DeviceView",
    "device_view",
    "QUANTITY",
    "SEMVER",
    "parse_k8s_quantity",
]

# The extensions of Kubernetes' CEL environment, each with the version that introduced it
# (k8s.io/apiserver/pkg/cel/environment/base.go; bindings: k8s.io/dynamic-resource-allocation/cel/compile.go). An API
# server compiles new selectors with the extensions of its compatibility version (features.cel_compatibility): strings
# at version 2 (format, quote, join; no reverse); lists (ext.Lists(3): slice, flatten, distinct, reverse, sort, sortBy,
# lists.range) from 1.34, so a 1.34 API server refuses them; Kubernetes' own list functions (library.Lists v0:
# isSorted, sum, min, max, indexOf, lastIndexOf) always, its v1 (includes) only from 1.37, so in no release modelled.
_EXTENSIONS = (
    ("bindings", "", (1, 31)),
    ("lists", "", (1, 34)),
    ("optional", "", (1, 28)),
    ("sets", "", (1, 29)),
    ("strings", "2", (1, 29)),
    ("two-var-comprehensions", "", (1, 32)),
)
_ANY = ("string", "int", "uint", "double", "bool", "bytes", "obj", "list")
_DEVICE_FIELDS = ("driver", "attributes", "capacity", "allowMultipleAllocations")
_DEVICE_FIELD = re.compile(r"\bdevice\s*\.\s*\??\s*([A-Za-z_][A-Za-z0-9_]*)")
_MISSING_KEY = re.compile(r'^NOT_FOUND: Key not found in map : "?(.*?)"?$', re.S)
# cel-cpp's runtime words -> cel-go's (github.com/google/cel-go common/types/err.go, interpreter/attributes.go)
_RUNTIME_WORDS = [
    (re.compile(r"^No matching overloads found.*", re.S), "no such overload"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^double out of int64 range$"), "integer overflow"),
    (re.compile(r"^double out of uint64 range$"), "unsigned integer overflow"),
    (re.compile(r"^Index error: index=(-?\d+) size=(\d+)$"), r"index out of bounds: \1"),  # interpreter/attributes.go
]


# Kubernetes functions whose names the library's own extensions own (strings' indexOf, the standard `string`): where
# the checker finds no overload for a list or a Kubernetes type, the call is renamed to ours at that position.
_RENAMED = {theirs: ours for ours, theirs in KUBERNETES_NAMES.items()}
_OWNED = re.compile(
    r"ERROR: <input>:(\d+):(\d+): found no matching overload for '(indexOf|lastIndexOf|string)' applied to "
    r"'\((?:list\(|map\(string, string\)\))"
)
_FORMAT_LIBRARY = re.compile(r"undeclared reference to 'format'")
MAX_NESTING = 32  # deeper parentheses and brackets are refused before the library recurses into them
# cel-go's strings functions where the library's differ (celstrings), called by names of ours in the program run
_RUNTIME_CALL = re.compile(r"\.\s*(" + "|".join(RUNTIME_FUNCTIONS) + r")\s*\(")
_RUNTIME_DECLARATIONS = [
    (ours, overload, True, parameters, result, function)
    for ours, overloads, function in RUNTIME_FUNCTIONS.values()
    for overload, parameters, result in overloads
]
_TRANSFORM_MAP = re.compile(r"\.\s*(transformMap|transformMapEntry)\s*\(")


class CelError(Exception):
    """A selector that does not compile, or fails while it runs; the text is cel-go's where we know it."""


def _guarded(function: Any) -> Any:
    """A library function as the runtime calls it: a wrong argument kind is cel-go's "no such overload"."""

    def call(*args: Any) -> Any:
        try:
            return function(*args)
        except LibraryError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError):
            raise LibraryError("no such overload") from None

    return call


def _extensions(version: Version) -> tuple[tuple[str, str], ...]:
    """The extensions with which the release's API server compiles a new selector."""
    compatible = features.cel_compatibility(version)
    return tuple((name, level) for name, level, introduced in _EXTENSIONS if introduced <= compatible)


NEWEST_EXTENSIONS = _extensions(NEWEST)  # the runtime's, and the API server checks' (celcheck)


@cache
def extensions_config(extensions: tuple[tuple[str, str], ...] = NEWEST_EXTENSIONS) -> Any:
    """The environment config that names these extensions (cel-go's YAML form), for the runtime and the checks."""
    from cel_expr_python import cel

    listed = "".join(f'  - name: "{n}"\n' + (f"    version: {v}\n" if v else "") for n, v in extensions)
    return cel.NewEnvConfigFromYaml("extensions:\n" + listed)


def _env(extensions: tuple[tuple[str, str], ...] = NEWEST_EXTENSIONS) -> Any:
    """The CEL environment with these extensions, built on first use (importing the library at CLI start would cost
    every command). Devices are evaluated in the newest one: a release's own only decides what compiles."""
    from cel_expr_python import cel

    kinds = {
        "string": cel.Type.STRING,
        "bool": cel.Type.BOOL,
        "int": cel.Type.INT,
        "double": cel.Type.DOUBLE,
        "dyn": cel.Type.DYN,
        "uint": cel.Type.UINT,
        "bytes": cel.Type.BYTES,
        "obj": cel.Type.Map(cel.Type.STRING, cel.Type.STRING),
        "list": cel.Type.List(cel.Type.DYN),
        "strings": cel.Type.List(cel.Type.STRING),
        "query": cel.Type.Map(cel.Type.STRING, cel.Type.List(cel.Type.STRING)),
    }
    overloads: dict[str, list[Any]] = {}
    for name, overload_id, member, parameters, result, function in (*DECLARATIONS, *_RUNTIME_DECLARATIONS):
        for concrete in _ANY if "any" in parameters else ("",):
            if concrete == "list" and "same" in parameters:
                continue  # a list target is the list overload
            types = [kinds[concrete if p in ("any", "same") else p] for p in parameters]
            suffix = f"_{concrete}" if concrete else ""
            overloads.setdefault(name, []).append(
                cel.Overload(overload_id + suffix, kinds[result], types, is_member=member, impl=_guarded(function))
            )
    return cel.NewEnv(
        config=extensions_config(extensions),
        functions=[cel.FunctionDecl(name, group) for name, group in overloads.items()],
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
    )


# --- devices ------------------------------------------------------------------------------------------------------


class DeviceView:
    """`device` as a selector sees it; the activation is built once per device and shared by every selector."""

    __slots__ = ("key", "driver", "attributes", "capacity", "multiple", "_activation")

    def __init__(
        self,
        key: str,
        driver: str,
        attributes: dict[str, dict[str, Any]],
        capacity: dict[str, dict[str, Any]],
        multiple: bool = False,
    ):
        self.key, self.driver, self.attributes, self.capacity, self.multiple = (
            key,
            driver,
            attributes,
            capacity,
            multiple,
        )
        self._activation: Any = None

    def variable(self, extra: frozenset[str] = frozenset()) -> dict[str, Any]:
        empty: dict[str, dict[str, Any]] = {domain: {} for domain in extra}
        return {
            "driver": self.driver,
            "attributes": {**empty, **self.attributes} if extra else self.attributes,
            "capacity": {**empty, **self.capacity} if extra else self.capacity,
            "allowMultipleAllocations": self.multiple,
        }

    def activation(self, extra: frozenset[str] = frozenset()) -> Any:
        if extra:
            return _env().Activation({"device": self.variable(extra)})
        if self._activation is None:
            self._activation = _env().Activation({"device": self.variable()})
        return self._activation


def attribute_value(attribute: DeviceAttribute) -> Any:
    kind, value = attribute.value
    return make_semver(value) if kind == "version" else value


def quantity_value(capacity: DeviceCapacity) -> dict[str, str]:
    """A device capacity as the CEL Quantity value selectors compare."""
    return make_quantity(capacity.amount)


def _split(name: str, driver: str) -> tuple[str, str]:
    """An unprefixed name belongs to the driver's domain."""
    domain, _, ident = name.rpartition("/")
    return (domain or driver), ident


def device_view(
    key: str,
    driver: str,
    attributes: dict[str, DeviceAttribute],
    capacity: dict[str, DeviceCapacity],
    multiple: bool = False,
) -> DeviceView:
    attrs: dict[str, dict[str, Any]] = {}
    for name, attribute in attributes.items():
        domain, ident = _split(name, driver)
        attrs.setdefault(domain, {})[ident] = attribute_value(attribute)
    caps: dict[str, dict[str, Any]] = {}
    for name, amount in capacity.items():
        domain, ident = _split(name, driver)
        caps.setdefault(domain, {})[ident] = quantity_value(amount)
    return DeviceView(key, driver, attrs, caps, multiple)


# --- compile and evaluate -----------------------------------------------------------------------------------------


class Selector:
    """A compiled selector expression."""

    __slots__ = ("expression", "program", "missing")

    def __init__(self, expression: str, program: Any, missing: str = "") -> None:
        self.expression, self.program, self.missing = expression, program, missing

    def matches(self, device: DeviceView) -> bool:
        """True or False; any runtime error (a missing attribute, a non-bool result) raises CelError."""
        if self.missing:
            raise CelError(f"not modelled by gpusched: {self.missing} (the CEL library lacks it)")
        extra: frozenset[str] = frozenset()
        while True:
            try:
                result = self.program.eval(device.activation(extra))
            except RuntimeError as error:  # the library's iteration budget, where the estimate did not see it
                if "Iteration budget" not in str(error):
                    raise
                raise CelError(f"not modelled by gpusched: comprehension iterations {_BUDGET_WORDS}") from None
            value = result.value()
            if isinstance(value, bool):
                return value
            if result.type().name() != "ERROR":
                raise CelError(f"CEL result of type {_type_name(value)} could not be converted to bool")
            text = str(value)
            missing = _MISSING_KEY.match(text)
            if missing is None and _NON_MAP_SELECT.search(text):
                field = _failed_select(self.expression, device.variable(extra))
                raise CelError(f"no such key: {field}" if field else "no such key")
            if missing is None:
                raise CelError(_runtime_words(text))
            key = missing.group(1)
            if key in device.attributes or key in device.capacity or key in extra or key in _DEVICE_FIELDS:
                raise CelError(f"no such key: {key}")  # 1.37 adds a hint: search.py
            extra |= {key}  # an unknown domain: Kubernetes reads it as an empty map


_NON_MAP_SELECT = re.compile(r"Applying SELECT to non-message type")


def _failed_select(expression: str, device: dict[str, Any]) -> str:
    """The field a select asked of a value that is no map (a bool, a number): cel-go says `no such key: <field>`,
    cel-cpp names no field. The first select, in evaluation order, whose operand is an access path from `device`
    with constant keys and reads a non-map; else the first select on anything else (a call's result)."""
    from .celcheck import CheckError, checked

    try:
        root = checked(expression).root
    except CheckError:
        return ""
    fallback = ""

    def path(node: Any) -> tuple[bool, Any]:
        if node.kind == "ident" and node.name.startswith("device"):
            value: Any = {"device": device}
            for part in node.name.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            return True, value
        if node.kind == "select" and node.target is not None:
            known, value = path(node.target)
            return known, value.get(node.name) if known and isinstance(value, dict) else None
        if node.kind == "call" and node.name == "_[_]" and len(node.args) == 2 and node.args[1].kind == "const":
            known, value = path(node.args[0])
            key = node.args[1].value
            return known, value.get(key) if known and isinstance(value, dict) else None
        return False, None

    def walk(node: Any) -> str:
        nonlocal fallback
        for child in [*([node.target] if node.target is not None else []), *node.args, *node.parts.values()]:
            if found := walk(child):
                return found
        if node.kind == "select" and not node.test_only and node.target is not None:
            known, value = path(node.target)
            if known and value is not None and not isinstance(value, dict):
                return node.name
            if not known and not fallback:
                fallback = node.name
        return ""

    return walk(root) or fallback


def _runtime_words(text: str) -> str:
    text = re.sub(r"^[A-Z_]+: ", "", text)  # the status code cel-cpp puts first
    for pattern, words in _RUNTIME_WORDS:
        if pattern.match(text):
            return pattern.sub(words, text)
    return go_words(text)


def check_cost(expression: str) -> None:
    """Refuse a selector longer than the API server stores, or nested deeper than the library is given."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CelError(f"must be no more than {MAX_EXPRESSION_LENGTH} bytes long (got {len(expression)})")
    depth = deepest = 0
    for char in blank_literals(expression):
        depth += char in "([{"
        depth -= char in ")]}"
        deepest = max(deepest, depth)
    if deepest > MAX_NESTING:
        raise CelError(f"nested deeper than {MAX_NESTING} parentheses and brackets")


def compile_selector(expression: str, version: Version = NEWEST) -> Selector:
    """Compile once per expression, after pricing it (check_cost), as the release's API server compiles a new
    selector; CelError says why it does not compile, in cel-go's form: `ERROR: <input>:line:col: message`, then the
    line and a caret. `device.allowMultipleAllocations` exists only with DRAConsumableCapacity."""
    fields = _DEVICE_FIELDS if features.enabled("DRAConsumableCapacity", version) else _DEVICE_FIELDS[:-1]
    extensions = _extensions(version)
    if (fields, extensions) != (_DEVICE_FIELDS, NEWEST_EXTENSIONS):
        _compile(expression, fields, extensions)  # what this release refuses
    return _compile(expression, _DEVICE_FIELDS, NEWEST_EXTENSIONS)


@cache
def _compile(expression: str, fields: tuple[str, ...], extensions: tuple[tuple[str, str], ...]) -> Selector:
    check_cost(expression)
    code = blank_literals(expression)
    identity = list(range(len(expression) + 1))  # origin[i]: where source[i] was in the expression
    for field in _DEVICE_FIELD.finditer(code):
        if field.group(1) not in fields:
            at = code.index(".", field.start())  # the checker points at the select's dot
            error = f"ERROR: <input>:{_line_column(expression, at)}: undefined field '{field.group(1)}'"
            raise CelError(f"compilation failed: {_in_the_expression(error, expression, expression, identity)}")
    transform = _TRANSFORM_MAP.search(code)
    if transform:
        return Selector(expression, None, f"{transform.group(1)}()")
    source, origin = expression, identity
    for _ in range(8):  # each round renames what the checker found; a rename can expose another (nested calls)
        try:
            program = _env(extensions).compile(source)
        except RuntimeError as error:
            text = re.sub(r"^[A-Z_]+: ", "", str(error).strip())
            text = re.sub(r"\s*\[[A-Z_]+\]$", "", text)
        else:
            most = _api_server_checks(source, expression, origin)
            if most >= ITERATION_BUDGET:  # the API server runs it; the library gpusched evaluates with would stop
                return Selector(expression, None, f"up to {most} comprehension iterations, {_BUDGET_WORDS}")
            return Selector(expression, _with_cel_go_strings(source, program))
        renamed, origin = _rename_owned(source, text, origin)
        if renamed == source:
            break
        source = renamed
    if _FORMAT_LIBRARY.search(text):
        return Selector(expression, None, "Kubernetes' format library")
    problems, _, _ = api_server_problems(
        source, _constant_error
    )  # where the API server's types fail first, its checker says so
    if problems:
        text = _errors(source, problems)
    raise CelError(f"compilation failed: {_in_the_expression(text, source, expression, origin)}")


def _with_cel_go_strings(source: str, program: Any) -> Any:
    """The program, with each format, substring and charAt call running cel-go's (the checks ran on the source as
    written)."""
    calls = list(_RUNTIME_CALL.finditer(blank_literals(source)))
    for call in reversed(calls):
        source = source[: call.start(1)] + RUNTIME_FUNCTIONS[call.group(1)][0] + source[call.end(1) :]
    return _env().compile(source) if calls else program


def forget_compiled() -> None:
    """Drop every compiled selector, so that a benchmark compiles from cold."""
    _compile.cache_clear()


def _api_server_checks(source: str, expression: str, origin: list[int]) -> int:
    """What the API server refuses after its type check (celcheck), in its words; else the most comprehension
    iterations the expression can run."""
    try:
        problems, over_budget, most = api_server_problems(source, _constant_error)
    except (OutputTypeError, InstantiationError) as error:
        raise CelError(str(error)) from None
    if problems:
        raise CelError(
            f"compilation failed: {_in_the_expression(_errors(source, problems), source, expression, origin)}"
        )
    if over_budget:
        raise CelError(COST_WORDS)
    return most


# The CEL library (cel-cpp) stops an evaluation at its 10,000th comprehension iteration, all loops together, and
# gpusched cannot set that option; the API server has no such budget (its cost limit alone), so an expression
# within the cost limit that could run that many is "not modelled" (compiled, failing every device, saying why).
ITERATION_BUDGET = 10_000
_BUDGET_WORDS = f"past the {ITERATION_BUDGET - 1} the CEL library runs in one evaluation (the API server runs them)"


def _constant_error(text: str) -> str | None:
    """A constant expression's error, in cel-go's words, or None when it evaluates."""
    try:
        value = _env().compile(text).eval(data={"device": {}})
    except RuntimeError as error:
        if "Iteration budget" not in str(error):
            raise
        return None  # the API server evaluates it: no error it would report
    if value.type().name() != "ERROR":
        return None
    return go_words(str(value.value()))


def _errors(source: str, problems: list[tuple[int, str]]) -> str:
    return "\n".join(
        f"ERROR: <input>:{_line_column(source, at)}: {member_words(source, at, message)}" for at, message in problems
    )


def _line_column(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset)
    return f"{line + 1}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _offset(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(part) + 1 for part in lines[: line - 1]) + column - 1  # columns count from 1


def _rename_owned(source: str, errors: str, origin: list[int]) -> tuple[str, list[int]]:
    """The expression with each call the checker refused for want of our overload renamed to our function."""
    places = []
    for match in _OWNED.finditer(errors):
        end = _offset(source, int(match.group(1)), int(match.group(2)))  # the call's "("
        while end > 0 and source[end - 1].isspace():
            end -= 1
        start = end
        while start > 0 and (source[start - 1].isalnum() or source[start - 1] == "_"):
            start -= 1
        if source[start:end] == match.group(3):
            places.append((start, end, _RENAMED[match.group(3)]))
    for start, end, name in sorted(places, reverse=True):
        source = source[:start] + name + source[end:]
        origin = origin[:start] + [origin[start]] * len(name) + origin[end:]
    return source, origin


def _in_the_expression(errors: str, source: str, expression: str, origin: list[int]) -> str:
    """The checker's report on the renamed source, told of the expression as written (its lines, its columns)."""
    lines = expression.split("\n")
    found = []
    for entry in re.split(r"\n(?=ERROR: <input>:)", errors):
        head = re.match(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)", entry)
        if head is None:
            found.append(entry)
            continue
        where = origin[min(_offset(source, int(head.group(1)), int(head.group(2))), len(origin) - 1)]
        line = expression.count("\n", 0, where)
        column = where - sum(len(part) + 1 for part in lines[:line]) + 1
        found.append(f"ERROR: <input>:{line + 1}:{column}: {head.group(3)}\n | {lines[line]}\n | {'.' * (column - 1)}^")
    return "\n".join(found)
