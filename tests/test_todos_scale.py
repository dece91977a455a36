"""todos.md at scale (DESIGN section 14): rotation into the monthly archive, ids that are
never reused, lookups of archived tasks, the archive's index rebuilt, a crash (kill -9 of a
child process) at every point of a move, the first start of a data dir with a long list,
and an editor's stale saves racing Jarvis's changes.

Real files in tmp dirs; tasks are made through :class:`TodoList` (the long history of the
upgrade case is written as the version before rotation left it, which is the point).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import random
import signal
import threading
import time
import types
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jarvis.gateway.todo_format import Todo, format_todo, parse_todos
from jarvis.gateway.todos import TodoList


def every_task(data: Path) -> Counter[str]:
    """How many times each task id is written in todos.md and the archive files."""
    found: Counter[str] = Counter()
    files = [data / "todos.md", *sorted((data / "todos" / "archive").glob("*.md"))]
    for path in files:
        if path.exists():
            found.update(t.id for t in parse_todos(path.read_text(encoding="utf-8")).entries())
    return found


def lived(todos: TodoList, title: str, status: str = "completed", **fields: Any) -> Todo:
    task = todos.add(title, **fields)
    todos.mark_in_progress(task.id)
    return todos.finish(task.id, status, f"{title}: done")


def old_list(path: Path, count: int) -> list[str]:
    """todos.md as the version before rotation left it: ``count`` ended tasks, whole."""
    base = datetime(2026, 9, 30, 12, 0)
    tasks = [
        Todo(
            id=f"T{n:03d}",
            title=f"old task {n}",
            status=("completed", "failed", "cancelled")[n % 3],
            created=base + timedelta(minutes=n),
            completed=base + timedelta(minutes=n, seconds=20),
            message_ids=[f"m-20260930-120000-{n:06x}"],
        )
        for n in range(1, count + 1)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(format_todo(t) for t in tasks) + "\n", encoding="utf-8")
    return [t.id for t in tasks]


# --- rotation and ids -----------------------------------------------------------------------
def test_ended_tasks_rotate_and_stay_findable(tmp_path: Path) -> None:
    todos = TodoList(tmp_path, keep_ended=5)
    done = [lived(todos, f"task {i}", message_ids=[f"m-{i}"]) for i in range(20)]
    waiting = todos.add("still to do")
    listed = parse_todos(todos.path.read_text(encoding="utf-8")).entries()
    assert [t.id for t in listed] == [t.id for t in done[-5:]] + [waiting.id]
    assert every_task(tmp_path) == Counter({t.id: 1 for t in [*done, waiting]})
    assert list((tmp_path / "todos" / "archive").glob("*.md")) != []
    for task in done[:15]:  # archived: by id and by message id, here and after a restart
        assert todos.get(task.id) == task
        assert todos.find_by_message(task.message_ids[0]) == task
    again = TodoList(tmp_path, keep_ended=5)
    assert again.get(done[0].id) == done[0] and again.get("T999") is None
    assert again.find_by_message("m-0") == done[0]
    assert again.add("after a restart").id == "T022"
    assert [t.id for t in again.all()] == [t.id for t in done[-5:]] + ["T021", "T022"]


def test_ids_are_never_reused_after_a_hand_edit_or_a_lost_counter(tmp_path: Path) -> None:
    todos = TodoList(tmp_path, keep_ended=2)
    for i in range(6):
        lived(todos, f"task {i}")
    newest = todos.add("the newest")
    assert newest.id == "T007"
    text = todos.path.read_text(encoding="utf-8")  # a person deletes the newest task by hand
    todos.path.write_text(text.split("### [T007]")[0], encoding="utf-8")
    other = TodoList(tmp_path, keep_ended=2)  # another process, which never saw T007
    assert other.add("next").id == "T008"
    (tmp_path / "todos" / "seq").unlink()  # the counter lost: the archive still knows
    third = TodoList(tmp_path, keep_ended=2)
    third.path.write_text("### [new] by hand\n", encoding="utf-8")
    assert [t.id for t in third.all()] == ["T005"]  # above the archive's highest (T004)
    assert Counter(every_task(tmp_path)).most_common(1)[0][1] == 1


def test_a_deleted_or_broken_index_is_rebuilt_from_the_archive(tmp_path: Path) -> None:
    todos = TodoList(tmp_path, keep_ended=1)
    first = lived(todos, "first", message_ids=["m-first"])
    for i in range(5):
        lived(todos, f"task {i}")
    index = tmp_path / "todos" / "archive.sqlite"
    assert index.exists()
    todos.archive.close()
    index.unlink()
    assert TodoList(tmp_path, keep_ended=1).get(first.id) == first
    todos.archive.close()
    index.write_bytes(b"not a database at all")
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    assert TodoList(tmp_path, keep_ended=1).find_by_message("m-first") == first


def test_an_archive_edited_behind_the_index_is_read_again(tmp_path: Path) -> None:
    todos = TodoList(tmp_path, keep_ended=0)
    task = lived(todos, "archived", message_ids=["m-a"])
    [month] = (tmp_path / "todos" / "archive").glob("*.md")
    month.write_text("<!-- a note at the top -->\n\n" + month.read_text(), encoding="utf-8")
    assert TodoList(tmp_path, keep_ended=0).get(task.id) == task  # offsets moved: re-read
    assert todos.get(task.id) == task


def test_a_long_list_is_rotated_at_the_first_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ids = old_list(tmp_path / "todos.md", 600)
    caplog.set_level(logging.INFO, logger="jarvis.gateway.todo_archive")
    todos = TodoList(tmp_path)
    assert [t.id for t in todos.all()] == ids[-50:]
    moved = [r.getMessage() for r in caplog.records if "moved" in r.getMessage()]
    assert moved == ["todos.md: moved 550 ended task(s) to todos/archive/"]
    assert every_task(tmp_path) == Counter({i: 1 for i in ids})
    assert todos.get("T001") is not None and todos.get("T001").title == "old task 1"  # type: ignore[union-attr]
    assert todos.find_by_message("m-20260930-120000-000007").id == "T007"  # type: ignore[union-attr]
    assert todos.add("new").id == "T601"


# --- a crash at every point of a move ----------------------------------------------------------
CRASH_POINTS = ("archive_torn", "archive_before_sync", "before_list_write", "after_list_write")


def _crash_in_a_move(data: str, point: str) -> None:
    """Child process: finish a task so that two tasks move, killed with SIGKILL at ``point``."""
    from jarvis.gateway import locked_file, todo_archive

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def torn_write(fd: int, data: bytes) -> int:
        os.write(fd, data[: len(data) // 2])
        die()
        return 0

    def fsync_then(fd: int) -> None:
        if point == "archive_before_sync":
            die()
        os.fsync(fd)

    real_replace = locked_file.MarkdownFile.replace

    def replace(self: Any, snapshot: Any, text: str) -> None:
        if point == "before_list_write":
            die()
        real_replace(self, snapshot, text)
        die()

    todos = TodoList(Path(data), keep_ended=3)
    todos.mark_in_progress("T006")
    archive_os = types.SimpleNamespace(**vars(os))  # the archive's own os calls only
    archive_os.fsync = fsync_then
    if point == "archive_torn":
        archive_os.write = torn_write
    todo_archive.os = archive_os  # type: ignore[assignment]
    locked_file.MarkdownFile.replace = replace  # type: ignore[method-assign]
    todos.finish("T006", "completed", "the last one")
    raise SystemExit(3)  # not reached: the move kills the process


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_crash_at_every_point_of_a_move_leaves_each_task_once(tmp_path: Path, point: str) -> None:
    todos = TodoList(tmp_path, keep_ended=3)
    for i in range(5):
        lived(todos, f"task {i}", message_ids=[f"m-{i}"])
    todos.add("the last", message_ids=["m-last"])  # T006; finishing it moves T001 and T002
    todos.archive.close()
    child = multiprocessing.get_context("spawn").Process(
        target=_crash_in_a_move, args=(str(tmp_path), point)
    )
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    after = TodoList(tmp_path, keep_ended=3)
    listed = [t.id for t in after.all()]
    assert every_task(tmp_path) == Counter({f"T{n:03d}": 1 for n in range(1, 7)})
    for n in range(1, 6):
        task = after.get(f"T{n:03d}")
        assert task is not None and task.status == "completed"
        assert after.find_by_message(f"m-{n - 1}") == task
    expected = "completed" if point == "after_list_write" else "in_progress"
    assert after.get("T006").status == expected  # type: ignore[union-attr]
    assert "T006" in listed
    lived(after, "one more")  # moves go on from here, each task still once
    assert every_task(tmp_path) == Counter({f"T{n:03d}": 1 for n in range(1, 8)})


# --- an editor's stale saves ---------------------------------------------------------------
def test_stale_editor_saves_lose_no_task_and_no_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="jarvis.gateway.todo_outside")
    todos = TodoList(tmp_path, keep_ended=10)
    stop = threading.Event()
    saves = 0

    def editor() -> None:  # reads the whole file, waits, writes it back whole
        nonlocal saves
        rng = random.Random(7)
        while saves < 200 and not stop.is_set():
            text = todos.path.read_text(encoding="utf-8") if todos.path.exists() else ""
            time.sleep(rng.uniform(0.002, 0.03))  # the buffer goes stale meanwhile
            todos.path.write_text(text, encoding="utf-8")
            saves += 1
            stop.wait(rng.uniform(0, 0.02))

    thread = threading.Thread(target=editor)
    thread.start()
    made: dict[str, str] = {}
    try:
        i = 0
        while thread.is_alive():
            task = todos.add(f"task {i}")
            made[task.id] = "pending"
            if i % 3:
                todos.mark_in_progress(task.id)
                made[task.id] = todos.finish(task.id, "completed", f"done {i}").status
            i += 1
    finally:
        stop.set()
        thread.join()
    assert saves == 200 and len(made) >= 10
    final = {t.id: t.status for t in (todos.get(i) for i in made) if t is not None}
    assert final == made  # every task, in the state Jarvis last gave it
    assert every_task(tmp_path) == Counter({i: 1 for i in made})
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    restores = [m for m in said if "restored" in m or "older copy" in m]
    assert restores, "an editor's stale save was never noticed"
    assert said == restores, set(said) - set(restores)


def test_a_stale_save_made_again_while_its_repair_is_written_is_still_repaired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor saves the same stale buffer twice, the second time while Jarvis writes the
    repair of the first: the repair is not taken for done."""
    todos = TodoList(tmp_path)
    task = todos.add("errand")
    todos.mark_in_progress(task.id)
    stale = todos.path.read_text(encoding="utf-8")
    todos.finish(task.id, "completed", "done")
    todos.path.write_text(stale, encoding="utf-8")  # the first save
    replace = type(todos.file).replace
    saves = []

    def saved_again(file: Any, snapshot: Any, text: str) -> None:
        if not saves:
            saves.append(1)
            os.utime(file.path, ns=(1, 1))  # the second save: the same text, a new stamp
        replace(file, snapshot, text)

    monkeypatch.setattr(type(todos.file), "replace", saved_again)
    assert todos.get(task.id).status == "completed"  # type: ignore[union-attr]
    assert saves and "- status: completed" in todos.path.read_text(encoding="utf-8")
    assert TodoList(tmp_path).get(task.id).status == "completed"  # type: ignore[union-attr]


@pytest.mark.parametrize("restart", [False, True], ids=["running", "after a restart"])
def test_a_stale_save_does_not_bring_back_a_task_that_ended_and_was_archived(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, restart: bool
) -> None:
    """An editor's buffer from when T001 ran is saved after T001 ended and left the list:
    T001 stays completed (it is not run again), and the task added since is kept."""
    todos = TodoList(tmp_path, keep_ended=1)
    first = todos.add("first")
    todos.mark_in_progress(first.id)
    stale = todos.path.read_text(encoding="utf-8")
    todos.finish(first.id, "completed", "done")
    second = todos.add("second")
    todos.mark_in_progress(second.id)
    todos.finish(second.id, "completed", "done")  # T001 moves to the archive
    assert todos.archive.get(first.id) is not None
    todos.path.write_text(stale, encoding="utf-8")
    if restart:
        todos = TodoList(tmp_path, keep_ended=1)
    assert [t.id for t in todos.all()] == ([] if restart else [second.id])
    assert todos.get(first.id).status == "completed"  # type: ignore[union-attr]
    assert todos.next_pending() is None
    assert "### [T001]" not in todos.path.read_text(encoding="utf-8")
    assert any("archived" in r.getMessage() and "T001" in r.getMessage() for r in caplog.records)


def test_ten_thousand_ended_and_a_thousand_pending(tmp_path: Path) -> None:
    """The acceptance's size: 10,000 ended tasks from before rotation, then 1,000 pending
    made through the list; every archived task is found by id and by message id."""
    ids = old_list(tmp_path / "todos.md", 10_000)
    todos = TodoList(tmp_path)
    pending = [todos.add(f"backlog {i}", message_ids=[f"m-backlog-{i}"]) for i in range(1_000)]
    assert [p.id for p in pending] == [f"T{n:03d}" for n in range(10_001, 11_001)]
    listed = [t.id for t in todos.all()]
    assert listed == ids[-50:] + [p.id for p in pending]
    assert todos.next_pending() == pending[0]
    for n in (1, 2_500, 9_950):  # archived, in the month file, found through the index
        task = todos.get(f"T{n:03d}")
        assert task is not None and task.title == f"old task {n}"
        assert todos.find_by_message(f"m-20260930-120000-{n:06x}") == task
    todos.mark_in_progress(pending[0].id)
    todos.finish(pending[0].id, "completed", "done")  # one more moves out
    again = TodoList(tmp_path)  # a restart
    assert again.get("T9951").status in ("completed", "failed", "cancelled")  # type: ignore[union-attr]
    assert again.add("after a restart").id == "T11001"
    assert set(every_task(tmp_path).values()) == {1} and len(every_task(tmp_path)) == 11_001
