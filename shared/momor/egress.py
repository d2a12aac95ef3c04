"""Which addresses Momor may reach on a caller's behalf: the rules behind every caller-given URL.

A caller's URL (a file to fetch, routing/fetch.py) may name any host, so before Momor connects it
resolves the name once and checks every address it got; the connection is then made to one of
those very addresses (no second lookup a rebinding DNS server could answer differently). An address
passes when it is publicly routable: not loopback (the Lambda Runtime API listens on
127.0.0.1:9001), link-local (instance metadata at 169.254.169.254; EC2's fd00:ec2::254 is inside
fc00::/7), private (RFC 1918, fc00::/7, IPv6 site-local fec0::/10), shared (100.64.0.0/10,
carrier-grade NAT), unspecified, multicast, reserved, documentation or benchmarking space. An IPv6
address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`) is judged
by the IPv4 address inside, and a host written the way inet_aton reads it (`2130706433`,
`0x7f.1`, `127.1`) is taken as the address it spells, as the resolver itself would.

A deployment that must reach private sources lists them in MOMOR_FETCH_ALLOW: comma-separated host
names (matched exactly, case-insensitive, a trailing dot ignored: every address such a name resolves
to passes) and IP networks or addresses (`10.20.0.0/16`, `127.0.0.1`: an address inside passes).
Nothing else widens the rules; the scheme is always http or https.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from .errors import ConfigError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""(host, port) -> the addresses the name resolves to, as text."""

SCHEMES = {"http": 80, "https": 443}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_INET_ATON = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$", re.IGNORECASE)
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$")


class Refused(Exception):
    """A URL Momor will not connect to; the text says why in words a caller can act on (it never
    names the address a name resolved to: that would map a private network for the caller)."""


class Unresolved(Refused):
    """The host name did not resolve (here, now): nothing to connect to, and nothing known against it."""


@dataclass(frozen=True, slots=True)
class AllowList:
    names: frozenset[str] = frozenset()
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def parse(cls, text: str | None, setting: str = "MOMOR_FETCH_ALLOW") -> AllowList:
        names: set[str] = set()
        networks = []
        for entry in (e.strip() for e in (text or "").split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            name = _name(entry)
            if not _HOST_NAME.match(name) or _INET_ATON.match(name):
                raise ConfigError(f"{setting}: {entry!r} is neither a host name nor an IP network")
            names.add(name)
        return cls(frozenset(names), tuple(networks))

    def names_host(self, host: str) -> bool:
        return _name(host) in self.names

    def covers(self, address: Address) -> bool:
        inner = embedded_ipv4(address)
        return any(a in n for a in (address, inner) if a is not None for n in self.networks if a.version == n.version)


def _name(host: str) -> str:
    return host.strip().lower().rstrip(".")


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries to the same host (IPv4-mapped, NAT64), else None."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: Address) -> bool:
    """Whether `address` is one a caller's URL may reach without the allow-list."""
    inner = embedded_ipv4(address)
    if inner is not None:
        return is_public(inner)
    # is_global alone passes multicast (224.0.0.0/4, ff00::/8) and IPv6 site-local (fec0::/10, deprecated
    # but still routed inside some networks), so those are refused by name too.
    site_local = isinstance(address, ipaddress.IPv6Address) and address.is_site_local
    return address.is_global and not (address.is_multicast or address.is_reserved or address.is_unspecified
                                      or site_local)


def literal_address(host: str) -> Address | None:
    """The address `host` spells, if it is one: canonical IPv4/IPv6, or any form inet_aton (and so
    the system resolver) reads as IPv4 (`2130706433`, `0x7f.1`, `127.1`, `0177.0.0.1`)."""
    text = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if _INET_ATON.match(text.rstrip(".")):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text.rstrip(".")))
        except OSError:
            return None
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         proto=socket.IPPROTO_TCP)
    return [info[4][0] for info in infos]


async def checked_addresses(host: str, port: int, *, allow: AllowList, resolve: Resolver = system_resolver
                            ) -> list[str]:
    """The addresses to connect to for `host`, every one allowed; Refused otherwise. Resolved once:
    the caller connects to these, never to the name again."""
    literal = literal_address(host)
    if literal is not None:
        addresses: list[Address] = [literal]
    else:
        try:
            found = await resolve(host, port)
        except (OSError, UnicodeError):
            raise Unresolved("its host name could not be resolved") from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(a.split("%", 1)[0]) for a in found))
        if not addresses:
            raise Unresolved("its host name could not be resolved")
    if allow.names_host(host):
        return [str(a) for a in addresses]
    if not all(is_public(a) or allow.covers(a) for a in addresses):
        raise Refused("it leads to a loopback, private, link-local or otherwise non-public address, which Momor "
                      "does not fetch")
    return [str(a) for a in addresses]


def host_allowed(host: str, allow: AllowList) -> bool:
    """Whether the deployment's allow-list names `host` itself: by name, or as an address inside a
    listed network. No lookup is made (used where the address is not pinned, google_auth.py)."""
    if allow.names_host(host):
        return True
    literal = literal_address(host)
    return literal is not None and allow.covers(literal)
