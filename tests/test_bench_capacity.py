"""bench/coordinator_capacity.py's own arithmetic and its check of the books: each message
dropped is exactly one completed task, in todos.md or its archive (the bench's verdict on
"nothing lost, nothing twice" must itself be right)."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.coordinator_capacity import Seen, check_books, windows
from jarvis.gateway.todos import TodoList


def books(data: Path, numbers: list[int], done: bool = True) -> TodoList:
    todos = TodoList(data)
    for n in numbers:
        todo = todos.add(f"note item {n}", description=f"Note item BENCH-{n:06d} .")
        if done:
            todos.mark_in_progress(todo.id)
            todos.finish(todo.id, "completed", "noted")
    return todos


def test_throughput_is_counted_per_window_of_recorded_tasks() -> None:
    seen = [Seen(i * 0.5, i * 1024, i * 0.1) for i in range(250)]  # two a second, 100 ms each
    found = windows(seen, 100, fed_until=60.0)
    assert [w["tasks"] for w in found] == ["1-100", "101-200"]  # the last 50 make no window
    assert [w["tasks_per_min"] for w in found] == [120.0, 120.0]
    assert [w["coordinator_cpu_ms_per_task"] for w in found] == [100.0, 100.0]
    assert [w["todos_md_kb"] for w in found] == [99.0, 199.0]
    assert [w["fed"] for w in found] == [True, False]  # the second ends in the drain


def test_the_books_pass_when_each_message_is_one_completed_task(tmp_path: Path) -> None:
    books(tmp_path, [0, 1, 2])
    archive = tmp_path / "todos" / "archive"
    archive.mkdir(parents=True)
    moved = tmp_path / "moved"  # a task rotated out: in the archive only
    books(moved, [3])
    text = (moved / "todos.md").read_text().replace("T001", "T004")
    (archive / "2026-11.md").write_text(text)
    found = check_books(tmp_path, 4)
    assert found["ok"], found
    assert found["files"] == ["todos.md", "todos/archive/2026-11.md"]
    assert found["tasks_in_books"] == 4


def test_the_books_fail_on_a_lost_a_doubled_or_an_unfinished_task(tmp_path: Path) -> None:
    books(tmp_path, [0, 1])
    books(tmp_path, [2], done=False)
    archive = tmp_path / "todos" / "archive"
    archive.mkdir(parents=True)
    shutil.copy(tmp_path / "todos.md", archive / "2026-11.md")  # every task in two places
    found = check_books(tmp_path, 4)
    assert not found["ok"]
    assert found["lost"] == [3]
    assert found["twice_count"] == 3
    assert found["ids_in_two_places"] == ["T001", "T002", "T003"]
    assert found["not_completed"] == {"2": "pending"}
    drop = tmp_path / "messages" / "drop"
    drop.mkdir(parents=True)
    (drop / "late.md").write_text("Note item BENCH-000003 .\n")  # not routed yet: not lost
    found = check_books(tmp_path, 4)
    assert found["lost"] == [] and found["still_in_the_inbox"] == 1 and not found["ok"]
