"""The task list, ``data/todos.md``: what Jarvis will do, is doing and has done.

Tasks are in the format of :mod:`jarvis.gateway.todo_format`. The file is shared by the
daemon, the TUI and people with an editor: locked, written atomically, re-read when someone
else changed it, and a section that cannot be read stays as it is and is reported once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from jarvis.config import Settings
from jarvis.events import EventBus
from jarvis.gateway.markdown import (
    LOCK_TIMEOUT_S,
    Document,
    MarkdownFile,
    Problem,
    ProblemLog,
    format_timestamp,
    now,
    problems_of,
    retrying,
)
from jarvis.gateway.todo_format import (
    FINAL_STATUSES,
    OPEN_STATUSES,
    STATUSES,
    Todo,
    TodoStatus,
    next_id,
    parse_status,
    parse_todos,
    render_todos,
)

__all__ = [
    "FINAL_STATUSES",
    "OPEN_STATUSES",
    "STATUSES",
    "Todo",
    "TodoList",
    "TodoState",
    "TodoStatus",
]

log = logging.getLogger(__name__)
R = TypeVar("R")

TODOS_PREAMBLE = (
    "# Jarvis todos\n\n"
    "<!-- Jarvis keeps this list. To add a task by hand: a line `### [new] what to do`,\n"
    "     optionally `- priority: high`, then a description. -->"
)


# --- the list -----------------------------------------------------------------------
class TodoState(Exception):
    """A change that the task's current status does not allow."""


class TodoList:
    """``todos.md`` shared by the daemon, the TUI and people with an editor."""

    def __init__(
        self, data_dir: Path, *, bus: EventBus | None = None, lock_timeout: float = LOCK_TIMEOUT_S
    ) -> None:
        self.file = MarkdownFile(Path(data_dir) / "todos.md", lock_timeout=lock_timeout)
        self._problems = ProblemLog(bus)

    @classmethod
    def from_settings(cls, settings: Settings, bus: EventBus | None = None) -> TodoList:
        return cls(settings.data_dir, bus=bus)

    @property
    def path(self) -> Path:
        return self.file.path

    def _edit(self, change: Callable[[Document[Todo]], R], what: str) -> R:
        """Read, apply ``change`` (which sets ``doc.changed`` when it edits), write back."""
        with self.file.locked():

            def operation() -> R:
                snapshot = self.file.read()
                doc = parse_todos(snapshot.text)
                if snapshot.stamp is None:
                    doc.preamble = TODOS_PREAMBLE
                self._problems.report(problems_of(self.file.path, doc))
                result = change(doc)
                if doc.changed:
                    self.file.replace(snapshot, render_todos(doc))
                return result

            return retrying(operation, what)

    def _change(self, todo_id: str, what: str, edit: Callable[[Todo], dict[str, Any]]) -> Todo:
        def change(doc: Document[Todo]) -> Todo:
            for index, item in enumerate(doc.items):
                if isinstance(item, Todo) and item.id == todo_id.upper():
                    updated = Todo.model_validate(item.model_dump() | edit(item))
                    doc.items[index] = updated
                    doc.changed = True
                    return updated
            raise KeyError(f"no task {todo_id} in {self.path}")

        return self._edit(change, what)

    # -- reading --
    def all(self) -> list[Todo]:
        """Every readable task in file order (hand-written ones get ids written back)."""
        return self._edit(lambda doc: doc.entries(), "reading todos")

    def get(self, todo_id: str) -> Todo | None:
        return next((t for t in self.all() if t.id == todo_id.upper()), None)

    def find_by_message(self, message_id: str) -> Todo | None:
        """The task a message was routed to, if any (to skip routing it twice)."""
        return next((t for t in self.all() if message_id in t.message_ids), None)

    def open_tasks(self) -> list[Todo]:
        return [t for t in self.all() if t.is_open]

    def next_pending(self) -> Todo | None:
        """The pending task to run next: highest priority, then oldest."""
        pending = [(i, t) for i, t in enumerate(self.all()) if t.status == "pending"]
        pending.sort(key=lambda p: (-p[1].priority, p[1].created, p[0]))
        return pending[0][1] if pending else None

    def problems(self) -> list[Problem]:
        return problems_of(self.path, parse_todos(self.file.read().text))

    # -- writing --
    def add(
        self,
        title: str,
        description: str = "",
        source: str | None = None,
        message_ids: Iterable[str] = (),
        priority: int | str | None = None,
        reply_to: str | None = None,
        parent: str | None = None,
    ) -> Todo:
        def change(doc: Document[Todo]) -> Todo:
            todo = Todo(
                id=next_id(doc),
                title=title,
                description=description,
                source=source,
                message_ids=list(message_ids),
                priority=0 if priority is None else priority,
                reply_to=reply_to,
                parent=parent,
                created=now(),
            )
            doc.items.append(todo)
            doc.changed = True
            return todo

        return self._edit(change, "adding a task")

    def update(self, todo_id: str, **fields: Any) -> Todo:
        """Set fields (validated like a read); unknown field names are an error."""
        unknown = set(fields) - set(Todo.model_fields) | ({"id"} & set(fields))
        if unknown:
            raise TypeError(f"cannot update {', '.join(sorted(unknown))}")
        return self._change(todo_id, "updating a task", lambda todo: fields)

    def append_update(self, todo_id: str, text: str, message_id: str | None = None) -> Todo:
        """Merge more instructions into an open task; a task waiting for the user reopens."""

        def edit(todo: Todo) -> dict[str, Any]:
            if not todo.is_open:
                raise TodoState(f"{todo.id} is {todo.status}; only open tasks take updates")
            label = f"Update ({message_id}):" if message_id else "Update:"
            base = todo.description or todo.title  # the task stays what it was, first
            fields: dict[str, Any] = {
                "description": f"{base}\n\n{label}\n{text}".strip(),
                "message_ids": todo.message_ids + ([message_id] if message_id else []),
            }
            if todo.status == "needs_user":
                fields["status"] = "pending"
                fields["notes"] = [*todo.notes, f"the user answered ({format_timestamp(now())})"]
            return fields

        return self._change(todo_id, "merging into a task", edit)

    def mark_in_progress(self, todo_id: str) -> Todo:
        def edit(todo: Todo) -> dict[str, Any]:
            if todo.status not in ("pending", "needs_user"):
                raise TodoState(f"{todo.id} is {todo.status}; only a pending task can start")
            return {"status": "in_progress", "started": now(), "completed": None}

        return self._change(todo_id, "starting a task", edit)

    def finish(self, todo_id: str, status: str, summary: str | None = None) -> Todo:
        """Record how a task ended: completed, failed, needs_user or cancelled."""
        status = parse_status(status)
        if status not in FINAL_STATUSES:
            raise ValueError(f"finish() takes one of {', '.join(FINAL_STATUSES)}, not {status}")
        done = None if status == "needs_user" else now()
        return self._change(
            todo_id,
            "finishing a task",
            lambda todo: {"status": status, "summary": summary, "completed": done},
        )

    def recover(self) -> list[Todo]:
        """After a crash: tasks left in progress go back to pending, with a note."""

        def change(doc: Document[Todo]) -> list[Todo]:
            recovered = []
            for index, item in enumerate(doc.items):
                if isinstance(item, Todo) and item.status == "in_progress":
                    note = (
                        f"interrupted while in progress ({format_timestamp(now())}); pending again"
                    )
                    item = item.model_copy(
                        update={"status": "pending", "notes": [*item.notes, note]}
                    )
                    doc.items[index] = item
                    recovered.append(item)
                    doc.changed = True
                    log.warning(
                        "task %s was in progress when Jarvis stopped; pending again", item.id
                    )
            return recovered

        return self._edit(change, "recovering tasks")
