"""The tests' network guard for child processes (``jarvis run`` as a subprocess).

Put this folder first on ``PYTHONPATH`` and Python imports it at start-up. Like the
session guard in tests/conftest.py, a socket may connect only to loopback (or a Unix
socket); and no name is sent to a DNS server: ``localhost`` and IP literals resolve as
usual, any other name fails as an unknown name does (``socket.gaierror``, EAI_NONAME),
so a test of an unresolvable host (``nonexistent.invalid``) never leaves the machine.
With ``JARVIS_TEST_NET_LOG`` set, every refused connection and every name that was
looked up is appended to that file, one line each, for the test to read.
"""

from __future__ import annotations

import ipaddress
import os
import socket

_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _note(line: str) -> None:
    path = os.environ.get("JARVIS_TEST_NET_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def _literal(host: object) -> bool:
    try:
        ipaddress.ip_address(str(host))
    except ValueError:
        return False
    return True


def _loopback(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # a Unix socket
        return True
    host = address[0] if isinstance(address, tuple) and address else None
    return _literal(host) and ipaddress.ip_address(str(host)).is_loopback


def getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    name = host.decode() if isinstance(host, bytes) else host
    if name is None or name == "localhost" or _literal(name):
        return _real_getaddrinfo(host, *args, **kwargs)
    _note(f"lookup {name}")
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def connect(self, address):  # type: ignore[no-untyped-def]
    if not _loopback(address):
        _note(f"connect {address!r}")
        raise ConnectionRefusedError(f"test network guard: {address!r} is not loopback")
    return _real_connect(self, address)


def connect_ex(self, address):  # type: ignore[no-untyped-def]
    if not _loopback(address):
        _note(f"connect {address!r}")
        raise ConnectionRefusedError(f"test network guard: {address!r} is not loopback")
    return _real_connect_ex(self, address)


socket.getaddrinfo = getaddrinfo
socket.socket.connect = connect  # type: ignore[method-assign]
socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
