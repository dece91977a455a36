"""The :class:`Channel` protocol: a source of tasks that the gateway starts, stops, and
hands each reply to.

A channel is registered with the gateway (:class:`jarvis.gateway.channels.registry.Channels`):
the built-in inbox and email channels, and third-party ones installed as entry points in
the group ``jarvis.channels``. The entry point's name is the channel's name (the ``via:``
of its messages); its object is called with the :class:`~jarvis.config.Settings` and
returns the channel::

    [project.entry-points."jarvis.channels"]
    slack = "jarvis_slack:SlackChannel"

Once started, a channel hands messages in with ``await host.submit(text, channel=NAME,
reply_to=...)`` and gets every :class:`~jarvis.events.ReplyReady` of a task one of its
messages asked for in :meth:`Channel.deliver`. Its tasks run under its ``channels.NAME``
policy block. A channel living in another process (a Slack or Matrix bridge) needs no
plugin: it posts to ``POST /api/messages`` with its name and a ``reply_to``, and reads
the ``reply_ready`` events of ``GET /api/events``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.events import EventBus, ReplyReady
    from jarvis.gateway.message_format import Message

ENTRY_POINT_GROUP = "jarvis.channels"
BUILTIN = ("inbox", "tui", "web", "api", "email", "a2a", "mcp", "schedule")
"""Channel names the gateway always knows (tui, web and api answer on the event stream)."""
SELF_FED = frozenset({"inbox", "email", "schedule"})
"""Built-in channels that take their messages themselves (never through the control API)."""


class ChannelHost(Protocol):
    """What a running channel may use of the gateway."""

    settings: Settings
    bus: EventBus

    async def submit(
        self,
        text: str,
        channel: str,
        *,
        sender: str = "user",
        priority: int | str | None = None,
        reply_to: str | None = None,
        meta: dict[str, str] | None = None,
        message_id: str | None = None,
    ) -> Message:
        """Put a message of ``channel`` into the inbox and route it. Raises
        :class:`~jarvis.gateway.channels.registry.ChannelRefused` (unknown channel, rate
        limited) or ValueError (no text)."""
        ...


@runtime_checkable
class Channel(Protocol):
    """A source of tasks: started and stopped with the daemon, answered by :meth:`deliver`."""

    name: str

    async def start(self, host: ChannelHost) -> None: ...

    async def stop(self) -> None: ...

    async def deliver(self, reply: ReplyReady) -> None:
        """Answer whoever asked (``reply.reply_to``): the task ended or asks something."""
        ...
