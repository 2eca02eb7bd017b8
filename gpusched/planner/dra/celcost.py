"""The API server's static cost estimate of a DRA selector, over its checked AST (celast, typed by celcheck).

A port of what decides the estimate there, in this one place:
- cel-go's estimator (checker/cost.go): a cost range and a size range per node; constants 0, identifiers and
  selects on maps and objects 1, list literals 10, map literals 30; a comprehension costs its range's size times
  its condition and step; unsized strings and lists are between 0 and 2^64-1, and costs saturate there; the
  built-in overloads it prices (string +, ==, <, contains, matches, startsWith, in, format, ...), the union of the
  costs of every overload the checker left possible;
- the overload estimators of the extensions the API server enables: lists version 3 (slice, flatten, range,
  reverse, distinct, sort, sortBy) and sets; the strings extension is at version 2, before it had any;
- Kubernetes' estimator (k8s.io/apiserver/pkg/cel/library/cost.go), by function name: the strings functions
  (split, replace, join, substring, ...), the list functions, regex find/findAll, url, ip, cidr, quantity, semver;
- the DRA size estimator (k8s.io/dynamic-resource-allocation/cel/compile.go): through `device` the sizes are known
  (a driver name 63 characters, 32 domains of 32 attributes or capacities each, an attribute value 64 elements).
An expression is refused when the estimate's maximum exceeds MAX_COST (resource.k8s.io CELSelectorExpressionMaxCost);
the API server's words are "too complex, exceeds cost limit". The runtime cost limit is the same number, and an
accepted expression's actual cost never exceeds its estimate, so it is not checked again while evaluating.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .celast import KUBERNETES_NAMES, CelType, Checked, Node

__all__ = ["MAX_COST", "MAX_EXPRESSION_LENGTH", "COST_WORDS", "Range", "estimate", "iterations"]

MAX_EXPRESSION_LENGTH = 10 * 1024  # resource.k8s.io CELSelectorExpressionMaxLength
MAX_COST = 1_000_000  # resource.k8s.io CELSelectorExpressionMaxCost
COST_WORDS = "too complex, exceeds cost limit"

_TOP = 2**64 - 1
_STRING_FACTOR = 0.1  # cel-go common.StringTraversalCostFactor
_REGEX_FACTOR = 0.25  # common.RegexStringLengthCostFactor
_ACCUMULATORS = ("@result", "@__result__")
_SCALARS = ("bool", "double", "duration", "int", "timestamp", "uint")


@dataclass(frozen=True)
class Range:
    """A cost or size range; every operation saturates at 2^64-1 as cel-go's uint64 arithmetic does."""

    low: int
    high: int

    def __add__(self, other: Range) -> Range:
        return Range(min(self.low + other.low, _TOP), min(self.high + other.high, _TOP))

    def __mul__(self, other: Range) -> Range:
        return Range(min(self.low * other.low, _TOP), min(self.high * other.high, _TOP))

    def scaled(self, factor: float) -> Range:
        return Range(_scaled(self.low, factor), _scaled(self.high, factor))

    def union(self, other: Range) -> Range:
        return Range(min(self.low, other.low), max(self.high, other.high))


def _scaled(value: int, factor: float) -> int:
    """cel-go's multiplyByCostFactor: the product rounded up, in float64."""
    x = float(value)
    if x > 0 and factor > 0 and x > _TOP / factor:
        return _TOP
    product = math.ceil(x * factor)
    return _TOP if product >= 2**64 else int(product)


def _fixed(value: int) -> Range:
    return Range(value, value)


UNKNOWN = Range(0, _TOP)
ONE = _fixed(1)


# --- the DRA size estimator: the declared bounds of what `device` holds --------------------------------------


@dataclass(frozen=True)
class _Declared:
    most: int
    fields: tuple[tuple[str, _Declared], ...] = ()
    key: _Declared | None = None
    element: _Declared | None = None


_ATTRIBUTE = _Declared(64)  # DeviceAttributeMaxValueLength
_ID, _DOMAIN = _Declared(32), _Declared(63)  # DeviceMaxIDLength, DeviceMaxDomainLength
_DEVICE = _Declared(
    0,
    (
        ("driver", _Declared(63)),
        ("allowMultipleAllocations", _Declared(1)),
        ("attributes", _Declared(32, key=_DOMAIN, element=_Declared(32, key=_ID, element=_ATTRIBUTE))),
        ("capacity", _Declared(32, key=_DOMAIN, element=_Declared(32, key=_ID, element=_Declared(0)))),
    ),
)


def _declared_size(path: tuple[str, ...]) -> Range | None:
    if not path or path[0] != "device":
        return None
    node = _DEVICE
    for step in path[1:]:
        if step in ("@items", "@values"):
            found = node.element
        elif step == "@keys":
            found = node.key
        else:
            # any name in an attribute map is an attribute (compile.go's sizeEstimator)
            found = dict(node.fields).get(step) or (_ATTRIBUTE if node.element is _ATTRIBUTE else None)
        if found is None:
            return None
        node = found
    return Range(0, node.most)


# --- the estimator --------------------------------------------------------------------------------------------


@dataclass
class _Entries:
    """The sizes of a container's keys (indices) and values, where known."""

    container: str
    key: Range
    value: Range

    def union(self, other: _Entries | None) -> _Entries | None:
        if other is None:
            return None
        return _Entries(self.container, self.key.union(other.key), self.value.union(other.value))


@dataclass
class _Local:
    path: tuple[str, ...]
    size: Range | None
    entries: _Entries | None


@dataclass
class _Operand:
    """cel-go's AstNode: what a function's estimator knows of an argument."""

    path: tuple[str, ...]
    type: CelType
    node: Node | None
    size: Range | None


def estimate(tree: Checked) -> int:
    """The maximum of the API server's cost estimate of the checked expression."""
    return _Coster(tree).cost(tree.root).high


def iterations(tree: Checked) -> int:
    """The most comprehension iterations one evaluation can run (every loop run to its range's end), from the
    range sizes the estimator knows: what the CEL runtime gpusched evaluates with counts against its budget."""
    coster = _Coster(tree)
    coster.cost(tree.root)

    def walk(node: Node) -> int:
        if node.kind == "comprehension" and not _is_bind(node):
            parts = node.parts
            count = coster.counts.get(node.id, _TOP)
            loop = 1 + walk(parts["condition"]) + walk(parts["step"])
            return min(_TOP, walk(parts["range"]) + walk(parts["init"]) + walk(parts["result"]) + count * loop)
        children = [*([node.target] if node.target is not None else []), *node.args, *node.parts.values()]
        return min(_TOP, sum(walk(child) for child in children))

    return walk(tree.root)


class _Coster:
    def __init__(self, tree: Checked) -> None:
        self.tree = tree
        self.paths: dict[int, tuple[str, ...]] = {}
        self.locals: dict[str, list[_Local]] = {}
        self.sizes: dict[int, Range] = {}
        self.entries: dict[int, _Entries] = {}
        self.counts: dict[int, int] = {}  # comprehension id -> the most iterations of its range

    # --- sizes and paths

    def type(self, node: Node) -> CelType:
        return self.tree.type(node)

    def local(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def path(self, node: Node) -> tuple[str, ...]:
        if node.kind == "ident":
            found = self.local(node.name)
            if found is not None:
                return found.path
        return self.paths.get(node.id, ())

    def size(self, node: Node) -> Range | None:
        if node.id in self.sizes:
            return self.sizes[node.id]
        literal = _literal_size(node)
        if literal is not None:
            return literal
        declared = _declared_size(self.path(node))
        if declared is not None:
            self.sizes[node.id] = declared
            return declared
        if _scalar(self.type(node)):
            return ONE
        if node.kind == "ident":
            found = self.local(node.name)
            if found is not None and found.size is not None:
                return found.size
        return None

    def size_or_unknown(self, node: Node) -> Range:
        found = self.size(node)
        return UNKNOWN if found is None else found

    def entry_sizes(self, node: Node) -> _Entries | None:
        if node.id in self.entries:
            return self.entries[node.id]
        if node.kind == "ident":
            found = self.local(node.name)
            if found is not None:
                return found.entries
        return None

    def operand(self, node: Node) -> _Operand:
        path = self.path(node)
        if path and path[0] in _ACCUMULATORS:
            path = ()
        return _Operand(path, self.type(node), node, self.size(node))

    def push(self, name: str, path: tuple[str, ...], size: Range | None, entries: _Entries | None = None) -> None:
        self.locals.setdefault(name, []).append(_Local(path, size, entries))

    def pop(self, name: str) -> None:
        self.locals[name].pop()

    def push_iteration(self, name: str, over: Node, part: str) -> None:
        """An iteration variable: part is key (of two), value (of two) or single."""
        entries = self.entry_sizes(over)
        container = entries.container if entries else self.type(over).kind
        listed = container == "list"
        if part == "key":
            size, step = (entries.key if entries else None), ("@indices" if listed else "@keys")
        elif part == "value":
            size, step = (entries.value if entries else None), ("@items" if listed else "@values")
        elif listed:
            size, step = (entries.value if entries else None), "@items"
        else:
            size, step = (entries.key if entries else None), "@keys"
        self.push(name, (*self.path(over), step), size)

    # --- costs

    def cost(self, node: Node) -> Range:
        kind = node.kind
        if kind == "const":
            return _fixed(0)
        if kind == "ident":
            return self.cost_ident(node)
        if kind == "select":
            return self.cost_select(node)
        if kind == "call":
            return self.cost_call(node)
        if kind == "list":
            return self.cost_list(node)
        if kind == "map":
            return self.cost_map(node)
        if kind == "struct":
            return sum((self.cost(value) for value in node.args[1::2]), _fixed(40))
        if kind == "comprehension":
            return self.cost_bind(node) if _is_bind(node) else self.cost_comprehension(node)
        return _fixed(0)

    def cost_ident(self, node: Node) -> Range:
        found = self.local(node.name)
        if found is not None:
            self.paths[node.id] = found.path
            return ONE
        # the check-only environment declares `device`'s fields as qualified names: an identifier and a select
        path = tuple(node.name.split(".")) if node.name.startswith("device.") else (node.name,)
        self.paths[node.id] = path
        return _fixed(len(path))

    def cost_select(self, node: Node) -> Range:
        assert node.target is not None
        if node.test_only:
            return self.cost(node.target)  # the API server prices presence tests at 0
        total = self.cost(node.target)
        if self.type(node.target).kind in ("map", "message", "param"):
            total += ONE
        self.paths[node.id] = (*self.path(node.target), node.name)
        return total

    def cost_list(self, node: Node) -> Range:
        total, items = _fixed(0), Range(0 if not node.args else _TOP, 0)
        for element in node.args:
            total += self.cost(element)
            items = items.union(self.size_or_unknown(element))
        self.entries[node.id] = _Entries("list", ONE, items)
        return total + _fixed(10)

    def cost_map(self, node: Node) -> Range:
        total = _fixed(0)
        empty = 0 if not node.args else _TOP
        keys, values = Range(empty, 0), Range(empty, 0)
        for key, value in zip(node.args[0::2], node.args[1::2], strict=True):
            total += self.cost(key) + self.cost(value)
            keys, values = keys.union(self.size_or_unknown(key)), values.union(self.size_or_unknown(value))
        self.entries[node.id] = _Entries("map", keys, values)
        return total + _fixed(30)

    def cost_comprehension(self, node: Node) -> Range:
        over, init = node.parts["range"], node.parts["init"]
        total = self.cost(over) + self.cost(init)
        self.push(node.accu, self.path(init), self.size(init), self.entry_sizes(init))
        if node.name2:
            self.push_iteration(node.name, over, "key")
            self.push_iteration(node.name2, over, "value")
        else:
            self.push_iteration(node.name, over, "single")
        loop = self.cost(node.parts["condition"])
        step = self.cost(node.parts["step"])
        self.pop(node.name)
        if node.name2:
            self.pop(node.name2)
        total += self.cost(node.parts["result"])
        self.pop(node.accu)
        count = self.size_or_unknown(over)
        self.counts[node.id] = count.high
        total += count * (step + loop)
        if init.kind == "const":
            initial = self.size(init)
            if initial is not None:
                self.sizes[node.id] = initial
        elif init.kind in ("list", "map"):
            self.sizes[node.id] = count
            stepped = self.entry_sizes(node.parts["step"])
            if stepped is not None:
                self.entries[node.id] = stepped
        return total

    def cost_bind(self, node: Node) -> Range:
        init, result = node.parts["init"], node.parts["result"]
        total = self.cost(node.parts["range"]) + self.cost(init)
        self.push(node.accu, self.path(init), self.size(init), self.entry_sizes(init))
        total += self.cost(result)
        self.pop(node.accu)
        size, entries = self.size(result), self.entry_sizes(result)
        if size is not None:
            self.sizes[node.id] = size
        if entries is not None:
            self.entries[node.id] = entries
        return total

    def cost_call(self, node: Node) -> Range:
        if node.name == "dyn" and node.args:
            total = ONE + self.cost(node.args[0])
            size, entries = self.size(node.args[0]), self.entry_sizes(node.args[0])
            if size is not None:
                self.sizes[node.id] = size
            if entries is not None:
                self.entries[node.id] = entries
            return total
        arg_costs = [self.cost(arg) for arg in node.args]
        args = [self.operand(arg) for arg in node.args]
        overloads = [_GO_IDS.get(o, o) for o in self.tree.overloads.get(node.id, [])]
        if not overloads:
            return _fixed(0)
        total, target = _fixed(0), None
        if node.target is not None:
            total += self.cost(node.target)
            target = self.operand(node.target)
        function = KUBERNETES_NAMES.get(node.name, node.name)
        cost, result = Range(_TOP, 0), None
        for overload in overloads:
            price, size = self.function_cost(node, function, overload, target, args, arg_costs)
            cost = cost.union(price)
            if size is not None:
                result = size if result is None else result.union(size)
            if overload in ("index_list", "index_map") and args:
                entries = self.entry_sizes(args[0].node) if args[0].node else None
                result = entries.value if entries else None
                self.paths[node.id] = (*self.path(node.args[0]), "@items" if overload == "index_list" else "@values")
            if result is None:
                result = self.size(node)
        if result is not None:
            self.sizes[node.id] = result
        return total + cost

    def function_cost(
        self, node: Node, function: str, overload: str, target: _Operand | None, args: list[_Operand],
        arg_costs: list[Range],
    ) -> tuple[Range, Range | None]:  # fmt: skip
        arguments = sum(arg_costs, _fixed(0))
        extension = _extension_cost(overload, target, args)
        if extension is not None:
            return extension[0] + arguments, extension[1]
        kubernetes = _kubernetes_cost(function, overload, target, args)
        if kubernetes is not None:
            return kubernetes[0] + arguments, kubernetes[1]
        return self.builtin_cost(node, overload, target, args, arg_costs, arguments)

    def builtin_cost(
        self, node: Node, overload: str, target: _Operand | None, args: list[_Operand], arg_costs: list[Range],
        arguments: Range,
    ) -> tuple[Range, Range | None]:  # fmt: skip
        """cel-go's prices of the built-in overloads (checker/cost.go functionCost)."""
        size = _size_or_unknown
        if overload == "string_format" and target is not None:
            return size(target).scaled(_STRING_FACTOR) + arguments, None
        if overload == "string_to_bytes" and len(args) == 1:
            s = size(args[0])
            return s.scaled(_STRING_FACTOR) + arguments, Range(s.low, min(s.high * 4, _TOP))
        if overload == "bytes_to_string" and len(args) == 1:
            s = size(args[0])
            return s.scaled(_STRING_FACTOR) + arguments, Range(s.low // 4, s.high)
        if overload == "strings_quote" and len(args) == 1:
            s = size(args[0])
            return s.scaled(_STRING_FACTOR) + arguments, Range(min(s.low + 2, _TOP), min(s.high * 2 + 2, _TOP))
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return size(args[0]).scaled(_STRING_FACTOR) + arguments, None
        if overload == "in_list" and len(args) == 2:
            return size(args[1]).scaled(1) + arguments, None
        if overload in ("matches", "matches_string"):
            if overload == "matches_string" and target is not None and len(args) == 1:
                text, pattern = target, args[0]
            elif overload == "matches" and target is None and len(args) == 2:
                text, pattern = args[0], args[1]
            else:
                return ONE + arguments, None
            scan = (size(text) + ONE).scaled(_STRING_FACTOR)
            return scan * size(pattern).scaled(_REGEX_FACTOR) + arguments, None
        if overload == "contains_string" and target is not None and len(args) == 1:
            return size(target).scaled(_STRING_FACTOR) * size(args[0]).scaled(_STRING_FACTOR) + arguments, None
        if overload in ("logical_or", "logical_and"):
            left, right = arg_costs[0], arg_costs[1]
            return Range(left.low, (left + right).high), None
        if overload == "conditional":
            result = size(args[1]).union(size(args[2]))
            first = self.entry_sizes(node.args[1])
            entries = first.union(self.entry_sizes(node.args[2])) if first else None
            if entries is not None:
                self.entries[node.id] = entries
            return arg_costs[0] + arg_costs[1].union(arg_costs[2]), result
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            result = size(args[0]) + size(args[1])
            first = self.entry_sizes(node.args[0])
            entries = first.union(self.entry_sizes(node.args[1])) if first else None
            if entries is not None:
                self.entries[node.id] = entries
            if overload == "add_list":
                return ONE + arguments, result
            return result.scaled(_STRING_FACTOR) + arguments, result
        if overload in _COMPARISONS:
            smallest = min(size(args[0]).high, size(args[1]).high)
            return Range(1 if smallest > 0 else 0, smallest).scaled(_STRING_FACTOR) + arguments, None
        return ONE + arguments, None


_COMPARISONS = {
    "equals", "not_equals", "less_string", "greater_string", "less_equals_string", "greater_equals_string",
    "less_bytes", "greater_bytes", "less_equals_bytes", "greater_equals_bytes",
}  # fmt: skip
_GO_IDS = {"list_range": "lists_range"}  # the library's overload ids where cel-go's differ


def _literal_size(node: Node) -> Range | None:
    """cel-go's computeExprSize: a literal's exact size."""
    if node.kind == "const":
        value = node.value
        if isinstance(value, str):
            return _fixed(len(value))
        if isinstance(value, bytes):
            return _fixed(len(value))
        return ONE
    if node.kind == "list":
        return _fixed(len(node.args))
    if node.kind == "map":
        return _fixed(len(node.args) // 2)
    return None


def _scalar(kind: CelType) -> bool:
    if kind.kind == "opaque" and kind.name == "optional_type" and kind.params:
        return _scalar(kind.params[0])
    return kind.kind in _SCALARS


def _is_bind(node: Node) -> bool:
    over, condition = node.parts["range"], node.parts["condition"]
    return (
        over.kind == "list"
        and not over.args
        and condition.kind == "const"
        and condition.value is False
        and node.accu != "@result"
    )


def _size_or_unknown(operand: _Operand) -> Range:
    return UNKNOWN if operand.size is None else operand.size


def _estimated(operand: _Operand) -> Range:
    """Kubernetes' and the extensions' sizeEstimate: what cel-go computed, else the declared bound, else unknown."""
    if operand.size is not None:
        return operand.size
    declared = _declared_size(operand.path)
    return UNKNOWN if declared is None else declared


def _as_uint(operand: _Operand, default: int) -> int:
    node = operand.node
    if node is None or node.kind != "const" or node.name != "int" or not isinstance(node.value, int):
        return default
    return max(node.value, 0)


def _element(operand: _Operand) -> _Operand | None:
    """Kubernetes' listElementNode: the element of a list (or the first type parameter), sized by its path."""
    if not operand.type.params:
        return None
    path = (*operand.path, "@items") if operand.path else ()
    return _Operand(path, operand.type.params[0], None, None)


# --- the extensions' overload estimators (cel-go ext/lists.go at version 3, ext/sets.go) ------------------------

_SORTABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")


def _list_call(factor: float, size: Range, allocates: bool = True) -> tuple[Range, Range]:
    cost = size.scaled(factor) + ONE
    return (cost + _fixed(10) if allocates else cost), size


def _extension_cost(overload: str, target: _Operand | None, args: list[_Operand]) -> tuple[Range, Range | None] | None:
    if overload in ("list_sets_contains_list", "list_sets_intersects_list", "list_sets_equivalent_list"):
        if len(args) != 2:
            return None
        factor = 2.0 if overload == "list_sets_equivalent_list" else 1.0
        return (_estimated(args[0]) * _estimated(args[1])).scaled(factor) + ONE, None
    if overload == "lists_range":
        if target is not None or len(args) != 1:
            return None
        return _list_call(1, _fixed(_as_uint(args[0], _TOP)))
    if target is None:
        return None
    if overload == "list_slice" and len(args) == 2:
        size = _estimated(target)
        start, end = _as_uint(args[0], 0), _as_uint(args[1], size.high)
        return _list_call(1, _fixed((end - start) % 2**64))
    if overload == "list_reverse" and not args:
        return _list_call(1, _estimated(target))
    if overload in ("list_flatten", "list_flatten_int") and len(args) <= 1:
        depth = _as_uint(args[0], _TOP) if args else 1
        return _list_call(float(depth), _estimated(target))
    if overload == "list_distinct" and not args:
        size = _estimated(target)
        return _list_call(2.0, size * size)
    for kind in _SORTABLE:
        factor = 2.0 + (_STRING_FACTOR if kind in ("string", "bytes") else 0)
        if overload == f"list_{kind}_sort" and not args:
            size = _estimated(target)
            return _list_call(factor, size * size)
        if overload == f"list_{kind}_sortByAssociatedKeys" and len(args) == 1:
            size = _estimated(args[0])
            return _list_call(factor, size * size)
    return None


# --- Kubernetes' estimator (k8s.io/apiserver/pkg/cel/library/cost.go EstimateCallCost) ------------------------

_NOMINAL = {
    "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
    "compareTo", "add", "sub", "major", "minor", "patch", "getScheme", "getHostname", "getHost", "getPort",
    "getEscapedPath", "getQuery", "format.named",
}  # fmt: skip
_PARSERS = {"cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver"}
_ONE_UNIT_EQUALS = {"kubernetes.Quantity", "kubernetes.Semver", "net.IP", "net.CIDR"}
_IP_BYTES = Range(4, 16)


def _kubernetes_cost(
    function: str, overload: str, target: _Operand | None, args: list[_Operand]
) -> tuple[Range, Range | None] | None:
    if function in _NOMINAL:
        return ONE, None
    if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes"):
        if target is None:
            return None
        element = _element(target)
        if element is not None:
            each = ONE
            if element.type.kind in ("string", "bytes"):
                each += _estimated(element).scaled(_STRING_FACTOR)
            return _estimated(target) * each, None
        if function == "includes":
            return _estimated(target), None
        return _estimated(target).scaled(_STRING_FACTOR), None
    if function == "url" and len(args) == 1:
        size = _estimated(args[0])
        return size.scaled(_STRING_FACTOR), size
    if function in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
        size = _estimated(target)
        return size.scaled(_STRING_FACTOR), size
    if function == "replace" and target is not None and len(args) >= 2:
        return _replace_cost(_estimated(target), _estimated(args[0]), _estimated(args[1]))
    if function == "split" and target is not None:
        size = _estimated(target)
        most = size.high
        limit = args[1].node if len(args) > 1 else None
        if limit is not None and limit.kind == "const" and limit.name == "int" and isinstance(limit.value, int):
            most = limit.value % 2**64
        return size.scaled(2 * _STRING_FACTOR), Range(0, most)
    if function == "join" and target is not None:
        count = _estimated(target)
        element = _element(target)
        size = count * _estimated(element) if element is not None else _fixed(0)
        if args:
            separators = Range(max(count.low - 1, 0), max(count.high - 1, 0))
            size = size + _estimated(args[0]) * separators
        return size.scaled(_STRING_FACTOR), size
    if function in ("find", "findAll") and target is not None and args:
        size = _estimated(target)
        scan = (size + ONE).scaled(_STRING_FACTOR)
        return scan * _estimated(args[0]).scaled(_REGEX_FACTOR), Range(0, size.high)
    if function in _PARSERS and args:
        return _estimated(args[0]).scaled(_STRING_FACTOR), None
    if function == "ip":
        if overload == "cidr_ip":
            return ONE, None
        if args:
            return _estimated(args[0]).scaled(_STRING_FACTOR), None
    if function == "ip.isCanonical" and args:
        return _estimated(args[0]).scaled(2 * _STRING_FACTOR), None
    if function in ("containsIP", "containsCIDR") and args:
        cost = (_IP_BYTES + _IP_BYTES).scaled(_STRING_FACTOR)
        if function == "containsCIDR":
            cost = cost + _IP_BYTES.scaled(_STRING_FACTOR) + ONE
        if overload in ("cidr_contains_ip_string", "cidr_contains_cidr_string"):
            cost = cost + _estimated(args[0]).scaled(_STRING_FACTOR)
        return cost, None
    if function == "_==_" and len(args) == 2 and args[0].type == args[1].type:
        name = args[0].type.name
        if name in _ONE_UNIT_EQUALS:
            return ONE, None
        if name == "kubernetes.URL":
            # the API server's code takes the right-hand size twice
            size = args[1].size if args[1].size is not None else ONE
            return Range(1, size.high).scaled(_STRING_FACTOR), None
    return None


def _replace_cost(size: Range, old: Range, new: Range) -> tuple[Range, Range]:
    """Kubernetes' estimate of `replace`: the traversal, and the size of the longest and shortest results."""
    if old.low == 0:
        count_high, kept_high = (size.high + 1 if size.high < _TOP else size.high), size.high
    elif new.high <= old.low:
        count_high, kept_high = 0, size.high
    else:
        count_high, kept_high = _ceil_div(size.high, old.low), 0
    if old.high == 0:
        count_low, kept_low = (size.low + 1 if size.low < _TOP else size.low), size.low
    elif old.high <= new.low:
        count_low, kept_low = 0, size.low
    else:
        count_low, kept_low = _ceil_div(size.low, old.high), 0
    result = Range(count_low, count_high) * new + Range(kept_low, kept_high)
    return size.scaled(2 * _STRING_FACTOR), result


def _ceil_div(a: int, b: int) -> int:
    """math.Ceil(float64(a) / float64(b)) converted back to uint64, as the API server computes it."""
    quotient = math.ceil(float(a) / float(b))
    return _TOP if quotient >= 2**64 else int(quotient)
