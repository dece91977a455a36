"""The WebSocket relay between the panel's noVNC client and the display's VNC server
(x11vnc on 127.0.0.1, or wayvnc on a private Unix socket on Wayland).

The relay logs in to the VNC server itself (RFB 3.8, VNC authentication) with the view-only or the
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
from typing import ClassVar, Protocol

from starlette.websockets import WebSocket, WebSocketDisconnect

from jarvis.desktop.rfb import (
    RFB_VERSION,
    SEC_NONE,
    RfbError,
    Upstream,
    until_first,
)

log = logging.getLogger(__name__)


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


class VncSource(Protocol):
    """A display's VNC server (x11vnc, or wayvnc on Wayland) that opens sessions."""

    async def session(self, full: bool) -> Upstream: ...


async def relay(
    websocket: WebSocket,
    source: VncSource,
    full: bool,
    closed: asyncio.Event,
    on_input: Callable[[], None] | None = None,
) -> None:
    """Serve ``websocket`` (not yet accepted) from a session of ``source`` (view-only, or
    with ``full`` the one that takes input) until either side ends or ``closed`` is set.
    ``on_input`` is called for each message the browser's key or pointer event once the
    session runs (the takeover's idle clock)."""
    try:
        upstream = await source.session(full)
    except (RfbError, OSError) as exc:
        log.warning("vnc relay: %s", exc)
        await websocket.close(code=1011)
        return
    await serve(websocket, upstream, closed, on_input)


async def serve(
    websocket: WebSocket,
    upstream: Upstream,
    closed: asyncio.Event,
    on_input: Callable[[], None] | None = None,
) -> None:
    """Offer ``websocket`` (not yet accepted) a session without authentication of its own
    and copy bytes between it and ``upstream`` until either ends or ``closed`` is set."""
    try:
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
            await upstream.write(incoming.buffer)
            if watch.feed(incoming.buffer) and on_input is not None:
                on_input()
        await _pump(websocket, upstream, closed, on_input, watch)
    except (WebSocketDisconnect, asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        await upstream.close()
        with contextlib.suppress(Exception):
            await websocket.close()


async def _pump(
    websocket: WebSocket,
    upstream: Upstream,
    closed: asyncio.Event,
    on_input: Callable[[], None] | None,
    watch: InputWatch,
) -> None:
    async def up() -> None:
        while True:
            data = await websocket.receive_bytes()
            if watch.feed(data) and on_input is not None:
                on_input()
            await upstream.write(data)

    async def down() -> None:
        while data := await upstream.read():
            await websocket.send_bytes(data)

    await until_first(up(), down(), closed.wait())
