"""A small RFB client over the API's WebSocket relay, for tests and the takeover bench.

It speaks what noVNC speaks to the relay: RFB 3.8 with security type None (the relay logs
in to x11vnc itself), then ClientInit, pointer and key events, and raw framebuffer updates.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from PIL import Image
from websockets.asyncio.client import ClientConnection, connect

XK_RETURN = 0xFF0D


@dataclass
class Session:
    ws: ClientConnection
    width: int
    height: int
    buffer: bytes = b""

    async def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            message = await self.ws.recv()
            assert isinstance(message, bytes), "the relay sends binary frames"
            self.buffer += message
        out, self.buffer = self.buffer[:size], self.buffer[size:]
        return out

    async def pointer(self, x: int, y: int, mask: int = 0) -> None:
        await self.ws.send(struct.pack(">BBHH", 5, mask, x, y))

    async def click(self, x: int, y: int) -> None:
        await self.pointer(x, y, 0)
        await self.pointer(x, y, 1)
        await self.pointer(x, y, 0)

    async def key(self, keysym: int) -> None:
        for down in (1, 0):
            await self.ws.send(struct.pack(">BBxxI", 4, down, keysym))

    async def type(self, text: str) -> None:
        for char in text:
            await self.key(ord(char) if ord(char) < 0x100 else 0x1000000 | ord(char))

    async def picture(self) -> Image.Image:
        """The whole screen as the relay sends it (one raw update, BGRX)."""
        await self.ws.send(struct.pack(">BBHHHH", 3, 0, 0, 0, self.width, self.height))
        while (kind := (await self.read(1))[0]) != 0:
            assert kind == 2, f"unexpected RFB message {kind}"  # a bell
        _, count = struct.unpack(">BH", await self.read(3))
        image = Image.new("RGB", (self.width, self.height))
        for _ in range(count):
            x, y, w, h, encoding = struct.unpack(">HHHHi", await self.read(12))
            assert encoding == 0, f"asked for raw, got encoding {encoding}"
            part = Image.frombytes("RGB", (w, h), await self.read(w * h * 4), "raw", "BGRX")
            image.paste(part, (x, y))
        return image

    async def frame(self, incremental: bool = False) -> int:
        """Ask for an update of the screen (all of it, or what changed) and read it (raw,
        32 bpp); its byte count. An incremental request is answered once something changed."""
        await self.ws.send(
            struct.pack(">BBHHHH", 3, int(incremental), 0, 0, self.width, self.height)
        )
        while True:
            kind = (await self.read(1))[0]
            if kind == 0:
                break
            if kind == 2:  # bell
                continue
            if kind == 3:  # server cut text
                await self.read(3)
                (size,) = struct.unpack(">I", await self.read(4))
                await self.read(size)
                continue
            raise AssertionError(f"unexpected RFB message {kind}")
        _, count = struct.unpack(">BH", await self.read(3))
        total = 0
        for _ in range(count):
            _, _, w, h, encoding = struct.unpack(">HHHHi", await self.read(12))
            assert encoding == 0, f"asked for raw, got encoding {encoding}"
            total += len(await self.read(w * h * 4))
        return total


async def open_session(url: str, **kwargs: Any) -> Session:
    """Connect, do the RFB handshake (None security), and read ServerInit."""
    ws = await connect(url, max_size=None, **kwargs)
    session = Session(ws, 0, 0)
    assert (await session.read(12)).startswith(b"RFB 003.")
    await ws.send(b"RFB 003.008\n")
    count = (await session.read(1))[0]
    assert list(await session.read(count)) == [1], "the relay offers no authentication"
    await ws.send(bytes([1]))
    assert struct.unpack(">I", await session.read(4))[0] == 0
    await ws.send(bytes([1]))  # ClientInit: shared
    width, height = struct.unpack(">HH", await session.read(4))
    await session.read(16)  # pixel format
    (name_len,) = struct.unpack(">I", await session.read(4))
    await session.read(name_len)
    session.width, session.height = width, height
    await ws.send(struct.pack(">BxxxBBBBHHHBBBxxx", 0, 32, 24, 0, 1, 255, 255, 255, 16, 8, 0))
    await ws.send(struct.pack(">BxH i", 2, 1, 0))  # SetEncodings: raw only
    return session
