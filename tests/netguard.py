"""Tests reach only this machine: a name other than a loopback one is not resolved, and a socket
never connects to an address off the loopback range. A test (or a fuzz example, say a URL file
under `fileProcessing: auto`) that would reach the internet fails to connect instead, the way a
machine with no network fails, and never sends a byte anywhere else.

Installed for the whole session by tests/conftest.py; subprocesses (emulators, the fake provider,
SAM's emulator) are started by the tests on 127.0.0.1 and are not patched.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _local(host: Any) -> bool:
    if host is None:
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _local(host):
        raise socket.gaierror(socket.EAI_NONAME, f"tests resolve no name but loopback ones ({host!r})")
    return _real_getaddrinfo(host, *args, **kwargs)


def _checked(sock: socket.socket, address: Any) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        raise OSError(f"tests connect only to loopback addresses, not {address[0]!r}")


def _connect(self: socket.socket, address: Any) -> None:
    _checked(self, address)
    return _real_connect(self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _checked(self, address)
    return _real_connect_ex(self, address)


def install() -> None:
    socket.getaddrinfo = _getaddrinfo  # type: ignore[assignment]
    socket.socket.connect = _connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]
