"""How a task's run ends on the books, wherever it ran (this process's agent worker, or a
fleet worker whose outcome the coordinator receives): ``todos.md`` (the commit point), the
archive of the messages it answered, and the replies to the channels that asked.

:func:`record_ending` runs in a thread holding the books lock; :func:`emit_replies` after
it, on the loop. See :mod:`jarvis.gateway.worker` for the order and why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarvis.events import EventBus, ReplyReady
from jarvis.gateway.markdown import format_timestamp, now
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import Todo, TodoList
from jarvis.task_words import status_word

if TYPE_CHECKING:
    from jarvis.agent.agent import TaskOutcome

log = logging.getLogger(__name__)

ENDED = ("completed", "failed", "cancelled", "needs_user")
"""Task statuses after which the task's messages are answered (archived)."""
STATUS_OF_RUN = {
    word: status_word(word) for word in ("finished", "failed", "needs_user", "cancelled")
}
"""The agent's ending words (its ``finished`` tool) as the API's (:mod:`jarvis.task_words`)."""


@dataclass
class RunRecord:
    """How one run of a task was recorded."""

    todo_id: str
    status: str
    """Written to todos.md: a final status, or ``pending`` (stopped, or updated meanwhile)."""
    summary: str = ""
    steps: int = 0
    answered: list[Message] = field(default_factory=list)
    """Messages archived with this run's outcome."""


@dataclass
class Ran:
    """What a run came to, before it is written."""

    outcome: TaskOutcome | None = None
    error: str | None = None
    stopped: bool = False
    by_person: bool = False
    committed: str | None = None
    """The summary written as ``completed`` when the verification passed (see verified)."""
    ended: tuple[str, str] | None = None
    """(status, summary) as todos.md words: an outcome that came from elsewhere (a fleet
    worker) rather than as a :class:`TaskOutcome`."""


def record_ending(todos: TodoList, queue: MessageQueue, started: Todo, ran: Ran) -> RunRecord:
    """Write how the run of ``started`` (the task as it was when the run began) ended."""
    seen = started.message_ids
    if ran.committed is not None:  # completed at the verdict; only the answers are left
        answered = answer_messages(queue, started, seen, "completed", ran.committed)
        return RunRecord(started.id, "completed", ran.committed, _steps(ran), answered)
    current = todos.get(started.id)
    if ran.stopped and current is not None and current.status == "completed":
        # the verdict was written and the stop cut the wait for it: never reopened
        done = current.summary or ""
        answered = answer_messages(queue, current, seen, "completed", done)
        return RunRecord(started.id, "completed", done, _steps(ran), answered)
    by_person = ran.by_person or (current is not None and current.status == "cancelled")
    cut = ran.ended is None and (ran.outcome is None or ran.outcome.status == "cancelled")
    if ran.stopped and cut and not by_person and current is not None:
        note = f"stopped while running ({format_timestamp(now())}): Jarvis shut down; pending"
        reopen(todos, started.id, note)
        return RunRecord(started.id, "pending", note, _steps(ran))
    status, summary = _verdict(ran)
    if current is None:
        log.warning("task %s left todos.md while it ran; answering its messages", started.id)
        answered = answer_messages(queue, started, seen, status, summary)
        return RunRecord(started.id, status, summary, _steps(ran), answered)
    if by_person:
        status = "cancelled"
        if not summary.startswith("cancelled by ") or summary.startswith("cancelled by user"):
            # set in todos.md by hand: a face's cancel already says who (cancelled by web)
            summary = f"cancelled in todos.md while it ran. {summary}".strip()
    late = [m for m in current.message_ids if m not in seen]
    if late and status != "cancelled":
        note = (
            f"the run ended {status} ({format_timestamp(now())}) before the update(s) "
            f"{', '.join(late)} arrived; pending again to apply them"
        )
        reopen(todos, started.id, note, summary)
        answered = answer_messages(queue, current, seen, status, summary)
        return RunRecord(started.id, "pending", summary, _steps(ran), answered)
    try:
        todos.finish(started.id, status, summary)  # the commit point
    except KeyError:
        log.warning("task %s left todos.md before its ending was written", started.id)
    answered = answer_messages(queue, current, current.message_ids, status, summary)
    return RunRecord(started.id, status, summary, _steps(ran), answered)


def reopen(todos: TodoList, todo_id: str, note: str, summary: str | None = None) -> None:
    todo = todos.get(todo_id)
    if todo is None:
        return
    fields: dict[str, Any] = {"status": "pending", "notes": [*todo.notes, note]}
    if summary is not None:
        fields["summary"] = summary
    try:
        todos.update(todo_id, **fields)
    except KeyError:
        log.warning("task %s left todos.md before it could be put back to pending", todo_id)


def answer_messages(
    queue: MessageQueue,
    todo: Todo,
    message_ids: list[str],
    status: str | None = None,
    summary: str | None = None,
) -> list[Message]:
    """Archive those of ``message_ids`` still in processing with the task's outcome."""
    status = status or todo.status
    summary = summary if summary is not None else todo.summary
    waiting = {m.id for m in queue.processing()}
    answered = []
    for message_id in message_ids:
        if message_id not in waiting:
            continue
        try:
            answered.append(queue.archive(message_id, status, todo.id, summary or None))
        except KeyError:
            log.warning("message %s left processing.md before it was archived", message_id)
    return answered


def unreplied_ending(queue: MessageQueue, todo: Todo) -> RunRecord:
    """The record of an ending already on the books whose replies were never sent (the
    process died between the ``todos.md`` write and the replies): the task's messages as
    they were archived, for :func:`emit_replies`."""
    answered = []
    for message_id in todo.message_ids:
        message = queue.find(message_id)
        if message is not None and message.task_id == todo.id:
            answered.append(message)
    return RunRecord(todo.id, todo.status, todo.summary or "", 0, answered)


def emit_replies(
    bus: EventBus, todo_id: str, messages: list[Message], status: str, text: str
) -> None:
    """One :class:`ReplyReady` per channel (and ``reply_to``) that asked."""
    groups: dict[tuple[str, str | None], list[Message]] = {}
    for message in messages:
        groups.setdefault((message.channel, message.reply_to), []).append(message)
    for (channel, reply_to), group in groups.items():
        bus.emit(
            ReplyReady(
                task_id=todo_id,
                channel=channel,
                reply_to=reply_to,
                message_ids=[m.id for m in group],
                status=status,
                text=text,
            )
        )


def settle_ended(
    todos: TodoList, queue: MessageQueue, running: set[str]
) -> list[tuple[Todo, list[Message]]]:
    """Archive messages in processing whose task already ended (a crash between the
    todos.md write and the archive write, or a status set by hand), except those of the
    tasks in ``running`` (their ending is on its way); runs nothing."""
    waiting = queue.processing()
    if not waiting:
        return []
    owners = {mid: t for t in todos.all() for mid in t.message_ids}
    ended: dict[str, Todo] = {}
    for message in waiting:
        todo = owners.get(message.id)
        if todo is not None and todo.status in ENDED and todo.id not in running:
            ended[todo.id] = todo
    settled = []
    for todo in ended.values():
        answered = answer_messages(queue, todo, todo.message_ids)
        if answered:
            log.warning(
                "task %s had ended (%s) but %d message(s) were not archived; archived now",
                todo.id,
                todo.status,
                len(answered),
            )
            settled.append((todo, answered))
    return settled


def _verdict(ran: Ran) -> tuple[str, str]:
    if ran.ended is not None:
        return ran.ended
    if ran.outcome is not None:
        return STATUS_OF_RUN[ran.outcome.status], ran.outcome.summary
    return "failed", f"the agent stopped with an error: {ran.error or 'no outcome'}"


def _steps(ran: Ran) -> int:
    return ran.outcome.steps if ran.outcome is not None else 0
