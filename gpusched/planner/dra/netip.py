"""Go's net/netip.ParseAddr, for the words of its errors: Kubernetes' CEL ip() and cidr() quote them, and a
scheduler message carries them. Returns the address's canonical text (as Addr.String prints it) and its zone."""

from __future__ import annotations

import ipaddress
import json

__all__ = ["AddrError", "parse_addr"]


class AddrError(ValueError):
    """ParseAddr's error text: `ParseAddr("x"): <why>` and, where Go names it, ` (at "<rest>")`."""

    def __init__(self, text: str, why: str, at: str = "") -> None:
        where = f" (at {json.dumps(at)})" if at else ""
        super().__init__(f"ParseAddr({json.dumps(text)}): {why}{where}")


def parse_addr(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, str]:
    """(address, zone), or AddrError in Go's words; the first '.', ':' or '%' decides the family, as in Go."""
    for char in text:
        if char == ".":
            return ipaddress.IPv4Address(bytes(_ipv4_fields(text, text))), ""
        if char == ":":
            return _ipv6(text)
        if char == "%":
            raise AddrError(text, "missing IPv6 address")
    raise AddrError(text, "unable to parse IP")


def _ipv4_fields(text: str, part: str) -> list[int]:
    fields: list[int] = []
    value = digits = 0
    for i, char in enumerate(part):
        if "0" <= char <= "9":
            if digits == 1 and value == 0:
                raise AddrError(text, "IPv4 field has octet with leading zero")
            value, digits = value * 10 + int(char), digits + 1
            if value > 255:
                raise AddrError(text, "IPv4 field has value >255")
        elif char == ".":
            if i == 0 or i == len(part) - 1 or part[i - 1] == ".":
                raise AddrError(text, "IPv4 field must have at least one digit", part[i:])
            if len(fields) == 3:
                raise AddrError(text, "IPv4 address too long")
            fields.append(value)
            value = digits = 0
        else:
            raise AddrError(text, "unexpected character", part[i:])
    if len(fields) < 3:
        raise AddrError(text, "IPv4 address too short")
    return [*fields, value]


_HEX = "0123456789abcdefABCDEF"


def _ipv6(text: str) -> tuple[ipaddress.IPv6Address, str]:
    rest, zone = text, ""
    if "%" in rest:
        rest, zone = rest.split("%", 1)
        if not zone:
            raise AddrError(text, "zone must be a non-empty string")
    groups: list[int] = []  # bytes
    ellipsis = -1
    if rest.startswith("::"):
        ellipsis, rest = 0, rest[2:]
        if not rest:
            return ipaddress.IPv6Address(0), zone
    while len(groups) < 16:
        off = acc = 0
        while off < len(rest) and rest[off] in _HEX:
            acc = (acc << 4) + int(rest[off], 16)
            if off > 3:
                raise AddrError(text, "each group must have 4 or less digits", rest)
            if acc > 0xFFFF:
                raise AddrError(text, "IPv6 field has value >=2^16", rest)
            off += 1
        if off == 0:
            raise AddrError(text, "each colon-separated field must have at least one digit", rest)
        if off < len(rest) and rest[off] == ".":
            if ellipsis < 0 and len(groups) != 12:
                raise AddrError(text, "embedded IPv4 address must replace the final 2 fields of the address", rest)
            if len(groups) + 4 > 16:
                raise AddrError(text, "too many hex fields to fit an embedded IPv4 at the end of the address", rest)
            groups += _ipv4_fields(text, rest)
            rest = ""
            break
        groups += [acc >> 8, acc & 0xFF]
        rest = rest[off:]
        if not rest:
            break
        if rest[0] != ":":
            raise AddrError(text, "unexpected character, want colon", rest)
        if len(rest) == 1:
            raise AddrError(text, "colon must be followed by more characters", rest)
        rest = rest[1:]
        if rest[0] == ":":
            if ellipsis >= 0:
                raise AddrError(text, "multiple :: in address", rest)
            ellipsis, rest = len(groups), rest[1:]
            if not rest:
                break
    if rest:
        raise AddrError(text, "trailing garbage after address", rest)
    if len(groups) < 16:
        if ellipsis < 0:
            raise AddrError(text, "address string too short")
        groups[ellipsis:ellipsis] = [0] * (16 - len(groups))
    elif ellipsis >= 0:
        raise AddrError(text, "the :: must expand to at least one field of zeros")
    return ipaddress.IPv6Address(bytes(groups)), zone


def parse_prefix(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """netip.ParsePrefix: (address as written, bits), or AddrError carrying `netip.ParsePrefix("x"): <why>`."""

    def refuse(why: str) -> AddrError:
        error = AddrError(text, "")
        error.args = (f"netip.ParsePrefix({json.dumps(text)}): {why}",)
        return error

    address_text, slash, bits_text = text.rpartition("/")
    if not slash:
        raise refuse("no '/'")
    try:
        address, zone = parse_addr(address_text)
    except AddrError as error:
        raise refuse(str(error)) from None
    if zone:
        raise refuse("IPv6 zones cannot be present in a prefix")
    if (len(bits_text) > 1 and not "1" <= bits_text[0] <= "9") or not bits_text.lstrip("+-").isdigit():
        raise refuse(f"bad bits after slash: {json.dumps(bits_text)}")
    bits = int(bits_text)
    if not 0 <= bits <= address.max_prefixlen:
        raise refuse("prefix length out of range")
    return address, bits
