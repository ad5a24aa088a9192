"""Which addresses an outbound request may reach.

A model that can fetch URLs can be talked into fetching the daemon's own admin
port, a router's web page or a cloud's metadata service (server-side request
forgery). So a host name is resolved *before* anything connects, every address
it resolves to is checked, and the caller then connects only to those checked
addresses - never to the name again, which a rebinding DNS server could answer
differently the second time. Private, loopback and other non-public addresses
are refused unless the operator listed the host in ``[safety] http_allow``.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import anyio

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the addresses it resolves to, as text; anyio.getaddrinfo by default.
Resolver: TypeAlias = Callable[[str, int], Awaitable[Sequence[str]]]

_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_V4 = ipaddress.ip_network
# Named classes, first match wins: the name goes into the refusal the model reads.
_CLASSES: tuple[tuple[str, tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]], ...] = (
    ("an unspecified address", (_V4("0.0.0.0/8"), _V4("::/128"))),
    ("a loopback address", (_V4("127.0.0.0/8"), _V4("::1/128"))),
    ("a link-local address", (_V4("169.254.0.0/16"), _V4("fe80::/10"))),
    ("a private address", (_V4("10.0.0.0/8"), _V4("172.16.0.0/12"), _V4("192.168.0.0/16"))),
    ("a carrier-grade NAT address", (_V4("100.64.0.0/10"),)),
    ("a unique-local address", (_V4("fc00::/7"),)),
    ("a site-local address", (_V4("fec0::/10"),)),
    ("a multicast address", (_V4("224.0.0.0/4"), _V4("ff00::/8"))),
    ("a broadcast address", (_V4("255.255.255.255/32"),)),
    ("a reserved address", (_V4("240.0.0.0/4"),)),
)
# IPv6 forms that carry an IPv4 address inside: checked as that address too.
_NAT64 = (_V4("64:ff9b::/96"), _V4("64:ff9b:1::/48"))


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address, e.g. "a private address"; None
    when it is one."""
    if address in _METADATA:
        return "the cloud metadata address"
    for name, networks in _CLASSES:
        if any(address in network for network in networks):
            return name
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = refusal_reason(embedded)
            return None if inner is None else f"{inner} ({embedded}) inside an IPv6 address"
    # Whatever else is not globally routable: documentation, benchmarking, 6to4
    # relays, the IETF protocol block ... the catch-all for the lists above.
    return None if address.is_global else "not a public address"


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in network for network in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def host_allowed(host: str, port: int, http_allow: Sequence[str]) -> bool:
    """Whether ``host`` (a name or an IP literal, without brackets) on ``port`` is in
    ``http_allow``: "host", "host:port", "*.domain" (its subdomains), "[v6]:port"."""
    host = _normal_host(host)
    for entry in http_allow:
        pattern, entry_port = _split_entry(entry)
        if entry_port is not None and entry_port != port:
            continue
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif _same_host(host, pattern):
            return True
    return False


def _split_entry(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        inside, _, rest = entry[1:].partition("]")
        return _normal_host(inside), int(rest[1:]) if rest.startswith(":") else None
    name, colon, port = entry.rpartition(":")
    if colon and port.isdigit():
        return _normal_host(name), int(port)
    return _normal_host(entry), None


def _normal_host(host: str) -> str:
    return host.strip("[]").rstrip(".").lower()


def _same_host(a: str, b: str) -> bool:
    if a == b:
        return True
    try:  # "::ffff:7f00:1" is "::ffff:127.0.0.1"
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return False


@dataclass(frozen=True)
class Destination:
    """A host checked for one request: connect to ``addresses`` only, in this order."""

    host: str
    port: int
    addresses: tuple[str, ...]


@dataclass(frozen=True)
class Refused:
    """Why a host may not be reached: one line the model can act on."""

    reason: str


async def system_resolve(host: str, port: int) -> Sequence[str]:
    """Every address the system resolver gives for ``host`` (IPv4 and IPv6)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def check_destination(
    host: str, port: int, *, http_allow: Sequence[str], resolve: Resolver = system_resolve
) -> Destination | Refused:
    """Resolve ``host`` once and check every address it has. An IP literal is not
    resolved; a host in ``http_allow`` may have any address."""
    literal = _ip_literal(host)
    if literal is not None:
        addresses: Sequence[str] = [str(literal)]
    else:
        try:
            addresses = await resolve(host, port)
        except OSError as exc:
            return Refused(f"cannot resolve {host}: {exc}; check the host name in the url")
        if not addresses:
            return Refused(f"cannot resolve {host}: it has no addresses; check the host name")
    if host_allowed(host, port, http_allow):
        return Destination(host, port, tuple(addresses))
    for text in addresses:
        reason = _address_refusal(text)
        if reason is None:
            continue
        via = "" if literal is not None else f"{host} resolves to {text}, "
        return Refused(
            f"refused: {via}{text} is {reason}; add {_entry_for(host, port)} to [safety] "
            "http_allow to allow it"
        )
    return Destination(host, port, tuple(addresses))


def _address_refusal(text: str) -> str | None:
    try:
        address = ipaddress.ip_address(text.partition("%")[0])  # drop an IPv6 zone
    except ValueError:
        return "not an IP address"
    return refusal_reason(address)


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _entry_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f'"{shown}:{port}"'
