"""The daemon as A2A sees it: submit, answer, cancel, and read tasks and their journal.

One small interface over the daemon's service facade
(:class:`~jarvis.gateway.service.DaemonService`), the same one the control API's routes
call: A2A never touches the gateway itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jarvis.config import Settings
from jarvis.events import Event
from jarvis.gateway.message_format import Message
from jarvis.gateway.router import ANSWERS, NEW_TASK
from jarvis.gateway.service import DaemonService
from jarvis.gateway.todos import Todo
from jarvis.runs.journal import Listener
from jarvis.runs.reader import find_run, read_events

CHANNEL = "a2a"


class A2ADaemon:
    """What the A2A handler may do with the daemon (see the module doc)."""

    def __init__(self, service: DaemonService) -> None:
        self._service = service

    @property
    def settings(self) -> Settings:
        return self._service.settings

    @property
    def data_dir(self) -> Path:
        return self._service.data_dir

    async def submit(self, text: str, context_id: str) -> str:
        """A new task of the a2a channel (never merged); its message id. Raises
        ChannelRefused (rate limit) or ValueError (no text)."""
        sent = await self._service.submit(
            text, CHANNEL, reply_to=context_id, meta={NEW_TASK: "yes"}
        )
        return sent.message_id

    async def answer(self, todo_id: str, text: str, context_id: str) -> str:
        """A message addressed to an open task (its ``call_user`` answer): the router
        merges it into the task."""
        sent = await self._service.submit(
            text, CHANNEL, reply_to=context_id, meta={ANSWERS: todo_id}
        )
        return sent.message_id

    async def cancel(self, todo_id: str) -> Todo:
        """Cancel an open task (KeyError: none; TodoState: it has ended)."""
        return await self._service.cancel(todo_id, CHANNEL)

    async def message(self, message_id: str) -> Message | None:
        return await self._service.message(message_id)

    async def todo_of(self, message_id: str) -> Todo | None:
        return await self._service.task_of_message(message_id)

    async def todos(self) -> list[Todo]:
        return await self._service.tasks()

    async def journal(self, todo_id: str) -> list[dict[str, Any]]:
        """The task's journal lines (empty before it first ran)."""
        return await asyncio.to_thread(self._journal, todo_id)

    def _journal(self, todo_id: str) -> list[dict[str, Any]]:
        folder = find_run(self.data_dir, todo_id)
        return list(read_events(folder / "events.jsonl")) if folder is not None else []

    def run_folder(self, todo_id: str) -> Path | None:
        return find_run(self.data_dir, todo_id)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Every journal line once written (called in the writer's thread)."""
        return self._service.listen(listener)

    def on_reply(self, handler: Callable[[Event], None]) -> Callable[[], None]:
        """Every ``reply_ready`` event (a task ended or asks), journaled or not: a task
        cancelled before it ran has no journal."""
        return self._service.on_reply(handler)
