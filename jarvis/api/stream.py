"""The live event stream: journal lines fanned out to SSE clients that never hold up the agent.

:class:`EventHub` listens to the daemon's journal (through its service): each line,
once on disk, is encoded as one SSE frame (once, for all clients) and put into every
subscriber's bounded queue. Nothing waits: a subscriber whose queue is full is marked
overflowed and its queue dropped; its stream then sends a ``gap`` event and reads what it
missed from the journal, and goes on live. :func:`event_stream` is one client's stream:
history first (from the journal), then live lines, each ``seq`` once and in order.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.events import Event
from jarvis.redaction import redact
from jarvis.runs.journal import JournalLine
from jarvis.runs.reader import events_after, newest_seq_on_disk, run_events

if TYPE_CHECKING:
    from jarvis.gateway.service import DaemonService

RETRY_MS = 1000
NOTICE = -1
"""The seq of a frame with no journal line (an event of no task a person must see)."""
"""What the browser waits before it reconnects by itself."""


def frame(seq: int, kind: str, text: str) -> bytes:
    """One SSE event: ``id`` the seq, ``event`` the kind, ``data`` the journal line."""
    return f"id: {seq}\nevent: {kind}\ndata: {text}\n\n".encode()


def record_frame(record: dict[str, Any]) -> bytes:
    """The frame of a journal line read back from disk (the same JSON text as written)."""
    text = json.dumps(record, ensure_ascii=False, default=str)
    return frame(int(record["seq"]), str(record["kind"]), text)


def gap_frame(after: int) -> bytes:
    """Sent to a client that fell behind; no ``id``, so its Last-Event-ID stays put."""
    return f'event: gap\ndata: {{"kind": "gap", "after": {after}}}\n\n'.encode()


class Subscriber:
    """One client's bounded queue of (seq, frame); overflow drops it and sets a flag."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.queue: deque[tuple[int, bytes]] = deque()
        self.overflowed = False
        self.wake = asyncio.Event()
        self.gaps = 0

    def push(self, seq: int, data: bytes) -> None:
        if not self.overflowed:
            if len(self.queue) >= self.size:
                self.overflowed = True
                self.gaps += 1
                self.queue.clear()
            else:
                self.queue.append((seq, data))
        self.wake.set()

    def take(self) -> list[tuple[int, bytes]]:
        items = list(self.queue)
        self.queue.clear()
        return items

    def resume(self) -> None:
        """After a gap: live again from now (the caller reads the journal for the rest)."""
        self.overflowed = False
        self.queue.clear()


class EventHub:
    """Fans journal lines out to subscribers on the event loop (see the module doc)."""

    def __init__(self, service: DaemonService, loop: asyncio.AbstractEventLoop, size: int) -> None:
        self.service = service
        self.loop = loop
        self.size = size
        self.subscribers: set[Subscriber] = set()
        self.last_seq = newest_seq_on_disk(service.data_dir / "runs")
        """The newest seq known: on disk at the start, then each line delivered."""
        self._loop_thread = threading.get_ident()
        self._scheduled = 0
        self.closed = False
        self._unlisten: Callable[[], None] = service.listen(self._on_line)
        self._unnotice: Callable[[], None] = service.on_notice(self._on_notice)

    def close(self) -> None:
        self._unlisten()
        self._unnotice()

    def shutdown(self) -> None:
        """End every stream (the server is stopping)."""
        self.closed = True
        for sub in self.subscribers:
            sub.wake.set()

    def subscribe(self) -> Subscriber:
        sub = Subscriber(self.size)
        self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def _on_line(self, line: JournalLine) -> None:
        """Called by the writer, in seq order, from whichever thread emitted the event."""
        data = frame(line.seq, line.kind, line.text)
        if threading.get_ident() == self._loop_thread and not self._scheduled:
            self._deliver(line.seq, data)
            return
        self._scheduled += 1  # keep the order behind lines already handed to the loop
        try:
            self.loop.call_soon_threadsafe(self._deliver_scheduled, line.seq, data)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._scheduled -= 1

    def _on_notice(self, event: Event) -> None:
        """An event of no task (``routing_failed``): to every client now, without an ``id``
        (it has no journal line; it comes again at the next try)."""
        text = redact(json.dumps(event.model_dump(mode="json"), ensure_ascii=False, default=str))
        data = f"event: {event.kind}\ndata: {text}\n\n".encode()
        if threading.get_ident() == self._loop_thread and not self._scheduled:
            self._deliver(NOTICE, data)
            return
        self._scheduled += 1
        try:
            self.loop.call_soon_threadsafe(self._deliver_scheduled, NOTICE, data)
        except RuntimeError:
            self._scheduled -= 1

    def _deliver_scheduled(self, seq: int, data: bytes) -> None:
        self._scheduled -= 1
        self._deliver(seq, data)

    def _deliver(self, seq: int, data: bytes) -> None:
        if seq != NOTICE:
            self.last_seq = max(self.last_seq, seq)
        for sub in self.subscribers:
            sub.push(seq, data)


async def event_stream(
    hub: EventHub, data_dir: Path, after: int | None, heartbeat_s: float
) -> AsyncIterator[bytes]:
    """One client's SSE body: with ``after``, every line after it (journal, then live);
    without, the running task's lines so far, then live."""
    sub = hub.subscribe()
    try:
        yield f"retry: {RETRY_MS}\n\n".encode()
        if after is None:
            state = hub.service.state()
            last = max(hub.last_seq, state.last_seq)
            task = state.running
            history = await asyncio.to_thread(run_events, data_dir, task) if task else []
        else:
            last = after
            history = await asyncio.to_thread(_read_after, data_dir, after)
        if history:
            yield b"".join(record_frame(r) for r in history)
            last = max(last, int(history[-1]["seq"]))
        while not hub.closed:
            if sub.overflowed:
                sub.resume()
                yield gap_frame(last)
                missed = await asyncio.to_thread(_read_after, data_dir, last)
                if missed:
                    yield b"".join(record_frame(r) for r in missed)
                    last = int(missed[-1]["seq"])
                continue
            items = sub.take()
            if not items:
                sub.wake.clear()
                try:
                    await asyncio.wait_for(sub.wake.wait(), heartbeat_s)
                except TimeoutError:
                    yield b": ping\n\n"
                continue
            fresh = [data for seq, data in items if seq > last or seq == NOTICE]
            if fresh:
                last = max([last, *(seq for seq, _ in items)])
                yield b"".join(fresh)
    finally:
        hub.unsubscribe(sub)


def _read_after(data_dir: Path, after: int) -> list[dict[str, Any]]:
    return list(events_after(data_dir, after))
