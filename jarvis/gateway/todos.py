"""The task list, ``data/todos.md``: what Jarvis will do, is doing and has just done.

Tasks are in the format of :mod:`jarvis.gateway.todo_format`. The file is shared by the
daemon, the TUI and people with an editor: locked, written atomically, re-read when someone
else changed it, and a section that cannot be read stays as it is and is reported once.

A change costs what it touches, not what the list has held (DESIGN section 14):

- the parsed list is kept in memory with each task's text, and parsed again only when the
  file's text is not what this process last read or wrote; a change is applied to a copy of
  it and written back whole (the list is bounded: open tasks and the newest ended ones);
- ended tasks beyond ``keep_ended`` move to the monthly archive
  (:mod:`jarvis.gateway.todo_archive`), written there before they leave the list;
- ids come from a counter (``todos/seq``) that never goes below the highest id in the list
  or the archive, so an id is never reused;
- an outside save (an editor's stale buffer) loses no task and no change of Jarvis's
  (:mod:`jarvis.gateway.todo_outside`);
- lookups by id and message id use indexes, falling back to the archive's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from jarvis.config import Settings
from jarvis.events import EventBus
from jarvis.gateway.locked_file import LOCK_TIMEOUT_S, MarkdownFile, Snapshot, retrying
from jarvis.gateway.markdown import (
    Document,
    Malformed,
    Problem,
    ProblemLog,
    format_timestamp,
    join_sections,
    now,
    problems_of,
)
from jarvis.gateway.todo_archive import (
    ENDED_STATUSES,
    IdCounter,
    TodoArchive,
    rotate,
    settle_list,
)
from jarvis.gateway.todo_format import (
    FINAL_STATUSES,
    OPEN_STATUSES,
    STATUSES,
    Todo,
    TodoStatus,
    format_id,
    format_todo,
    highest_number,
    parse_status,
    parse_todos,
)
from jarvis.gateway.todo_outside import WrittenVersions, reconcile

__all__ = [
    "ENDED_STATUSES",
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
DEFAULT_KEEP_ENDED = 50


# --- the list -----------------------------------------------------------------------
class TodoState(Exception):
    """A change that the task's current status does not allow."""


class TodoList:
    """``todos.md`` shared by the daemon, the TUI and people with an editor."""

    def __init__(
        self,
        data_dir: Path,
        *,
        bus: EventBus | None = None,
        lock_timeout: float = LOCK_TIMEOUT_S,
        keep_ended: int = DEFAULT_KEEP_ENDED,
    ) -> None:
        data_dir = Path(data_dir)
        self.file = MarkdownFile(data_dir / "todos.md", lock_timeout=lock_timeout)
        books = data_dir / "todos"
        self.archive = TodoArchive(books / "archive", books / "archive.sqlite")
        self.ids = IdCounter(books / "seq", self.archive)
        self.keep_ended = keep_ended
        self._problems = ProblemLog(bus)
        self._mutex = threading.RLock()
        self._snapshot = Snapshot("", None)
        self._unwritten = False
        """Set when the kept list differs from the file's text it was read from (its write
        back failed): the next read compares them again."""
        self._doc: Document[Todo] | None = None
        self._texts: dict[str, tuple[Todo, str]] = {}
        self._written = WrittenVersions()
        self._by_id: dict[str, Todo] = {}
        self._by_message: dict[str, str] = {}
        self.version = 0
        """Bumped by every change this list sees (its own or read from the file)."""
        self._touched: dict[str, int] = {}

    @classmethod
    def from_settings(cls, settings: Settings, bus: EventBus | None = None) -> TodoList:
        return cls(settings.data_dir, bus=bus, keep_ended=settings.todos.keep_ended)

    @property
    def path(self) -> Path:
        return self.file.path

    # -- the kept copy --
    def _edit(self, change: Callable[[Document[Todo]], R], what: str) -> R:
        """Apply ``change`` to a copy of the list (it sets ``doc.changed`` when it edits);
        write the copy back when anything changed, and keep it."""
        with self._mutex, self.file.locked():

            def operation() -> R:
                current = self._current(write=False)  # a repair is written with the change
                doc = Document(current.preamble, list(current.items), current.changed)
                doc.warnings = current.warnings
                result = change(doc)
                if doc.changed:
                    rotate(self.archive, doc, self.keep_ended)
                    self._write(doc)
                return result

            return retrying(operation, what)

    def _current(self, write: bool = True) -> Document[Todo]:
        """The kept list, parsed again (and checked against an outside save) when the
        file's text is not what this process last read or wrote; a repair of it is written
        back at once, or (``write`` False) left marked ``changed`` for the caller's write."""
        snapshot = self.file.read()
        kept = self._doc
        if kept is not None and snapshot.text == self._snapshot.text and not self._unwritten:
            self._snapshot = snapshot
            return kept
        doc = parse_todos(snapshot.text, first_free=self._next_number(None))
        if snapshot.stamp is None:
            doc.preamble = TODOS_PREAMBLE
        self._problems.report(problems_of(self.file.path, doc))
        if kept is not None:
            reconcile(kept, doc, self._written, self._archived)
        else:
            settle_list(self.archive, doc)
        rotate(self.archive, doc, self.keep_ended)
        self._snapshot = snapshot
        self._adopt(doc, kept)
        if doc.changed and not write:
            self._unwritten = True
        elif doc.changed:  # ids filled in, tasks restored or moved: write it back now
            try:
                self._write(doc)
            except Exception:
                # the kept list is not what the file says: the next read must compare them
                # again even if the file is back to the text just read (an editor saving
                # the same stale buffer twice)
                self._unwritten = True
                raise
        return doc

    def _archived(self, ids: list[str]) -> set[str]:
        return set(self.archive.holds(ids))

    def _adopt(self, doc: Document[Todo], before: Document[Todo] | None) -> None:
        """Keep ``doc``: indexes, and which tasks changed (for :meth:`changed_since`)."""
        old = {t.id: t for t in before.entries()} if before is not None else {}
        self.version += 1
        self._by_id, self._by_message = {}, {}
        for todo in doc.entries():
            self._by_id[todo.id] = todo
            for message_id in todo.message_ids:
                self._by_message.setdefault(message_id, todo.id)
            previous = old.get(todo.id)
            if previous is not todo and previous != todo:
                self._touched[todo.id] = self.version
        if len(self._touched) > len(self._by_id):
            self._touched = {i: v for i, v in self._touched.items() if i in self._by_id}
        self._doc = doc

    def _render(self, doc: Document[Todo]) -> tuple[str, list[tuple[str, str]]]:
        """The file's text, each task formatted once per version of it, and the tasks'
        texts that are new in it."""
        blocks, fresh = [], []
        for item in doc.items:
            if isinstance(item, Malformed):
                blocks.append(item.raw)
                continue
            hit = self._texts.get(item.id)
            if hit is None or hit[0] is not item:
                hit = self._texts[item.id] = (item, format_todo(item))
                fresh.append((item.id, hit[1]))
            blocks.append(hit[1])
        if len(self._texts) > len(blocks):
            present = {item.id for item in doc.entries()}
            self._texts = {i: hit for i, hit in self._texts.items() if i in present}
            self._written.keep_only(present)
        return join_sections(doc.preamble, blocks), fresh

    def _write(self, doc: Document[Todo]) -> None:
        text, fresh = self._render(doc)
        self.file.replace(self._snapshot, text)
        for todo_id, task_text in fresh:  # only versions that reached the file
            self._written.add(todo_id, task_text)
        doc.changed = False
        self._unwritten = False
        self._snapshot = Snapshot(text, self.file.stamp())
        self._adopt(doc, self._doc)

    # -- ids --
    def _next_number(self, doc: Document[Todo] | None) -> int:
        """The next free task number: above the counter, the list and the archive."""
        return max(self.ids.highest(), highest_number(doc) if doc is not None else 0) + 1

    def _change(self, todo_id: str, what: str, edit: Callable[[Todo], dict[str, Any]]) -> Todo:
        def change(doc: Document[Todo]) -> Todo:
            key = todo_id.strip().upper()
            for index, item in enumerate(doc.items):
                if isinstance(item, Todo) and item.id == key:
                    updated = Todo.model_validate(item.model_dump() | edit(item))
                    doc.items[index] = updated
                    doc.changed = True
                    return updated
            archived = self.archive.get(key)
            if archived is not None:
                raise TodoState(f"{key} is {archived.status}; it has ended and was archived")
            raise KeyError(f"no task {todo_id} in {self.path}")

        return self._edit(change, what)

    # -- reading --
    def all(self) -> list[Todo]:
        """Every readable task of the list in file order (hand-written ones get ids written
        back); archived tasks are not in it."""
        return self._read(lambda: list(self._by_id.values()))

    def _read(self, look: Callable[[], R]) -> R:
        with self._mutex, self.file.locked():
            retrying(self._current, "reading todos")
            return look()

    def get(self, todo_id: str) -> Todo | None:
        """A task of the list or of the archive."""
        todo_id = todo_id.strip().upper()
        found = self._read(lambda: self._by_id.get(todo_id))
        return found if found is not None else self.archive.get(todo_id)

    def find_by_message(self, message_id: str) -> Todo | None:
        """The task a message was routed to, if any (in the list or the archive)."""
        task_id = self._read(lambda: self._by_message.get(message_id))
        if task_id is not None:
            return self._by_id.get(task_id) or self.get(task_id)
        return self.archive.find_by_message(message_id)

    def open_tasks(self) -> list[Todo]:
        return self._read(lambda: [t for t in self._by_id.values() if t.is_open])

    def next_pending(self) -> Todo | None:
        """The pending task to run next: highest priority, then oldest."""

        def pick() -> Todo | None:
            pending = [(i, t) for i, t in enumerate(self._by_id.values()) if t.status == "pending"]
            if not pending:
                return None
            return min(pending, key=lambda p: (-p[1].priority, p[1].created, p[0]))[1]

        return self._read(pick)

    def changed_since(self, version: int) -> tuple[int, list[Todo]]:
        """The tasks of the list that changed after ``version`` (0: all), and the version
        to ask with next time."""

        def look() -> tuple[int, list[Todo]]:
            touched = [self._by_id.get(i) for i, v in self._touched.items() if v > version]
            return self.version, [t for t in touched if t is not None]

        return self._read(look)

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
                id=format_id(self.ids.take(self._next_number(doc))),
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
