"""The test suite's own guard: nothing a test does reaches past this machine."""

from __future__ import annotations

import socket

import pytest


def test_a_public_name_is_not_resolved():
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.com", 443)


def test_a_public_address_is_not_connected_to():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(OSError, match="loopback"):
        sock.connect(("93.184.215.14", 443))


def test_loopback_still_works():
    assert socket.getaddrinfo("127.0.0.1", 80) and socket.getaddrinfo("localhost", 80)
