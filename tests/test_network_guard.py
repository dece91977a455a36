"""The suite's network guard (tests/conftest.py) lets loopback through and nothing else."""

from __future__ import annotations

import socket

import pytest


def test_loopback_connects_and_anything_else_is_refused(network_guard: list[str]) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass  # loopback is allowed
    before = list(network_guard)
    with socket.socket() as client, pytest.raises(ConnectionRefusedError, match="not loopback"):
        client.connect(("192.0.2.1", 443))  # TEST-NET-1: never routed, never contacted
    assert network_guard[len(before) :] == ["('192.0.2.1', 443)"]
    network_guard[:] = before  # this attempt was the test's own, not a leak
