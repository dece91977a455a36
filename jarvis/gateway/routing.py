"""The gateway's routing loop: inbox messages, one at a time, onto ``todos.md``.

It claims the most urgent inbox message, lets the
:class:`~jarvis.gateway.router.MessageRouter` merge it into an open task or make a new one
(under the books' lock), and wakes the runner. A message the router cannot take (the model
refuses its key, a bug) goes back to the inbox with a ``routing_failed`` event and is tried
again after a backoff (doubling from ``retry_s``, at most ``ROUTING_RETRY_MAX_S``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from jarvis.events import EventBus, RoutingFailed
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.router import Backoff
from jarvis.gateway.runner import GatewayReport, wait_any

if TYPE_CHECKING:
    from jarvis.gateway.channels.inbox import InboxChannel
    from jarvis.gateway.router import MessageRouter

log = logging.getLogger(__name__)

ROUTING_RETRY_MAX_S = 300.0


class RoutingLoop:
    """Routes what waits in the inbox (see the module doc)."""

    def __init__(
        self,
        queue: MessageQueue,
        bus: EventBus,
        report: GatewayReport,
        *,
        books: asyncio.Lock,
        work: asyncio.Event,
        stopping: Callable[[], bool],
        retry_s: float,
    ) -> None:
        self.queue = queue
        self.bus = bus
        self.report = report
        self.books = books
        self.work = work
        self.stopping = stopping
        self.backoff = Backoff(retry_s, ROUTING_RETRY_MAX_S)
        """Messages whose routing failed wait in the inbox until tried again."""

    async def route(self, router: MessageRouter, message: Message) -> bool:
        """One message onto todos.md; False when it went back to the inbox."""
        try:
            async with self.books:
                routed = await router.route(message)
        except Exception as exc:  # the boundary: the message waits in the inbox
            await self._failed(message, exc)
            return False
        self.backoff.routed(message.id)
        if routed.action != "existing":
            self.report.routed += 1
            log.info("message %s -> %s (%s)", message.id, routed.todo.id, routed.action)
        return True

    async def _failed(self, message: Message, exc: Exception) -> None:
        """Back to the inbox with a backoff, and said where a person sees it."""
        from jarvis.gateway.router import failure_text

        wait = self.backoff.failed(message.id)
        error, bug = failure_text(exc)
        # (a bug's traceback goes to the log; a provider's answer is one line)
        log.error("message %s waits in the inbox: %s", message.id, error, exc_info=bug)
        try:
            await asyncio.to_thread(self.queue.release, message.id)
        except Exception:  # it stays in processing; recovery routes it at the next start
            log.exception("message %s could not go back to the inbox", message.id)
        self.bus.emit(
            RoutingFailed(
                message_id=message.id, channel=message.channel, error=error, retry_in_s=wait
            )
        )

    async def route_waiting(self, router: MessageRouter) -> int:
        """Claim and route inbox messages one by one; those whose routing failed wait
        until their backoff is over."""
        routed = 0
        while not self.stopping():
            held = self.backoff.held()
            claimed = await asyncio.to_thread(self.queue.claim_next, held)
            if claimed is None:
                break
            routed += await self.route(router, claimed)
        if routed:
            self.work.set()
        return routed

    async def forever(
        self, channel: InboxChannel, router: MessageRouter, stop: asyncio.Event, poll_s: float
    ) -> None:
        """Route as messages arrive (or every ``poll_s``) until ``stop``."""
        while not self.stopping():
            await self.route_waiting(router)
            await wait_any([channel.arrived, stop], poll_s)
            channel.arrived.clear()
