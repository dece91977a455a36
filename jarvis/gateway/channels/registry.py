"""The channels of one gateway: the registered :class:`Channel` objects, the names it takes
messages from, each channel's rate limit, and the replies handed to the channel that asked.

Names: the built-in ones (:data:`~jarvis.gateway.channels.base.BUILTIN`), every registered
channel, and every ``channels.NAME`` block in settings (a bridge in another process that
posts to the control API). A message of any other channel is refused, and so is one that
comes through the control API in the name of a channel that takes its messages itself
(inbox, email, a plugin): a client cannot pass a message off as a mail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from jarvis.events import AgentWarning, Event, EventBus, ReplyReady
from jarvis.gateway.channels.base import (
    BUILTIN,
    ENTRY_POINT_GROUP,
    SELF_FED,
    Channel,
    ChannelHost,
)
from jarvis.safety.channel_policy import NAME

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 30.0
"""How long :meth:`Channels.stop` waits for replies still being delivered."""


class ChannelRefused(ValueError):
    """A message a channel may not hand in now; the message says why."""

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        """Set when the channel is rate limited: when it may try again."""


class Channels:
    """The registry; see the module doc."""

    def __init__(
        self, settings: Settings, bus: EventBus, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings
        self.bus = bus
        self._clock = clock
        self._channels: dict[str, Channel] = {}
        self._started: list[Channel] = []
        self._taken: dict[str, deque[float]] = {}
        self._deliveries: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None

    def add(self, channel: Channel) -> None:
        """Register ``channel``. Raises ValueError for a bad or taken name."""
        name = getattr(channel, "name", None)
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueError(f"channel {channel!r}: name {name!r} is not a channel name")
        if name in self._channels:
            raise ValueError(f"channel {name!r} is registered twice")
        self._channels[name] = channel

    def get(self, name: str) -> Channel | None:
        return self._channels.get(name)

    def names(self) -> list[str]:
        """Every channel the gateway takes messages from."""
        named = [*BUILTIN, *self._channels, *self.settings.channels]
        return list(dict.fromkeys(named))

    def admit(self, name: str, *, by_api: bool = False) -> None:
        """Count one message of channel ``name``, or raise :class:`ChannelRefused` (unknown
        channel, ``by_api`` for a channel that takes its messages itself, or over its
        ``channels.NAME.rate_limit``; then nothing is counted)."""
        if name not in self.names():
            raise ChannelRefused(
                f"unknown channel {name!r}; known: {', '.join(self.names())} "
                "(add a channels.NAME block in settings for a bridge)"
            )
        if by_api and (name in SELF_FED or name in self._channels):
            raise ChannelRefused(f"channel {name!r} takes its messages itself, not by the API")
        block = self.settings.channels.get(name)
        limit = block.rate_limit if block is not None else None
        if limit is None:
            return
        now = self._clock()
        taken = self._taken.setdefault(name, deque())
        while taken and now - taken[0] >= limit.window_s:
            taken.popleft()
        if len(taken) >= limit.max_messages:
            wait = taken[0] + limit.window_s - now
            raise ChannelRefused(
                f"channel {name!r} is rate limited: {limit.max_messages} message(s) per "
                f"{limit.window_s:g}s; try again in {wait:.1f}s",
                retry_after_s=wait,
            )
        taken.append(now)

    # -- lifecycle --
    async def start(self, host: ChannelHost) -> None:
        """Start every registered channel and hand each reply to the one that asked."""
        self._loop = asyncio.get_running_loop()
        self._unsubscribe = self.bus.subscribe(self._on_reply, ReplyReady)
        for channel in self._channels.values():
            await channel.start(host)
            self._started.append(channel)

    async def stop(self) -> None:
        """Stop taking replies, let those on their way finish (bounded), stop the channels."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._deliveries:
            await asyncio.wait(set(self._deliveries), timeout=STOP_TIMEOUT_S)
        while self._started:
            channel = self._started.pop()
            try:
                await channel.stop()
            except Exception:  # the boundary: one channel's failure must not keep others up
                log.exception("channel %s did not stop cleanly", channel.name)

    def _on_reply(self, event: Event) -> None:
        """(any thread) a task answered: hand the reply to its channel in the loop."""
        if not isinstance(event, ReplyReady) or self._loop is None:
            return
        if event.channel not in self._channels:
            return  # tui, web, api and bridges read it on the event stream
        with contextlib.suppress(RuntimeError):  # the loop has closed
            self._loop.call_soon_threadsafe(self._deliver, event)

    def _deliver(self, event: ReplyReady) -> None:
        channel = self._channels[event.channel]
        task = asyncio.ensure_future(_delivered(channel, event))
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)


async def _delivered(channel: Channel, reply: ReplyReady) -> None:
    try:
        await channel.deliver(reply)
    except Exception:  # the boundary: a reply that cannot be delivered is logged
        log.exception(
            "channel %s could not deliver the reply of task %s", channel.name, reply.task_id
        )


def load_plugins(settings: Settings, bus: EventBus) -> list[Channel]:
    """The channels installed as ``jarvis.channels`` entry points. One that cannot be
    loaded is skipped with a one-line error (log and warning event)."""
    found: list[Channel] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            factory = point.load()
            channel = factory(settings)
        except Exception as exc:  # the boundary: third-party code
            _skip(bus, f"channel plugin {point.name} ({point.value}) cannot be loaded: {exc}")
            continue
        if not isinstance(channel, Channel):
            _skip(bus, f"channel plugin {point.name}: {point.value} made no Channel")
        elif channel.name != point.name:
            _skip(bus, f"channel plugin {point.name}: its channel calls itself {channel.name!r}")
        elif point.name in BUILTIN:
            _skip(bus, f"channel plugin {point.name}: that name is built in")
        else:
            found.append(channel)
    return found


def _skip(bus: EventBus, message: str) -> None:
    log.error("%s; skipped", message)
    bus.emit(AgentWarning(message=f"{message}; skipped"))
