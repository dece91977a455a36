"""The client side of an RFB (VNC) login to x11vnc, and the session it opens: what the
API's relay and a fleet worker's view tunnel do before they copy bytes, so a VNC password
never leaves the process that started x11vnc."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Coroutine
from typing import Any, Protocol

RFB_VERSION = b"RFB 003.008\n"
SEC_NONE, SEC_VNC = 1, 2
CHUNK = 1 << 16


class RfbError(RuntimeError):
    """x11vnc refused the login or spoke something else."""


def vnc_response(password: str, challenge: bytes) -> bytes:
    """The answer to a VNC authentication challenge: DES of the challenge with the password
    (8 bytes, zero-padded) as key, each key byte's bits reversed (the protocol's quirk)."""
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    key = bytes(int(f"{b:08b}"[::-1], 2) for b in password.encode()[:8].ljust(8, b"\0"))
    encryptor = Cipher(TripleDES(key * 3), modes.ECB()).encryptor()  # 3 x the key: DES
    return encryptor.update(challenge) + encryptor.finalize()


async def rfb_login(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pw: str | None
) -> None:
    """The client side of the RFB 3.8 handshake up to (not including) ClientInit: VNC
    authentication with ``pw``, or with None none (wayvnc on a private Unix socket)."""
    version = await reader.readexactly(12)
    if not version.startswith(b"RFB 003."):
        raise RfbError("the VNC server did not speak RFB")
    writer.write(RFB_VERSION)
    count = (await reader.readexactly(1))[0]
    if count == 0:
        size = struct.unpack(">I", await reader.readexactly(4))[0]
        reason = (await reader.readexactly(size)).decode("utf-8", "replace")
        raise RfbError(f"the VNC server refused the connection: {reason}")
    types = await reader.readexactly(count)
    if pw is None:
        if SEC_NONE not in types:
            raise RfbError("the VNC server asks for authentication")
        writer.write(bytes([SEC_NONE]))
        await writer.drain()
    elif SEC_VNC not in types:
        raise RfbError("the VNC server does not offer password authentication")
    else:
        await _vnc_auth(reader, writer, pw)
    result = struct.unpack(">I", await reader.readexactly(4))[0]
    if result != 0:
        raise RfbError("the VNC server refused the password")


async def _vnc_auth(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pw: str) -> None:
    """VNC authentication: the challenge answered with ``pw``."""
    writer.write(bytes([SEC_VNC]))
    challenge = await reader.readexactly(16)
    writer.write(vnc_response(pw, challenge))
    await writer.drain()


class Upstream(Protocol):
    """A VNC session's server side, logged in already: x11vnc on loopback, or a fleet
    worker's view tunnel (what the API's relay and :func:`splice` copy from and to)."""

    async def read(self) -> bytes:
        """The next bytes from the server; b"" at its end."""
        ...

    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class Loopback:
    """x11vnc on 127.0.0.1, through a TCP connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def read(self) -> bytes:
        return await self.reader.read(CHUNK)

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


async def logged_in(port: int, password: str) -> Upstream:
    """x11vnc on 127.0.0.1:``port``, logged in with ``password``; raises RfbError or
    OSError (with the reason) when it cannot be."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    return await login_on(reader, writer, password, "x11vnc")


async def login_on(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, password: str | None, server: str
) -> Upstream:
    """The RFB login on an open connection to ``server`` (x11vnc, wayvnc); the connection
    is closed when it fails."""
    upstream = Loopback(reader, writer)
    try:
        await rfb_login(reader, writer, password)
    except asyncio.IncompleteReadError as exc:
        await upstream.close()
        raise RfbError(f"{server} closed the connection during the login") from exc
    except BaseException:
        await upstream.close()
        raise
    return upstream


async def splice(a: Upstream, b: Upstream) -> None:
    """Copy bytes both ways between ``a`` and ``b`` until either ends."""

    async def copy(source: Upstream, sink: Upstream) -> None:
        while data := await source.read():
            await sink.write(data)

    await until_first(copy(a, b), copy(b, a))


async def until_first(*work: Coroutine[Any, Any, Any]) -> None:
    """Run ``work`` together until the first of it ends (or fails); the rest is cancelled
    and awaited."""
    tasks = [asyncio.create_task(w) for w in work]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
