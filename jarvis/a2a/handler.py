"""The A2A request handler: each method a client of the daemon (:mod:`jarvis.a2a.daemon`).

A2A task id = the message id of the a2a-channel message; the context id is that message's
``reply_to``. Streams are read from the run journal (the source of every event, with its
``seq``), so a reconnect loses nothing. Push notifications are off. Every refusal is an
A2A error with one sentence.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    PushNotificationNotSupportedError,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
    UnsupportedOperationError,
)

from jarvis.a2a.card import agent_card
from jarvis.a2a.daemon import CHANNEL, A2ADaemon
from jarvis.a2a.states import INTERRUPTED, TERMINAL, Mapper, artifacts, status, task_of
from jarvis.gateway.channels.registry import ChannelRefused
from jarvis.gateway.todos import Todo, TodoState

S = TaskState
MAX_PAGE = 100
NO_PUSH = "push notifications are off for Jarvis (capabilities.pushNotifications is false)"


def _text(message: Message) -> str:
    if any(not p.HasField("text") for p in message.parts):
        raise InvalidParamsError(message="Jarvis takes text parts only (text/plain)")
    text = "\n".join(p.text for p in message.parts).strip()
    if not text:
        raise InvalidParamsError(message="the message has no text")
    return text


def _after(context: ServerCallContext) -> int:
    """A ``Last-Event-ID`` header (the seq of the last update a client has)."""
    value = str(context.state.get("headers", {}).get("last-event-id", "")).strip()
    if not value:
        return 0
    if not value.isdigit() or len(value) > 18:
        raise InvalidParamsError(message="Last-Event-ID must be a sequence number")
    return int(value)


class JarvisHandler(RequestHandler):
    """See the module doc."""

    def __init__(self, daemon: A2ADaemon) -> None:
        self.daemon = daemon
        self._rejected: dict[str, Task] = {}
        """Messages the a2a channel's policy refused (never queued): REJECTED tasks."""

    # -- reading --
    async def _lookup(self, task_id: str) -> tuple[Todo | None, str, str]:
        """(todo or None while queued, context id, request text); TaskNotFoundError."""
        todo = await self.daemon.todo_of(task_id)
        if todo is not None and todo.source == CHANNEL:
            return todo, todo.reply_to or "", todo.description
        message = await self.daemon.message(task_id) if todo is None else None
        if message is None or message.channel != CHANNEL:
            raise TaskNotFoundError(message=f"no A2A task {task_id}")
        return None, message.reply_to or "", message.text

    async def _task(self, task_id: str, with_artifacts: bool = True) -> Task:
        if task_id in self._rejected:
            return self._rejected[task_id]
        todo, context_id, request = await self._lookup(task_id)
        records = await self.daemon.journal(todo.id) if todo is not None else []
        found = None
        if with_artifacts and todo is not None and todo.status == "completed":
            found = await self._artifacts(todo, records)
        return task_of(task_id, context_id, todo, records, found, request)

    async def _artifacts(self, todo: Todo, records: list[dict[str, Any]]) -> Any:
        folder = self.daemon.run_folder(todo.id)
        return await asyncio.to_thread(artifacts, self.daemon.data_dir, folder, todo, records)

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        task = await self._task(params.id)
        if params.HasField("history_length"):
            del task.history[: max(0, len(task.history) - params.history_length)]
        return task

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        todos = [t for t in await self.daemon.todos() if t.source == CHANNEL and t.message_ids]
        if params.context_id:
            todos = [t for t in todos if t.reply_to == params.context_id]
        tasks = [await self._task(t.message_ids[0], params.include_artifacts) for t in todos]
        tasks += [
            t
            for t in self._rejected.values()
            if t.context_id in ("", params.context_id) or not params.context_id
        ]
        if params.status:
            tasks = [t for t in tasks if t.status.state == params.status]
        tasks.reverse()  # newest first
        size = min(params.page_size or 50, MAX_PAGE)
        try:
            start = int(params.page_token or 0)
        except ValueError:
            raise InvalidParamsError(message="page_token is not one this server gave") from None
        page = tasks[start : start + size]
        for task in page:
            if params.HasField("history_length"):
                del task.history[: max(0, len(task.history) - params.history_length)]
        more = start + size < len(tasks)
        return ListTasksResponse(
            tasks=page,
            next_page_token=str(start + size) if more else "",
            page_size=size,
            total_size=len(tasks),
        )

    # -- changing --
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        todo, _, _ = await self._lookup(params.id)
        if todo is None:
            raise TaskNotCancelableError(message=f"{params.id} is still being queued; try again")
        try:
            await self.daemon.cancel(todo.id)
        except (KeyError, TodoState) as exc:
            raise TaskNotCancelableError(
                message=f"task {params.id} cannot be cancelled: {exc}"
            ) from None
        return await self._task(params.id)

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        task_id = ""
        async for event in self.on_message_send_stream(params, context):
            if isinstance(event, Task):
                task_id = event.id
                if params.configuration.return_immediately or event.status.state in TERMINAL:
                    return event
        return await self._task(task_id)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        message = params.message
        text = _text(message)
        if message.task_id:
            todo, context_id, _ = await self._lookup(message.task_id)
            if message.context_id and message.context_id != context_id:
                raise InvalidParamsError(message="context_id is not the task's context")
            if todo is None or not todo.is_open:
                state = "queued" if todo is None else todo.status
                raise UnsupportedOperationError(
                    message=f"task {message.task_id} is {state} and takes no message now; "
                    "send a new message (no task_id) in the same context for a new task"
                )
            records = await self.daemon.journal(todo.id)
            cursor = records[-1]["seq"] if records else 0
            await self._submit(self.daemon.answer(todo.id, text, context_id))
            yield await self._task(message.task_id, with_artifacts=False)
            async for event in self._follow(message.task_id, context_id, cursor, answered=True):
                yield event
            return
        context_id = message.context_id or str(uuid.uuid4())
        try:
            task_id = await self._submit(self.daemon.submit(text, context_id))
        except ChannelRefused as exc:
            yield self._reject(context_id, str(exc))
            return
        yield task_of(task_id, context_id, None, [], request=text)
        async for event in self._follow(task_id, context_id, 0):
            yield event

    async def _submit(self, call: Any) -> str:
        try:
            result: str = await call
        except ValueError as exc:
            raise InvalidParamsError(message=str(exc)) from None
        return result

    def _reject(self, context_id: str, reason: str) -> Task:
        task_id = f"rejected-{uuid.uuid4().hex[:12]}"
        task = Task(
            id=task_id,
            context_id=context_id,
            status=status(S.TASK_STATE_REJECTED, f"refused: {reason}", task_id, context_id, "r"),
        )
        self._rejected[task_id] = task
        return task

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        after = _after(context)
        task = await self._task(params.id, with_artifacts=False)
        if task.status.state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {params.id} has ended ({S.Name(task.status.state)}); "
                "GetTask gives its result"
            )
        yield task
        async for event in self._follow(params.id, task.context_id, after):
            yield event

    async def _follow(
        self, task_id: str, context_id: str, after: int, answered: bool = False
    ) -> AsyncGenerator[Any]:
        """The task's updates after journal line ``after``, until it ends or asks."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def poke(_: Any) -> None:
            loop.call_soon_threadsafe(wake.set)

        unlisten = self.daemon.listen(poke)
        unreply = self.daemon.on_reply(poke)
        mapper = Mapper(task_id, context_id)
        try:
            seen = 0
            while True:
                wake.clear()
                todo = await self.daemon.todo_of(task_id)
                records = await self.daemon.journal(todo.id) if todo is not None else []
                for index, record in enumerate(records):
                    if index < seen:
                        continue
                    seen = index + 1
                    ending = None
                    if record.get("kind") == "reply_ready" and record.get("status") == "completed":
                        ending = await self._artifacts(todo, records) if todo else None
                    for event in mapper.update(record, ending):
                        if record["seq"] <= after:
                            continue
                        yield event
                        if isinstance(event, TaskStatusUpdateEvent) and self._ends(
                            event, records[seen:]
                        ):
                            return
                ended = todo is not None and todo.status in ("completed", "failed", "cancelled")
                if ended and not records:  # it never ran: no journal to say so
                    assert todo is not None
                    yield await self._ending(task_id, context_id, todo, records)
                    return
                await wake.wait()
        finally:
            unlisten()
            unreply()

    def _ends(self, event: TaskStatusUpdateEvent, later: list[dict[str, Any]]) -> bool:
        state = event.status.state
        if state in TERMINAL:
            return True
        return state in INTERRUPTED and state == S.TASK_STATE_INPUT_REQUIRED and not later

    async def _ending(
        self, task_id: str, context_id: str, todo: Todo, records: list[dict[str, Any]]
    ) -> TaskStatusUpdateEvent:
        """A task that ended without a journal line saying so (cancelled before it ran)."""
        task = task_of(task_id, context_id, todo, records)
        return TaskStatusUpdateEvent(
            task_id=task_id, context_id=context_id, status=task.status, metadata={"seq": 0}
        )

    # -- cards and push --
    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        host = str(context.state.get("headers", {}).get("host", "127.0.0.1"))
        return agent_card(self.daemon.settings, f"http://{host}", extended=True)

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError(message=NO_PUSH)

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError(message=NO_PUSH)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError(message=NO_PUSH)

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError(message=NO_PUSH)
