"""The address rules behind every caller-given URL (momor/egress.py): which addresses are public,
how odd spellings of an address are read, how a name is resolved once and every address checked,
and what MOMOR_FETCH_ALLOW lets through.
"""

from __future__ import annotations

import ipaddress

import pytest

from momor import egress
from momor.config import Config, ConfigError, fetch_allow_list, reset_config
from momor.egress import AllowList, Refused

NOT_PUBLIC = [
    "127.0.0.1",  # loopback, the Lambda Runtime API's host (127.0.0.1:9001)
    "127.5.5.5",
    "::1",
    "169.254.169.254",  # instance metadata (EC2, ECS, GCE)
    "169.254.170.2",  # ECS task credentials
    "fd00:ec2::254",  # EC2 metadata over IPv6
    "fe80::1",
    "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",  # RFC 1918
    "fc00::1", "fdab::1", "fec0::1",  # unique local, site-local
    "100.64.0.1", "100.127.255.254",  # shared address space (carrier-grade NAT)
    "0.0.0.0", "::", "0.1.2.3",
    "224.0.0.1", "239.255.255.250", "ff02::1", "ff0e::1",  # multicast
    "240.0.0.1", "255.255.255.255",  # reserved, broadcast
    "192.0.2.1", "198.51.100.1", "203.0.113.1", "2001:db8::1",  # documentation
    "198.18.0.1",  # benchmarking
    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",  # IPv4-mapped
    "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",  # NAT64 of loopback, of metadata
    "2002:7f00:1::",  # 6to4 of loopback
    "::127.0.0.1", "100::1",  # IPv4-compatible (deprecated), discard-only
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]


@pytest.mark.parametrize("text", NOT_PUBLIC)
def test_non_public_addresses_are_refused(text: str) -> None:
    assert not egress.is_public(ipaddress.ip_address(text))


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_pass(text: str) -> None:
    assert egress.is_public(ipaddress.ip_address(text))


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "0177.0.0.1", "0x7f000001", "127.0.0.1",
                                  "0x7F.0.0.1", "127.0.0.1."])
def test_odd_spellings_of_loopback_are_read_as_loopback(host: str) -> None:
    assert egress.literal_address(host) == ipaddress.ip_address("127.0.0.1")


@pytest.mark.parametrize("host", ["example.com", "0x.example", "1.2.3.4.5", "08.1.2.3", ""])
def test_names_are_not_addresses(host: str) -> None:
    assert egress.literal_address(host) is None


class Resolver:
    """A DNS stand-in: fixed answers, and how often it was asked."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers, self.asked = answers, []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host.lower() not in self.answers:  # names are case-insensitive, as in DNS
            raise OSError("no such name")
        return self.answers[host.lower()]


NOBODY = AllowList()


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "::ffff:127.0.0.1", "169.254.169.254",
                                  "[fd00:ec2::254]", "localhost"])
async def test_a_loopback_or_metadata_host_is_refused_however_written(host: str) -> None:
    resolve = Resolver({"localhost": ["127.0.0.1", "::1"]})
    with pytest.raises(Refused, match="non-public"):
        await egress.checked_addresses(host, 80, allow=NOBODY, resolve=resolve)
    assert resolve.asked == ([] if host != "localhost" else ["localhost"])  # an address is never looked up


async def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    resolve = Resolver({"files.example.com": ["10.0.0.5"]})
    with pytest.raises(Refused, match="non-public") as refused:
        await egress.checked_addresses("files.example.com", 443, allow=NOBODY, resolve=resolve)
    assert "10.0.0.5" not in str(refused.value)  # the private address is not told to the caller


async def test_one_private_address_among_public_ones_is_enough_to_refuse() -> None:
    resolve = Resolver({"mixed.example.com": ["93.184.216.34", "169.254.169.254"]})
    with pytest.raises(Refused):
        await egress.checked_addresses("mixed.example.com", 80, allow=NOBODY, resolve=resolve)


async def test_a_public_name_gives_its_addresses_resolved_once() -> None:
    resolve = Resolver({"example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "93.184.216.34"]})
    addresses = await egress.checked_addresses("example.com", 80, allow=NOBODY, resolve=resolve)
    assert addresses == ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
    assert resolve.asked == ["example.com"]


async def test_an_unresolvable_name_is_refused() -> None:
    with pytest.raises(Refused, match="could not be resolved"):
        await egress.checked_addresses("nowhere.invalid", 80, allow=NOBODY, resolve=Resolver({}))


async def test_the_allow_list_lets_a_listed_network_or_name_through() -> None:
    allow = AllowList.parse("10.20.0.0/16, files.internal., 127.0.0.1")
    resolve = Resolver({"a.internal": ["10.20.3.4"], "files.internal": ["192.168.9.9"], "b.internal": ["10.21.0.1"]})
    assert await egress.checked_addresses("a.internal", 80, allow=allow, resolve=resolve) == ["10.20.3.4"]
    assert await egress.checked_addresses("FILES.internal", 80, allow=allow, resolve=resolve) == ["192.168.9.9"]
    assert await egress.checked_addresses("2130706433", 80, allow=allow, resolve=resolve) == ["127.0.0.1"]
    assert await egress.checked_addresses("::ffff:127.0.0.1", 80, allow=allow, resolve=resolve) == ["::ffff:127.0.0.1"]
    with pytest.raises(Refused):  # outside the listed network
        await egress.checked_addresses("b.internal", 80, allow=allow, resolve=resolve)
    with pytest.raises(Refused):  # 127.0.0.1 is listed, the rest of loopback is not
        await egress.checked_addresses("127.0.0.2", 80, allow=allow, resolve=resolve)


@pytest.mark.parametrize("entry", ["127.1", "http://files.internal", "files.internal:8080", "10.0.0.0/33", "a b"])
def test_a_malformed_allow_list_entry_is_a_config_error_naming_the_setting(entry: str) -> None:
    with pytest.raises(ConfigError, match="MOMOR_FETCH_ALLOW"):
        AllowList.parse(f"example.com, {entry}")
    with pytest.raises(ConfigError, match="MOMOR_FETCH_ALLOW"):  # read with the rest: a typo fails at start
        Config.from_env({"MOMOR_FETCH_ALLOW": entry})


def test_the_allow_list_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOMOR_FETCH_ALLOW", "10.0.0.0/8,files.internal")
    reset_config()
    assert fetch_allow_list() == AllowList(frozenset({"files.internal"}), (ipaddress.ip_network("10.0.0.0/8"),))
    monkeypatch.delenv("MOMOR_FETCH_ALLOW")
    reset_config()
    assert fetch_allow_list() == AllowList()


def test_host_allowed_needs_a_listed_name_or_an_address_inside_a_listed_network() -> None:
    allow = AllowList.parse("127.0.0.1,token.internal")
    assert egress.host_allowed("127.0.0.1", allow) and egress.host_allowed("Token.Internal", allow)
    assert not egress.host_allowed("localhost", allow)  # a name is not looked up here
    assert not egress.host_allowed("evil.example.com", allow)
