"""The outbound address guard on its own: which addresses are public, what
http_allow entries match, and that a name is resolved once with every answer checked."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest

from wakeful.safety.config import SafetySection
from wakeful.safety.outbound import Destination, Refused, check_destination, refusal_reason


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.255.255.254", "a loopback address"),
        ("::1", "a loopback address"),
        ("0.0.0.0", "an unspecified address"),
        ("::", "an unspecified address"),
        ("169.254.169.254", "the cloud metadata address"),
        ("fd00:ec2::254", "the cloud metadata address"),
        ("169.254.1.1", "a link-local address"),
        ("10.255.0.1", "a private address"),
        ("172.31.255.255", "a private address"),
        ("192.168.0.1", "a private address"),
        ("100.127.255.255", "a carrier-grade NAT address"),
        ("fd12:3456::1", "a unique-local address"),
        ("ff02::1", "a multicast address"),
        ("239.1.1.1", "a multicast address"),
        ("255.255.255.255", "a broadcast address"),
        ("192.0.2.10", "not a public address"),  # documentation
        ("198.18.0.1", "not a public address"),  # benchmarking
        ("::ffff:10.0.0.1", "a private address (10.0.0.1) inside an IPv6 address"),
        ("2002:7f00:1::", "a loopback address (127.0.0.1) inside an IPv6 address"),  # 6to4
        ("64:ff9b::a9fe:a9fe", "the cloud metadata address (169.254.169.254) inside"),  # NAT64
    ],
)
def test_non_public_addresses_are_named(address: str, reason: str) -> None:
    named = refusal_reason(ipaddress.ip_address(address))
    assert named is not None and named.startswith(reason), named


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:2800:220:1::1", "::ffff:8.8.8.8", "1.1.1.1"]
)
def test_public_addresses_pass(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) is None


class Answers:
    def __init__(self, addresses: list[str]) -> None:
        self.addresses = addresses
        self.lookups: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.lookups.append((host, port))
        return self.addresses


ALLOW = SafetySection(
    http_allow=["Intranet.Example", "*.corp.example", "127.0.0.1:8080", "[::1]:9000", "[fd00::5]"]
).http_allow


@pytest.mark.parametrize(
    ("host", "port", "allowed"),
    [
        ("intranet.example", 80, True),  # any port; case folded by the config
        ("intranet.example.", 443, True),  # a trailing dot is the same name
        ("other.example", 80, False),
        ("a.corp.example", 80, True),
        ("a.b.corp.example", 8443, True),
        ("corp.example", 80, False),  # "*." means the subdomains
        ("evilcorp.example", 80, False),
        ("127.0.0.1", 8080, True),
        ("127.0.0.1", 8081, False),  # the port is part of the entry
        ("::1", 9000, True),
        ("::1", 80, False),
        ("fd00:0:0:0:0:0:0:5", 1234, True),  # the same IPv6 address, written out
    ],
)
@pytest.mark.anyio
async def test_http_allow_entries(host: str, port: int, allowed: bool) -> None:
    dns = Answers(["10.0.0.7"])
    checked = await check_destination(host, port, http_allow=ALLOW, resolve=dns)
    assert isinstance(checked, Destination) is allowed, checked


@pytest.mark.anyio
async def test_a_name_is_resolved_once_and_its_addresses_kept_in_order() -> None:
    dns = Answers(["2606:2800:220:1::1", "93.184.216.34"])
    checked = await check_destination("example.org", 443, http_allow=[], resolve=dns)
    assert checked == Destination("example.org", 443, ("2606:2800:220:1::1", "93.184.216.34"))
    assert dns.lookups == [("example.org", 443)]


@pytest.mark.anyio
async def test_an_ip_literal_is_not_resolved() -> None:
    dns = Answers(["93.184.216.34"])
    checked = await check_destination("fc00::1", 80, http_allow=[], resolve=dns)
    assert checked == Refused(
        'refused: fc00::1 is a unique-local address; add "[fc00::1]:80" to [safety] '
        "http_allow to allow it"
    )
    assert dns.lookups == []


@pytest.mark.anyio
async def test_a_name_without_addresses_is_refused() -> None:
    checked = await check_destination("empty.example", 80, http_allow=[], resolve=Answers([]))
    assert checked == Refused(
        "cannot resolve empty.example: it has no addresses; check the host name"
    )
