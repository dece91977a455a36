"""Ended tasks that left ``todos.md``: ``DATA/todos/archive/YYYY-MM.md``, and their index.

An archive file is in the format of ``todos.md`` (:mod:`jarvis.gateway.todo_format`), one
per month of the tasks' ending, and only grows: a move appends the tasks' sections (one
write, then fsync) before :class:`jarvis.gateway.todos.TodoList` removes them from the
list, so a crash leaves a task in both places, never in neither. The list's copy is the
proof: at start-up a task found in both is removed from the list when the archive holds
exactly its text, and a torn last section (a crash in the middle of the write) is cut off
the archive instead, so the task moves again.

Lookups by task id and by message id go through a :class:`jarvis.book_index.BookIndex`
(``DATA/todos/archive.sqlite``: each task's file, byte offset and length, and its message
ids), brought up to date from the files' sizes and rebuilt when it is missing. The
markdown stays the truth.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from jarvis.book_index import BookIndex
from jarvis.fsutil import fsync_dir
from jarvis.gateway.markdown import Document, has_surrogates
from jarvis.gateway.todo_format import Todo, format_todo, is_header, parse_todos

log = logging.getLogger(__name__)

INDEX_VERSION = 1
SCHEMA = (
    "CREATE TABLE tasks (id TEXT PRIMARY KEY, num INTEGER NOT NULL, file TEXT NOT NULL, "
    "offset INTEGER NOT NULL, length INTEGER NOT NULL)",
    "CREATE TABLE messages (message_id TEXT NOT NULL, task_id TEXT NOT NULL, "
    "PRIMARY KEY (message_id, task_id))",
    "CREATE INDEX tasks_by_file ON tasks (file)",
)
_MONTH_FILE = re.compile(r"\d{4}-\d{2}\.md")
ENDED_STATUSES = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class Placed:
    """Where one task's section is: its archive file and its bytes there."""

    file: str
    offset: int
    length: int


def month_of(todo: Todo) -> str:
    """The archive file a task goes to: the month it ended (or was made)."""
    return f"{(todo.completed or todo.created):%Y-%m}.md"


def _preamble(name: str) -> str:
    return (
        f"# Jarvis todos archive, {name.removesuffix('.md')}\n\n"
        "<!-- Ended tasks that left todos.md, oldest first. Jarvis only appends here. -->\n"
    )


def scan_sections(data: bytes, base: int = 0) -> Iterator[tuple[int, int, str]]:
    """(offset, length, text) of every task section in ``data`` (which starts at byte
    ``base`` of its file, at a line start); a section's trailing blank lines are left out."""
    start: int | None = None
    end = 0  # end of the last non-blank line of the current section
    position = 0
    for line in data.splitlines(keepends=True):
        text = line.rstrip(b"\r\n")
        if text.startswith(b"### [") and is_header(text.decode("utf-8", "surrogateescape")):
            if start is not None:
                yield base + start, end - start, _decode(data[start:end])
            start = position
        if text.strip():
            end = position + len(text)
        position += len(line)
    if start is not None:
        yield base + start, end - start, _decode(data[start:end])


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _task_of(text: str) -> Todo | None:
    """The one task ``text`` is the whole section of, else None."""
    if has_surrogates(text) or not is_header(text.split("\n", 1)[0]):
        return None
    entries = parse_todos(text).entries()
    return entries[0] if len(entries) == 1 else None


class TodoArchive:
    """The monthly archive files and the index of what they hold."""

    def __init__(self, folder: Path, index_path: Path) -> None:
        self.folder = folder
        self.index_path = index_path
        self._index: BookIndex | None = None
        self._lock = threading.RLock()

    # -- the index --
    @property
    def index(self) -> BookIndex:
        with self._lock:
            if self._index is None:
                self._index = BookIndex(self.index_path, SCHEMA, INDEX_VERSION)
                self.catch_up()
            return self._index

    def close(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None

    def files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.iterdir() if _MONTH_FILE.fullmatch(p.name))

    def catch_up(self) -> int:
        """Index what the files hold beyond what was indexed; a file that shrank or changed
        in place is indexed again whole. Returns the number of sections read."""
        index = self._index
        if index is None:
            self.index  # noqa: B018 (opening the index catches up)
            return 0
        read = 0
        for path in self.files():
            st = path.stat()
            known = index.source(path.name)
            if known == (st.st_size, st.st_mtime_ns):
                continue
            grew = known is not None and 0 < known[0] <= st.st_size and self._in_place(path)
            read += self._index_file(index, path, known[0] if grew and known else 0)
        return read

    def _in_place(self, path: Path) -> bool:
        """Whether the file's last indexed section is still where the index says (so the
        file only grew after it; an edit before it moved it)."""
        assert self._index is not None
        row = self._index.one(
            "SELECT id, offset, length FROM tasks WHERE file = ? ORDER BY offset DESC LIMIT 1",
            (path.name,),
        )
        if row is None:
            return False
        text = self.read(Placed(path.name, int(row[1]), int(row[2])))
        todo = _task_of(text)
        return todo is not None and todo.id == row[0]

    def _index_file(self, index: BookIndex, path: Path, start: int) -> int:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            f.seek(start)
            data = f.read(st.st_size - start)
        rows, messages = [], []
        for offset, length, text in scan_sections(data, start):
            todo = _task_of(text)
            if todo is None:
                log.warning("%s: an unreadable section at byte %d is not indexed", path, offset)
                continue
            rows.append((todo.id, int(todo.id[1:]), path.name, offset, length))
            messages += [(m, todo.id) for m in todo.message_ids]
        with index.writing() as db:
            if start == 0:
                db.execute(
                    "DELETE FROM messages WHERE task_id IN (SELECT id FROM tasks WHERE file = ?)",
                    (path.name,),
                )
                db.execute("DELETE FROM tasks WHERE file = ?", (path.name,))
            db.executemany("INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?)", rows)
            db.executemany("INSERT OR IGNORE INTO messages VALUES (?, ?)", messages)
            BookIndex.set_source(db, path.name, st.st_size, st.st_mtime_ns)
        return len(rows)

    # -- lookups --
    def highest_number(self) -> int:
        row = self.index.one("SELECT max(num) FROM tasks")
        return int(row[0]) if row and row[0] is not None else 0

    def where(self, todo_id: str) -> Placed | None:
        row = self.index.one("SELECT file, offset, length FROM tasks WHERE id = ?", (todo_id,))
        return Placed(str(row[0]), int(row[1]), int(row[2])) if row else None

    def holds(self, ids: Iterable[str]) -> dict[str, Placed]:
        """Which of ``ids`` the index places in the archive."""
        wanted = list(ids)
        found: dict[str, Placed] = {}
        for chunk in range(0, len(wanted), 500):
            part = wanted[chunk : chunk + 500]
            marks = ",".join("?" * len(part))
            for row in self.index.rows(
                f"SELECT id, file, offset, length FROM tasks WHERE id IN ({marks})", part
            ):
                found[str(row[0])] = Placed(str(row[1]), int(row[2]), int(row[3]))
        return found

    def read(self, placed: Placed) -> str:
        with open(self.folder / placed.file, "rb") as f:
            f.seek(placed.offset)
            return _decode(f.read(placed.length))

    def get(self, todo_id: str) -> Todo | None:
        """An archived task by id; a stale index entry is re-read from the files once."""
        for attempt in (1, 2):
            placed = self.where(todo_id)
            todo = self._load(placed) if placed else None
            if todo is not None and todo.id == todo_id:
                return todo
            if attempt == 1 and self.catch_up() == 0 and placed is None:
                return None
            if placed is not None and attempt == 1:
                self._reindex(placed.file)
        return None

    def find_by_message(self, message_id: str) -> Todo | None:
        row = self.index.one(
            "SELECT task_id FROM messages WHERE message_id = ? ORDER BY task_id LIMIT 1",
            (message_id,),
        )
        return self.get(str(row[0])) if row else None

    def _load(self, placed: Placed) -> Todo | None:
        try:
            return _task_of(self.read(placed))
        except OSError:
            return None

    def _reindex(self, name: str) -> None:
        path = self.folder / name
        if path.exists():
            self._index_file(self.index, path, 0)
        else:
            with self.index.writing() as db:
                db.execute("DELETE FROM tasks WHERE file = ?", (name,))

    # -- moving tasks in --
    def append(self, todos: list[Todo]) -> None:
        """Append ``todos`` to their month files, durably, then index them."""
        by_month: dict[str, list[Todo]] = {}
        for todo in todos:
            by_month.setdefault(month_of(todo), []).append(todo)
        for name, group in by_month.items():
            self._append_file(name, group)

    def _append_file(self, name: str, group: list[Todo]) -> None:
        path = self.folder / name
        self.folder.mkdir(parents=True, exist_ok=True)
        index = self.index
        before = index.source(name)
        created = not path.exists()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            size = os.fstat(fd).st_size
            head = _preamble(name) if size == 0 else ("" if self._ends_in_newline(path) else "\n")
            chunks, rows, messages = [head], [], []
            position = size + len(head.encode())
            for todo in group:
                text = format_todo(todo).encode("utf-8", "surrogateescape")
                chunks.append("\n")
                position += 1
                rows.append((todo.id, int(todo.id[1:]), name, position, len(text)))
                messages += [(m, todo.id) for m in todo.message_ids]
                chunks.append(_decode(text) + "\n")
                position += len(text) + 1
            os.write(fd, "".join(chunks).encode("utf-8", "surrogateescape"))
            os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.folder)
        with index.writing() as db:
            db.executemany("INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?)", rows)
            db.executemany("INSERT OR IGNORE INTO messages VALUES (?, ?)", messages)
            if (before[0] if before else 0) == size:  # else: catch_up reads what came between
                BookIndex.set_source(db, name, st.st_size, st.st_mtime_ns)

    @staticmethod
    def _ends_in_newline(path: Path) -> bool:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    # -- repair after a crash in a move --
    def settle(self, listed: list[Todo]) -> tuple[set[str], list[str]]:
        """Of the ended tasks still in the list, those the archive holds exactly (to be
        removed from the list), and those whose archived copy was a torn tail (cut off)."""
        placed = self.holds(t.id for t in listed)
        done: set[str] = set()
        torn: list[str] = []
        for todo in listed:
            where = placed.get(todo.id)
            if where is None:
                continue
            if self._load(where) == todo or self.read(where) == format_todo(todo):
                done.add(todo.id)
            elif self._cut_tail(where):
                torn.append(todo.id)
        return done, torn

    def _cut_tail(self, placed: Placed) -> bool:
        """Truncate the file at ``placed`` when nothing was indexed after it."""
        path = self.folder / placed.file
        later = self.index.one(
            "SELECT count(*) FROM tasks WHERE file = ? AND offset > ?", (placed.file, placed.offset)
        )
        if later is None or later[0]:
            log.warning("%s: task at byte %d differs from todos.md's copy", path, placed.offset)
            return False
        with open(path, "r+b") as f:
            f.truncate(placed.offset)
            os.fsync(f.fileno())
        self._reindex(placed.file)
        return True


class IdCounter:
    """``todos/seq``: the highest task number handed out, so an id is never used twice
    (not after rotation, a hand edit that removed the newest task, or a restart)."""

    def __init__(self, path: Path, archive: TodoArchive) -> None:
        self.path = path
        self.archive = archive

    def highest(self) -> int:
        try:
            return int(self.path.read_text(encoding="ascii").strip() or 0)
        except FileNotFoundError:
            return self.archive.highest_number()  # a data dir from before the counter
        except (ValueError, OSError) as exc:
            log.warning("%s is unreadable (%s); ids go on from the archive", self.path, exc)
            return self.archive.highest_number()

    def take(self, number: int) -> int:
        """Record ``number`` as handed out and return it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(f"{number}\n", encoding="ascii")
        os.replace(tmp, self.path)  # not synced: the list and the archive hold it too
        return number


# --- the list's side of a move -----------------------------------------------------------
def settle_list(archive: TodoArchive, doc: Document[Todo]) -> None:
    """At the first read of the list: ended tasks a crash left both in the list and the
    archive leave the list (see the module doc)."""
    _drop_reopened(archive, doc)
    ended = [t for t in doc.entries() if t.status in ENDED_STATUSES]
    if not ended:
        return
    done, torn = archive.settle(ended)
    for todo_id in torn:
        log.warning("todos/archive: a torn copy of %s was cut off; it moves again", todo_id)
    if done:
        _drop(doc, done)
        log.warning("todos.md: %d task(s) already in the archive left the list", len(done))


def _drop_reopened(archive: TodoArchive, doc: Document[Todo]) -> None:
    """Open tasks of the list that the archive holds ended are old copies an outside save
    brought back (an editor's buffer from before they ended): they leave the list rather
    than run again."""
    open_ids = [t.id for t in doc.entries() if t.status not in ENDED_STATUSES]
    held = archive.holds(open_ids) if open_ids else {}
    if held:
        _drop(doc, set(held))
        log.warning(
            "todos.md: %d task(s) brought back by an outside save had ended and were "
            "archived; their older copies left the list: %s",
            len(held),
            ", ".join(sorted(held)),
        )


def rotate(archive: TodoArchive, doc: Document[Todo], keep_ended: int) -> None:
    """Move the ended tasks of ``doc`` beyond the newest ``keep_ended`` to the archive."""
    ended = [t for t in doc.entries() if t.status in ENDED_STATUSES]
    if len(ended) <= keep_ended:
        return
    ended.sort(key=lambda t: t.completed or t.created)
    moving = ended[: len(ended) - keep_ended]
    done, _ = archive.settle(moving)  # a move tried before (its list write failed)
    archive.append([t for t in moving if t.id not in done])
    _drop(doc, {t.id for t in moving})
    level = logging.INFO if len(moving) > 1 else logging.DEBUG
    log.log(level, "todos.md: moved %d ended task(s) to todos/archive/", len(moving))


def _drop(doc: Document[Todo], ids: set[str]) -> None:
    doc.items = [i for i in doc.items if not (isinstance(i, Todo) and i.id in ids)]
    doc.changed = True
