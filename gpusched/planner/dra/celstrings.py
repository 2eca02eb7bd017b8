"""cel-go's strings extension (version 2, as Kubernetes enables it) where the CEL library's differs: `format`,
`substring` and `charAt`, whose errors name the index (`index out of range: 100`,
`invalid substring range. start: 5, end: 2`; ext/strings.go).

`<string>.format(<list>)` is cel-go's first formatter (ext/formatting.go) with the en_US locale. The library's own
format follows the CEL spec's later formatter, which differs in what a selector can see:
- `%f` and `%e` go through golang.org/x/text/message in en_US: `%f` groups thousands (`1,234.500000`), `%e` writes
  `1.500000×10⁰⁰` (a superscript exponent of at least two digits);
- `%e`'s precision is passed to Go as a *width* (`%.3e` becomes `%3e`): every `%e` has six fraction digits, a larger
  "precision" only pads with spaces on the left, and `%.0e` is the zero flag;
- `%s` of a list or map quotes strings and bytes, writes doubles as `%.6f` and timestamps/durations as CEL literals;
  map entries are sorted by their formatted key;
- `%d` of a double is an error, as are Kubernetes' types (Quantity, Semver, IP, CIDR, URL) under `%s`.
The checker's part (the format validator on literal arguments) is celcheck's; this is the runtime's.
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any

from .cellib import CIDR, IP, QUANTITY, SEMVER, URL, LibraryError

__all__ = ["format_string", "substring", "char_at", "RUNTIME_FUNCTIONS"]

_PRECISION = 6  # defaultPrecision
_MAX_WIDTH = 1_000_000  # Go's fmt refuses larger widths and precisions (tooLarge)
# en's superscripting exponent in the golang.org/x/text Kubernetes vendors (checked against 1.37.2's API server; later
# x/text, as in cel-go's own tests, puts narrow no-break spaces around the sign), then the base
_TIMES = "\u00d710"
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_SUPER_MINUS = "⁻"
_OPAQUE = {QUANTITY: "kubernetes.Quantity", SEMVER: "kubernetes.Semver", IP: "net.IP", CIDR: "net.CIDR",
           URL: "kubernetes.URL"}  # fmt: skip
_STRING_CLAUSE = (
    "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, "
    "and timestamps, was given {}"
)
_CLAUSE_WORDS = {
    "d": "decimal clause can only be used on integers, was given {}",
    "f": "fixed-point clause can only be used on doubles, was given {}",
    "e": "scientific clause can only be used on doubles, was given {}",
    "b": "only integers and bools can be formatted as binary, was given {}",
    "x": "only integers, byte buffers, and strings can be formatted as hex, was given {}",
    "o": "octal clause can only be used on integers, was given {}",
}
_SPECIAL = ("NaN", "Infinity", "-Infinity")  # strings %f and %e take as doubles


def _kind(value: Any) -> str:
    """The CEL type name cel-go's errors give (a uint reaches Python as an int: it is named int)."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _OPAQUE:
        return _OPAQUE[next(iter(value))]
    if value is None:
        return "null_type"
    for kind, name in ((bool, "bool"), (int, "int"), (float, "double"), (str, "string"), (list, "list"),
                       (dict, "map"), (bytes, "bytes"), (bytearray, "bytes"), (datetime.datetime,
                       "google.protobuf.Timestamp"), (datetime.timedelta, "google.protobuf.Duration")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return "type"


def _shortest(number: float) -> Decimal:
    """The shortest decimal that reads back as the double (Go's and Python's repr agree on it)."""
    return Decimal(repr(number))


def _go_g(number: float) -> str:
    """Go's `%g` with no precision (a double's string conversion): the shortest digits, in exponent form when the
    exponent is below -4 or at least 6 (strconv's threshold for the shortest form): 1.234567e+06, 2e-09."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if number == 0:
        return "-0" if math.copysign(1, number) < 0 else "0"
    sign, digits, exponent = _shortest(number).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exponent)  # digits before the decimal point
    head, exp = "-" if sign else "", point - 1
    if exp < -4 or exp >= _PRECISION:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{head}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{head}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{head}{text}{'0' * (point - len(text))}"
    return f"{head}{text[:point]}.{text[point:]}"


def _go_quote(text: str) -> str:
    """Go's %q (strconv.Quote): printable characters kept, the rest escaped."""
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
             '"': '\\"', "\\": "\\\\"}  # fmt: skip
    out = []
    for char in text:
        code = ord(char)
        if char in named:
            out.append(named[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _text_of_bytes(value: bytes | bytearray) -> str:
    try:
        return bytes(value).decode()
    except UnicodeDecodeError:
        raise LibraryError("invalid UTF-8 in bytes, cannot convert to string") from None


def _timestamp(value: datetime.datetime) -> str:
    """RFC 3339 in UTC with the fraction's trailing zeros dropped (Go's RFC3339Nano)."""
    utc = value.astimezone(datetime.UTC)
    fraction = f".{utc.microsecond:06d}".rstrip("0").rstrip(".")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def _duration(value: datetime.timedelta) -> str:
    seconds = Decimal(value.days * 86400 + value.seconds) + Decimal(value.microseconds) / 10**6
    return f"{seconds.normalize():f}s" if seconds else "0s"


def _as_string(value: Any) -> str:
    """FormatString: `%s`, and a list's or map's strings and bools before quoting."""
    kind = _kind(value)
    if kind == "list":
        return "[" + ", ".join(_member(item) for item in value) + "]"
    if kind == "map":
        return _map(value)
    if kind == "null_type":
        return "null"
    if kind == "bool":
        return "true" if value else "false"
    if kind == "int":
        return str(value)
    if kind == "double":
        return _go_g(value)
    if kind == "string":
        return value
    if kind == "bytes":
        return _text_of_bytes(value)
    if kind == "google.protobuf.Timestamp":
        return _timestamp(value)
    if kind == "google.protobuf.Duration":
        return _duration(value)
    if kind == "type":
        return str(value).lower()
    raise LibraryError(_STRING_CLAUSE.format(kind))


def _member(value: Any) -> str:
    """A list element or map value: clauseForType's formatting, then quoteForCEL."""
    kind = _kind(value)
    if kind == "double":
        if math.isnan(value) or math.isinf(value):
            return _go_quote(_go_g(value))
        return f"{value:.{_PRECISION}f}"
    if kind == "google.protobuf.Timestamp":
        return f"timestamp({_go_quote(_timestamp(value))})"
    if kind == "google.protobuf.Duration":
        return f"duration({_go_quote(_duration(value))})"
    if kind == "type":
        return f"type({str(value).lower()})"
    if kind in _OPAQUE.values():
        raise LibraryError(f"no formatting function for {kind}")
    text = _as_string(value)
    if kind == "string":
        return _go_quote(text)
    if kind == "bytes":
        return "b" + _go_quote(text)
    return text


def _map(value: dict) -> str:
    pairs = []
    for key, item in value.items():
        kind = _kind(key)
        if kind not in ("string", "bool", "int"):
            raise LibraryError(f"no formatting function for map key of type {kind}")
        pairs.append((_member(key), _member(item)))
    return "{" + ", ".join(f"{key}:{item}" for key, item in sorted(pairs, key=lambda pair: pair[0])) + "}"


def _grouped(digits: str) -> str:
    """en's grouping of an integer part: 1,234,567."""
    head = len(digits) % 3 or 3
    return ",".join([digits[:head], *(digits[i : i + 3] for i in range(head, len(digits), 3))])


def _double(value: Any, verb: str) -> float:
    """%f and %e take doubles, and the strings NaN, Infinity and -Infinity."""
    if isinstance(value, float):
        return value
    if isinstance(value, str) and value in _SPECIAL:
        return float(value.replace("Infinity", "inf"))
    raise LibraryError(_CLAUSE_WORDS[verb].format(_kind(value)))


def _special(number: float) -> str | None:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    return None


def _fixed(number: float, precision: int) -> str:
    """x/text's `%.<p>f` in en_US: correctly rounded, thousands grouped; a negative zero has no sign."""
    special = _special(number)
    if special:
        return special
    whole, _, fraction = f"{abs(number):.{precision}f}".partition(".")
    return ("-" if number < 0 else "") + _grouped(whole) + ("." + fraction if fraction else "")


def _scientific(number: float, width: int) -> str:
    """x/text's `%<width>e` in en_US: six fraction digits, `×10` and a superscript exponent of at least two digits,
    padded on the left with spaces to `width` characters."""
    text = _special(number)
    if text is None:
        mantissa, _, exponent = f"{abs(number):.{_PRECISION}e}".partition("e")
        power = int(exponent)
        sign = _SUPER_MINUS if power < 0 else ""
        text = ("-" if number < 0 else "") + mantissa + _TIMES + sign + f"{abs(power):02d}".translate(_SUPERSCRIPT)
    return text.rjust(width)


def _integer(value: Any, verb: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise LibraryError(_CLAUSE_WORDS[verb].format(_kind(value)))


def _hex(value: Any, upper: bool) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        text = format(value, "x")
    elif isinstance(value, str):
        text = value.encode().hex()
    elif isinstance(value, bytes | bytearray):
        text = bytes(value).hex()
    else:
        raise LibraryError(_CLAUSE_WORDS["x"].format(_kind(value)))
    return text.upper() if upper else text


def _binary(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return format(_integer(value, "b"), "b")


def _clause(verb: str, precision: int | None, value: Any) -> str:
    if verb == "s":
        return _as_string(value)
    if verb == "d":
        return str(_integer(value, "d"))
    if verb in "fe" and (precision or 0) > _MAX_WIDTH:
        raise LibraryError(f"not modelled by gpusched: a %{verb} precision above {_MAX_WIDTH}")
    if verb == "f":
        return _fixed(_double(value, "f"), _PRECISION if precision is None else precision)
    if verb == "e":
        width = _PRECISION if precision is None else precision  # `%%%de`: the precision becomes Go's width
        return _scientific(_double(value, "e"), width)
    if verb == "b":
        return _binary(value)
    if verb in "xX":
        return _hex(value, verb == "X")
    return format(_integer(value, "o"), "o")


def _precision(text: str, at: int) -> tuple[int, int | None]:
    """parsePrecision: `.digits` before the verb; where the verb is, and the precision (None: not given)."""
    if text[at] != ".":
        return at, None
    end = at + 1
    while True:
        if end >= len(text):
            raise LibraryError(
                "could not parse formatting clause: error while parsing precision: could not find end of "
                "precision specifier"
            )
        if not ("0" <= text[end] <= "9"):
            break
        end += 1
    digits = text[at + 1 : end]
    if not digits or int(digits) >= 2**63:
        reason = "invalid syntax" if not digits else "value out of range"
        raise LibraryError(
            "could not parse formatting clause: error while parsing precision: error while converting precision to "
            f'integer: strconv.Atoi: parsing "{digits}": {reason}'
        )
    return end, int(digits)


def format_string(text: str, args: list[Any]) -> str:
    """parseFormatString: `%%` is a percent sign; each other `%` takes the next argument."""
    out: list[str] = []
    i = used = 0
    while i < len(text):
        if text[i] != "%":
            out.append(text[i])
            i += 1
            continue
        if text[i + 1 : i + 2] == "%":
            out.append("%")
            i += 2
            continue
        if used >= len(args):
            raise LibraryError(f"index {used} out of range")
        if i + 1 >= len(text):
            raise LibraryError("unexpected end of string")
        verb_at, precision = _precision(text, i + 1)
        verb = text[verb_at]
        if verb not in "sdfebxXo":
            first = chr(verb.encode()[0])  # Go reads one byte as the verb
            raise LibraryError(f'could not parse formatting clause: unrecognized formatting clause "{first}"')
        try:
            out.append(_clause(verb, precision, args[used]))
        except LibraryError as error:
            if str(error).startswith("not modelled"):
                raise
            raise LibraryError(f"error during formatting: {error}") from None
        used += 1
        i = verb_at + 1
    return "".join(out)


def _within(index: int, size: int) -> None:
    if index < 0 or index > size:
        raise LibraryError(f"index out of range: {index}")


def substring(text: str, start: int, end: int | None = None) -> str:
    if end is None:
        _within(start, len(text))
        return text[start:]
    if start > end:
        raise LibraryError(f"invalid substring range. start: {start}, end: {end}")
    _within(start, len(text))
    _within(end, len(text))
    return text[start:end]


def char_at(text: str, index: int) -> str:
    _within(index, len(text))
    return text[index : index + 1]


# member function as written -> (our name, [(overload id, parameter types, result type)], implementation)
RUNTIME_FUNCTIONS: dict[str, tuple[str, list[tuple[str, tuple[str, ...], str]], Any]] = {
    "format": ("k8sFormat", [("string_format_k8s", ("string", "list"), "string")], format_string),
    "substring": (
        "k8sSubstring",
        [
            ("string_substring_int_k8s", ("string", "int"), "string"),
            ("string_substring_int_int_k8s", ("string", "int", "int"), "string"),
        ],
        substring,
    ),  # fmt: skip
    "charAt": ("k8sCharAt", [("string_char_at_int_k8s", ("string", "int"), "string")], char_at),
}
