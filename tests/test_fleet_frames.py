"""The once-a-second picture of a worker's display through Redis (jarvis.fleet.frames),
for a coordinator on another machine: a real redis-server and a real Xvfb; the worker's
sender and the coordinator's reader talk only through Redis."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator

import pytest
from PIL import Image

from jarvis.desktop.x11 import XDisplay
from jarvis.fleet import frames, keys
from jarvis.fleet.connection import client
from jarvis.fleet.control import Control, parse, read
from jarvis.fleet.frames import FrameError, FrameSender, RemoteFrames
from tests.redis_server import RedisServer, redis_server
from tests.xserver import start_xvfb

__all__ = ["redis_server"]


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[object]:
    made = client(redis_server.url)
    yield made
    await made.aclose()


async def worker_side(redis: object, name: str, where: XDisplay) -> FrameSender:
    """A sender that obeys the ``frames`` asks on worker ``name``'s control stream."""
    sender = FrameSender(redis, name, where)  # type: ignore[arg-type]

    async def obey() -> None:
        after = "0-0"
        while True:
            after, messages = await read(redis, name, after, 1.0)  # type: ignore[arg-type]
            for message in messages:
                assert message.kind == "frames" and message.task == "-"
                sender.want(message)

    listener = asyncio.create_task(obey())
    sender.close_too = listener  # type: ignore[attr-defined]
    return sender


async def stop(sender: FrameSender) -> None:
    sender.close_too.cancel()  # type: ignore[attr-defined]
    await sender.close()


async def test_a_worker_sends_its_display_when_asked_and_stops_after(
    redis: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frames, "SEND_FOR_S", 2.0)
    with start_xvfb(640, 480) as screen:
        sender = await worker_side(redis, "w9", XDisplay(screen.display, screen.xauthority))
        try:
            reader = RemoteFrames(redis)  # type: ignore[arg-type]
            data = await reader.frame("w9", 1, 320)  # scaled as asked
            assert Image.open(io.BytesIO(data)).size == (320, 240)
            async with asyncio.timeout(20):  # no more asks: the pictures stop
                while sender._task is None or not sender._task.done():
                    await asyncio.sleep(0.1)
            [[entry, _]] = await redis.xrevrange(keys.frame_key("w9"), count=1)  # type: ignore[attr-defined]
            await asyncio.sleep(frames.SEND_EVERY_S * 2)
            [[still, _]] = await redis.xrevrange(keys.frame_key("w9"), count=1)  # type: ignore[attr-defined]
            assert still == entry  # nothing sent since
            assert await redis.xlen(keys.frame_key("w9")) == 1  # type: ignore[attr-defined]
        finally:
            await stop(sender)


async def test_a_display_that_cannot_be_captured_is_said_in_one_line(redis: object) -> None:
    sender = await worker_side(redis, "w8", XDisplay(":987"))
    try:
        with pytest.raises(FrameError, match=r"worker w8: no display to capture \(:987\)"):
            await RemoteFrames(redis).frame("w8", 1, 640)  # type: ignore[arg-type]
    finally:
        await stop(sender)


async def test_no_worker_answering_ends_in_one_line(
    redis: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frames, "WAIT_S", 0.5)
    with pytest.raises(FrameError, match="worker gone sent no picture of its display"):
        await RemoteFrames(redis).frame("gone", 1, 640)  # type: ignore[arg-type]


@pytest.mark.parametrize(("monitor", "max_side"), [("x", "640"), ("1", "10"), ("-1", "640")])
def test_a_malformed_ask_is_ignored(monitor: str, max_side: str) -> None:
    sender = FrameSender(None, "w", XDisplay(":1"))  # type: ignore[arg-type]
    sender.want(Control(kind="frames", task="-", monitor=monitor, max_side=max_side))
    assert sender._task is None and sender.until == 0.0


def test_a_frames_ask_names_no_task() -> None:
    parsed = parse("1-0", {b"kind": b"frames", b"monitor": b"2", b"max_side": b"800"})
    assert parsed == Control(kind="frames", task="-", monitor="2", max_side="800")
