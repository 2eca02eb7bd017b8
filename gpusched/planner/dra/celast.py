"""The checked AST the CEL library hands back (`Expression.serialize()`: a cel.expr.CheckedExpr in a protobuf Any),
read into small Python objects, so that gpusched can run the API server's checks that the library lacks over it.

The library exposes no AST objects, only these bytes; the protobuf wire format is read here directly (field numbers
of cel/expr/syntax.proto and checked.proto) rather than depending on generated protobuf classes for one message.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

__all__ = ["CelType", "Node", "Checked", "KUBERNETES_NAMES", "read_checked"]

# Kubernetes' functions whose names the library's extensions own go by these names in its ASTs (cel.py renames them)
KUBERNETES_NAMES = {"k8sListIndexOf": "indexOf", "k8sListLastIndexOf": "lastIndexOf", "k8sString": "string"}


@dataclass(frozen=True)
class CelType:
    """A checked type: `kind` is one of dyn, any, null, bool, int, uint, double, string, bytes, timestamp, duration,
    list, map, type, param, error, opaque (Kubernetes' and optional types, by `name`), message."""

    kind: str
    name: str = ""
    params: tuple[CelType, ...] = ()

    def __str__(self) -> str:
        """The type as cel-go's FormatCELType writes it in checker messages."""
        if self.kind == "any":
            return "any"
        if self.kind in ("list", "map"):
            return f"{self.kind}({', '.join(str(p) for p in self.params)})"
        if self.kind == "opaque" and self.params:
            return f"{self.name}({', '.join(str(p) for p in self.params)})"
        return self.name or self.kind

    def spelled(self) -> str:
        """The type as cel-go's Type.String writes it (google.protobuf.Any for any)."""
        if self.kind == "any":
            return self.type_name
        if self.params:
            return f"{self.name or self.kind}({', '.join(p.spelled() for p in self.params)})"
        return str(self)

    @property
    def type_name(self) -> str:
        """The runtime type name (cel-go's TypeName): google.protobuf.Any for any."""
        return {"any": "google.protobuf.Any", "timestamp": "google.protobuf.Timestamp"}.get(
            self.kind, self.name or self.kind
        )


DYN = CelType("dyn")
_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "timestamp", 3: "duration"}


@dataclass
class Node:
    """One expression node; `kind` is const, ident, select, call, list, map, struct or comprehension."""

    id: int
    kind: str
    name: str = ""  # ident name, select field, call function, constant kind, comprehension iteration variable
    value: object = None  # a constant's value
    target: Node | None = None  # select operand, member call target
    args: list[Node] = field(default_factory=list)  # call args, list elements, map keys and values interleaved
    test_only: bool = False
    optional: list[int] = field(default_factory=list)  # optional list indices / entries
    # comprehension: iter_var2, accu_var, range, init, condition, step, result
    name2: str = ""
    accu: str = ""
    parts: dict[str, Node] = field(default_factory=dict)


@dataclass
class Checked:
    root: Node
    types: dict[int, CelType]
    overloads: dict[int, list[str]]
    source_info: bytes  # read only when an error needs a position

    def type(self, node: Node) -> CelType:
        return self.types.get(node.id, DYN)

    @cached_property
    def positions(self) -> dict[int, int]:
        """Expression id -> code point offset."""
        positions = {}
        for entry in _fields(self.source_info).get(4, []):
            e = _fields(entry)
            positions[_signed(int(_one(e, 1, 0)))] = int(_one(e, 2, 0))  # type: ignore[call-overload]
        return positions


def _fields(buf: bytes) -> dict[int, list]:
    out: dict[int, list] = {}
    i, n = 0, len(buf)
    while i < n:
        key = buf[i]
        i += 1
        if key >= 0x80:
            key, i = _varint(buf, i - 1)
        number, wire = key >> 3, key & 7
        value: object
        if wire == 0:
            value = buf[i]
            i += 1
            if value >= 0x80:
                value, i = _varint(buf, i - 1)
        elif wire == 2:
            length = buf[i]
            i += 1
            if length >= 0x80:
                length, i = _varint(buf, i - 1)
            value, i = buf[i : i + length], i + length
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"protobuf wire type {wire}")
        if number in out:
            out[number].append(value)
        else:
            out[number] = [value]
    return out


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _one(fields: dict[int, list], number: int, default: object = None) -> object:
    return fields[number][0] if number in fields else default


@lru_cache(maxsize=4096)
def _type(buf: bytes) -> CelType:
    """A checked type; the same few recur across expressions, so each is read once."""
    f = _fields(buf)
    if 3 in f:
        return CelType(_PRIMITIVES[f[3][0]])
    if 4 in f:
        return CelType("wrapper", _PRIMITIVES[f[4][0]])
    if 5 in f:
        return CelType(_WELL_KNOWN[f[5][0]])
    if 6 in f:
        return CelType("list", params=(_type(_fields(f[6][0]).get(1, [b""])[0]),))
    if 7 in f:
        entry = _fields(f[7][0])
        return CelType("map", params=(_type(entry[1][0]), _type(entry[2][0])))
    if 9 in f:
        return CelType("message", f[9][0].decode())
    if 10 in f:
        return CelType("param", f[10][0].decode())
    if 11 in f:
        return CelType("type")
    if 14 in f:
        abstract = _fields(f[14][0])
        return CelType("opaque", abstract[1][0].decode(), tuple(_type(p) for p in abstract.get(2, [])))
    if 2 in f:
        return CelType("null")
    if 12 in f:
        return CelType("error")
    return DYN


def _constant(buf: bytes) -> tuple[str, object]:
    """A literal's kind (int, uint, double, string, bytes, bool, null) and value."""
    f = _fields(buf)
    if 2 in f:
        return "bool", bool(f[2][0])
    if 3 in f:
        return "int", _signed(f[3][0])
    if 4 in f:
        return "uint", f[4][0]
    if 5 in f:
        return "double", struct.unpack("<d", f[5][0])[0]
    if 6 in f:
        return "string", f[6][0].decode()
    if 7 in f:
        return "bytes", bytes(f[7][0])
    return "null", None


def _node(buf: bytes) -> Node:
    f = _fields(buf)
    ident = int(_one(f, 2, 0))  # type: ignore[call-overload]
    if 3 in f:
        kind, value = _constant(f[3][0])
        return Node(ident, "const", kind, value=value)
    if 4 in f:
        return Node(ident, "ident", _fields(f[4][0])[1][0].decode())
    if 5 in f:
        s = _fields(f[5][0])
        return Node(ident, "select", s[2][0].decode(), target=_node(s[1][0]), test_only=bool(_one(s, 3, 0)))
    if 6 in f:
        c = _fields(f[6][0])
        target = _node(c[1][0]) if 1 in c else None
        return Node(ident, "call", c[2][0].decode(), target=target, args=[_node(a) for a in c.get(3, [])])
    if 7 in f:
        lst = _fields(f[7][0])
        return Node(ident, "list", args=[_node(e) for e in lst.get(1, [])], optional=_packed(lst.get(2, [])))
    if 8 in f:
        s = _fields(f[8][0])
        args, optional = [], []
        for position, entry in enumerate(s.get(2, [])):
            e = _fields(entry)
            args += [_node(e[3][0]) if 3 in e else Node(0, "const", value=e[2][0].decode()), _node(e[4][0])]
            if _one(e, 5, 0):
                optional.append(position)
        name = s[1][0].decode() if 1 in s else ""
        return Node(ident, "struct" if name else "map", name, args=args, optional=optional)
    if 9 in f:
        c = _fields(f[9][0])
        parts = {key: _node(c[number][0]) for key, number in (("range", 2), ("init", 4), ("condition", 5),
                                                               ("step", 6), ("result", 7))}  # fmt: skip
        name2 = c[8][0].decode() if 8 in c else ""
        return Node(ident, "comprehension", c[1][0].decode(), name2=name2, accu=c[3][0].decode(), parts=parts)
    return Node(ident, "const")


def _packed(chunks: list) -> list[int]:
    values: list[int] = []
    for chunk in chunks:
        if isinstance(chunk, int):
            values.append(chunk)
            continue
        i = 0
        while i < len(chunk):
            value, i = _varint(chunk, i)
            values.append(value)
    return values


def read_checked(serialized: bytes) -> Checked:
    """A CheckedExpr (inside its protobuf Any) as Python objects."""
    checked = _fields(_fields(serialized)[2][0])
    types = {}
    for entry in checked.get(3, []):
        e = _fields(entry)
        types[_signed(int(_one(e, 1, 0)))] = _type(e[2][0])  # type: ignore[call-overload]
    overloads = {}
    for entry in checked.get(2, []):
        e = _fields(entry)
        overloads[_signed(int(_one(e, 1, 0)))] = [o.decode() for o in _fields(e[2][0]).get(3, [])]  # type: ignore[call-overload]
    return Checked(_node(checked[4][0]), types, overloads, bytes(checked[5][0]) if 5 in checked else b"")
