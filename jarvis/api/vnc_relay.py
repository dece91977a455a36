"""The WebSocket relay between the panel's noVNC client and x11vnc on 127.0.0.1.

The relay logs in to x11vnc itself (RFB 3.8, VNC authentication) with the view-only or the
full-access password, then offers the browser a session with no authentication of its own
(the API's token or cookie already let it in), and from there copies bytes both ways. So a
VNC password never leaves the daemon: not in a page, not in an API response.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable
from typing import ClassVar

from starlette.websockets import WebSocket, WebSocketDisconnect

log = logging.getLogger(__name__)

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


async def rfb_login(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pw: str) -> None:
    """The client side of the RFB 3.8 handshake up to (not including) ClientInit."""
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
    if SEC_VNC not in types:
        raise RfbError("the VNC server does not offer password authentication")
    writer.write(bytes([SEC_VNC]))
    challenge = await reader.readexactly(16)
    writer.write(vnc_response(pw, challenge))
    await writer.drain()
    result = struct.unpack(">I", await reader.readexactly(4))[0]
    if result != 0:
        raise RfbError("the VNC server refused the password")


class InputWatch:
    """Tells a person's input (key and pointer events) apart from the rest of what a VNC
    client sends (update requests come many times a second while nobody touches anything),
    for the takeover's idle clock. Reads the client's messages after the handshake; after
    one it does not know, every message counts as input (it cannot find the next one)."""

    FIXED: ClassVar[dict[int, int]] = {0: 20, 3: 10, 4: 8, 5: 6, 150: 10}
    """Sizes: pixel format, update request, key, pointer, continuous updates."""

    def __init__(self, skip: int = 1) -> None:
        self.skip = skip  # ClientInit: one byte
        self.buffer = b""
        self.lost = False

    def feed(self, data: bytes) -> bool:
        """True when ``data`` completes a key or pointer event."""
        if self.lost:
            return True
        self.buffer += data
        cut = min(self.skip, len(self.buffer))
        self.buffer, self.skip = self.buffer[cut:], self.skip - cut
        found = False
        while self.buffer:
            size = self._size(self.buffer)
            if size is None:  # lost track: from now on, everything counts
                self.lost = True
                return True
            if size == 0 or len(self.buffer) < size:
                break  # the rest of the message comes in a later frame
            found = found or self.buffer[0] in (4, 5)
            self.buffer = self.buffer[size:]
        return found

    def _size(self, b: bytes) -> int | None:
        """The whole message's size; 0 when its header is not all here; None: unknown."""
        kind = b[0]
        if kind in self.FIXED:
            return self.FIXED[kind]
        if kind == 2:  # SetEncodings
            return 4 + 4 * struct.unpack(">H", b[2:4])[0] if len(b) >= 4 else 0
        if kind == 6:  # ClientCutText
            return 8 + struct.unpack(">I", b[4:8])[0] if len(b) >= 8 else 0
        if kind == 251:  # SetDesktopSize
            return 8 + 16 * b[6] if len(b) >= 8 else 0
        return None


class _Incoming:
    """Exact-size reads from the browser's binary WebSocket messages."""

    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket
        self.buffer = b""

    async def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self.buffer += await self.websocket.receive_bytes()
        out, self.buffer = self.buffer[:size], self.buffer[size:]
        return out


async def relay(
    websocket: WebSocket,
    port: int,
    password: str,
    closed: asyncio.Event,
    on_input: Callable[[], None] | None = None,
) -> None:
    """Serve ``websocket`` (not yet accepted) from x11vnc on 127.0.0.1:``port`` until
    either side ends or ``closed`` is set. ``on_input`` is called for each message the
    browser's key or pointer event once the session runs (the takeover's idle clock)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as exc:
        log.warning("vnc relay: cannot reach x11vnc: %s", exc)
        await websocket.close(code=1011)
        return
    try:
        try:
            await rfb_login(reader, writer, password)
        except (RfbError, asyncio.IncompleteReadError, OSError) as exc:
            log.warning("vnc relay: %s", exc)
            await websocket.close(code=1011)
            return
        wanted = websocket.scope.get("subprotocols") or []
        await websocket.accept(subprotocol="binary" if "binary" in wanted else None)
        incoming = _Incoming(websocket)
        await websocket.send_bytes(RFB_VERSION)
        await incoming.read(12)
        await websocket.send_bytes(bytes([1, SEC_NONE]))
        if (await incoming.read(1))[0] != SEC_NONE:
            return
        await websocket.send_bytes(struct.pack(">I", 0))
        watch = InputWatch()
        if incoming.buffer:
            writer.write(incoming.buffer)
            if watch.feed(incoming.buffer) and on_input is not None:
                on_input()
        await _pump(websocket, reader, writer, closed, on_input, watch)
    except (WebSocketDisconnect, asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        with contextlib.suppress(Exception):
            await websocket.close()


async def _pump(
    websocket: WebSocket,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    closed: asyncio.Event,
    on_input: Callable[[], None] | None,
    watch: InputWatch,
) -> None:
    async def up() -> None:
        while True:
            data = await websocket.receive_bytes()
            if watch.feed(data) and on_input is not None:
                on_input()
            writer.write(data)
            await writer.drain()

    async def down() -> None:
        while data := await reader.read(CHUNK):
            await websocket.send_bytes(data)

    tasks = [asyncio.create_task(c) for c in (up(), down(), closed.wait())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
