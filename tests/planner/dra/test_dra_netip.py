"""Go's netip.ParseAddr and ParsePrefix as Kubernetes' CEL ip() and cidr() see them: what parses, and the words of
each refusal (a scheduler message quotes them), read from Go's net/netip source."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusched.planner.dra.netip import AddrError, parse_addr, parse_prefix


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("10.0.0.300", 'ParseAddr("10.0.0.300"): IPv4 field has value >255'),
        ("10.0.0.01", 'ParseAddr("10.0.0.01"): IPv4 field has octet with leading zero'),
        ("1.2.3", 'ParseAddr("1.2.3"): IPv4 address too short'),
        ("1.2.3.4.5", 'ParseAddr("1.2.3.4.5"): IPv4 address too long'),
        ("1..2.3", 'ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")'),
        ("1.2.3.x", 'ParseAddr("1.2.3.x"): unexpected character (at "x")'),
        ("gpu", 'ParseAddr("gpu"): unable to parse IP'),
        ("%eth0", 'ParseAddr("%eth0"): missing IPv6 address'),
        ("fe80::1%", 'ParseAddr("fe80::1%"): zone must be a non-empty string'),
        ("1::2::3", 'ParseAddr("1::2::3"): multiple :: in address (at ":3")'),
        ("12345::", 'ParseAddr("12345::"): each group must have 4 or less digits (at "12345::")'),
        ("1:2:3:4:5:6:7:8:9", 'ParseAddr("1:2:3:4:5:6:7:8:9"): trailing garbage after address (at "9")'),
        ("1:2", 'ParseAddr("1:2"): address string too short'),
        ("1:2:3:4:5:6:7:8::", 'ParseAddr("1:2:3:4:5:6:7:8::"): the :: must expand to at least one field of zeros'),
        ("1:", 'ParseAddr("1:"): colon must be followed by more characters (at ":")'),
        (
            "1:2:1.2.3.4",
            'ParseAddr("1:2:1.2.3.4"): embedded IPv4 address must replace the final 2 fields of the '
            'address (at "1.2.3.4")',
        ),  # fmt: skip
    ],
)
def test_addresses_go_refuses_in_its_words(text, error):
    with pytest.raises(AddrError) as caught:
        parse_addr(text)
    assert str(caught.value) == error


@pytest.mark.parametrize(
    ("text", "address", "zone"),
    [("::", "::", ""), ("::1", "::1", ""), ("fe80::1%eth0", "fe80::1", "eth0"), ("::ffff:1.2.3.4", "::ffff:102:304", ""),
     ("2001:DB8::0", "2001:db8::", ""), ("0.0.0.0", "0.0.0.0", "")],
)  # fmt: skip
def test_addresses_go_accepts(text, address, zone):
    assert parse_addr(text) == (ipaddress.ip_address(address), zone)


@given(st.ip_addresses())
def test_every_canonical_address_parses_to_itself(address):
    assert parse_addr(str(address)) == (address, "")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("10.0.0.0", "no '/'"),
        ("10.0.0.0/08", 'bad bits after slash: "08"'),
        ("10.0.0.0/+8", 'bad bits after slash: "+8"'),
        ("10.0.0.0/", 'bad bits after slash: ""'),
        ("10.0.0.0/33", "prefix length out of range"),
        ("fe80::1%e/64", "IPv6 zones cannot be present in a prefix"),
        ("10.0.0.256/8", 'ParseAddr("10.0.0.256"): IPv4 field has value >255'),
    ],
)
def test_prefixes_go_refuses_in_its_words(text, error):
    with pytest.raises(AddrError) as caught:
        parse_prefix(text)
    assert str(caught.value) == f'netip.ParsePrefix("{text}"): {error}'


def test_a_prefix_keeps_the_address_as_written():
    assert parse_prefix("10.1.2.3/8") == (ipaddress.ip_address("10.1.2.3"), 8)
