"""todos.md: parser, writer, round trips, and the TodoList API on a real file."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jarvis.events import EventBus, EventRecorder, MalformedEntry
from jarvis.gateway.markdown import Malformed
from jarvis.gateway.todo_format import STATUSES, Todo, format_todo, parse_todos, render_todos
from jarvis.gateway.todos import TodoList, TodoState

SEED = (Path(__file__).parent / "data" / "todos_seed.md").read_text(encoding="utf-8")


def todo(**fields: object) -> Todo:
    base: dict[str, object] = {"id": "T001", "title": "x", "created": datetime(2026, 2, 1, 9)}
    return Todo.model_validate(base | fields)


# --- parser ------------------------------------------------------------------------------
def test_seed_todos_read() -> None:
    doc = parse_todos(SEED)
    t1, t2, t3, _ = doc.entries()
    assert (t1.id, t1.status, t1.completed) == (
        "T001",
        "completed",
        datetime(2026, 2, 1, 15, 31, 40),
    )
    assert t1.message_ids == ["m-20260201-153000-a1b2c3"] and t1.summary.startswith("Searched")  # type: ignore[union-attr]
    assert (t2.status, t2.priority, t2.reply_to) == ("needs_user", 1, "ada@example.com")
    assert t2.summary == (
        'Which printer should I use? Two are installed:\n"HP LaserJet 4th floor" and '
        '"Canon Color 2nd floor".'
    )
    assert t2.description.endswith("Thanks!\nAda")
    assert t3.title == "打开记事本，写下“你好，世界”" and t3.status == "in_progress"


def test_hand_written_task_gets_the_next_id_and_a_created_time() -> None:
    doc = parse_todos(SEED)
    by_hand = doc.entries()[3]
    assert by_hand.id == "T005"  # T004 is taken by the malformed section
    assert by_hand.priority == -1 and by_hand.created is not None
    assert "### Shopping (a heading that is not a task header)\n- milk" in by_hand.description
    assert doc.changed


def test_malformed_task_is_kept_verbatim() -> None:
    doc = parse_todos(SEED)
    [bad] = doc.malformed()
    assert bad.raw.startswith("### [T004] Broken by hand\n- status: almost done")
    assert "status" in bad.reason
    assert bad.raw in render_todos(doc)


def test_seed_rewrite_is_stable_and_crlf_reads_the_same() -> None:
    once = render_todos(parse_todos(SEED))
    assert render_todos(parse_todos(once)) == once
    assert parse_todos(once).entries()[:3] == parse_todos(SEED).entries()[:3]
    crlf = parse_todos(SEED.replace("\n", "\r\n")).entries()
    assert [t.model_dump(exclude={"created"}) for t in crlf] == [
        t.model_dump(exclude={"created"}) for t in parse_todos(SEED).entries()
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("### [T001] a\n- status: pending\n- status: failed\n", "twice"),
        ("### [T001] a\n- created: yesterday\n", "created"),
        ("### [T001] a\n- priority: soon\n", "priority"),
        ("### [T001] a\n- messages: m-1, bad/id\n", "message id"),
    ],
)
def test_unreadable_tasks_are_malformed(text: str, reason: str) -> None:
    [item] = parse_todos(text).items
    assert isinstance(item, Malformed) and reason in item.reason


def test_duplicate_ids_are_renumbered() -> None:
    doc = parse_todos("### [T002] a\n- created: 2026-01-01 00:00\n\n### [T002] b\n")
    assert [t.id for t in doc.entries()] == ["T002", "T003"] and doc.changed


def test_list_items_with_colons_are_description() -> None:
    [t] = parse_todos("### [T001] a\n- https://example.com/x\n- at 12:30\n- milk\n").entries()
    assert t.description == "- https://example.com/x\n- at 12:30\n- milk" and t.extra == []


def test_new_tasks_by_hand_in_any_spelling() -> None:
    doc = parse_todos("### [T007] kept\n\n### [New] first\n### [] second\n### [ new ]  third\n")
    assert [(t.id, t.title) for t in doc.entries()] == [
        ("T007", "kept"),
        ("T008", "first"),
        ("T009", "second"),
        ("T010", "third"),
    ]


def test_description_lines_that_look_like_structure_round_trip() -> None:
    t = todo(description="- status: failed\n### [T009] not a task\n\\### [T1] x\n## [x]")
    written = format_todo(t)
    assert "\n\n- status: failed\n\\### [T009] not a task\n\\\\### [T1] x\n" in written
    assert parse_todos(written).entries() == [t]


# --- property-based round trips -----------------------------------------------------------
todos = st.builds(
    Todo,
    id=st.integers(1, 9999).map(lambda n: f"T{n:03d}"),
    title=st.text(min_size=1, max_size=40).filter(lambda s: s.split()),
    status=st.sampled_from(STATUSES),
    priority=st.integers(-3, 3),
    created=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
    started=st.none() | st.datetimes(min_value=datetime(2000, 1, 1)),
    source=st.none() | st.text(max_size=15),
    message_ids=st.lists(st.integers(0, 10**6).map(lambda n: f"m-{n:x}"), max_size=3),
    reply_to=st.none() | st.text(max_size=20),
    summary=st.none() | st.text(max_size=60),
    notes=st.lists(st.text(max_size=30), max_size=2),
    description=st.text(),
    extra=st.lists(
        st.tuples(st.from_regex(r"x_[a-z]{1,5}", fullmatch=True), st.text()), max_size=2
    ),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(todos, max_size=3, unique_by=lambda t: t.id))
def test_todos_round_trip(items: list[Todo]) -> None:
    doc = parse_todos("")
    doc.items.extend(items)
    written = render_todos(doc)
    assert parse_todos(written).entries() == items
    assert render_todos(parse_todos(written)) == written


pieces = st.sampled_from(
    [
        "### [T001] a task",
        "### [T002]   another",
        "### [new] by hand",
        "### [T001]",
        "### [x] checkbox",
        "\\### [T003] escaped",
        "- status: pending",
        "- status: done",
        "- priority: high",
        "- priority: later",
        "- created: 2026-02-01 10:00",
        "- summary: first",
        "  continued",
        "- note: n",
        "- custom field: v",
        "- https://example.com",
        "- empty:",
        "",
        "## [2026-02-01 10:00:00] from:a",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(pieces | st.text(max_size=20), max_size=25).map("\n".join))
def test_parse_write_parse_is_stable(text: str) -> None:
    first = parse_todos(text)
    written = render_todos(first)
    assert parse_todos(written) == first
    assert render_todos(parse_todos(written)) == written


# --- the list --------------------------------------------------------------------------------
@pytest.fixture
def todo_list(tmp_path: Path) -> TodoList:
    return TodoList(tmp_path)


def test_add_get_and_the_file(todo_list: TodoList) -> None:
    a = todo_list.add("Open Chrome", "Open Chrome and search", source="tui", message_ids=["m-1"])
    b = todo_list.add("Print", priority="high", reply_to="ada@example.com")
    assert (a.id, b.id) == ("T001", "T002")
    assert todo_list.get("t002") == b and todo_list.get("T404") is None
    text = todo_list.path.read_text(encoding="utf-8")
    assert "### [T001] Open Chrome\n- status: pending\n- priority: normal\n" in text
    assert "- messages: m-1\n\nOpen Chrome and search\n" in text
    assert todo_list.find_by_message("m-1") == a


def test_next_pending_is_most_urgent_then_oldest(todo_list: TodoList) -> None:
    low = todo_list.add("low", priority="low")
    first = todo_list.add("first")
    todo_list.add("second")
    urgent = todo_list.add("urgent", priority=5)
    assert todo_list.next_pending() == urgent
    todo_list.finish(urgent.id, "completed", "done")
    assert todo_list.next_pending() == first
    for t in todo_list.all():
        if t.id != low.id and t.status == "pending":
            todo_list.finish(t.id, "cancelled")
    assert todo_list.next_pending() == low


def test_lifecycle_and_recover(todo_list: TodoList) -> None:
    t = todo_list.add("task")
    started = todo_list.mark_in_progress(t.id)
    assert started.status == "in_progress" and started.started is not None
    with pytest.raises(TodoState):
        todo_list.mark_in_progress(t.id)
    [recovered] = todo_list.recover()
    assert recovered.status == "pending" and "interrupted" in recovered.notes[0]
    assert todo_list.get(t.id) == recovered and todo_list.recover() == []
    todo_list.mark_in_progress(t.id)
    done = todo_list.finish(t.id, "failed", "the window never opened")
    assert done.completed is not None and done.summary == "the window never opened"
    with pytest.raises(ValueError):
        todo_list.finish(t.id, "in_progress")


def test_needs_user_then_an_update_reopens(todo_list: TodoList) -> None:
    t = todo_list.add("print", "print page 3", message_ids=["m-1"])
    todo_list.mark_in_progress(t.id)
    asked = todo_list.finish(t.id, "needs_user", "Which printer?")
    assert asked.completed is None
    merged = todo_list.append_update(t.id, "The HP one.", "m-2")
    assert merged.status == "pending" and merged.message_ids == ["m-1", "m-2"]
    assert merged.description == "print page 3\n\nUpdate (m-2):\nThe HP one."
    todo_list.finish(t.id, "completed", "printed")
    with pytest.raises(TodoState):
        todo_list.append_update(t.id, "more", "m-3")


def test_update_validates(todo_list: TodoList) -> None:
    t = todo_list.add("task")
    assert todo_list.update(t.id, priority="high", summary="s").priority == 1
    with pytest.raises(TypeError):
        todo_list.update(t.id, colour="red")
    with pytest.raises(ValueError):
        todo_list.update(t.id, status="someday")
    with pytest.raises(KeyError):
        todo_list.update("T099", summary="x")


def test_hand_edits_survive(tmp_path: Path) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    todo_list = TodoList(tmp_path, bus=bus)
    todo_list.path.write_text(SEED, encoding="utf-8")
    added = todo_list.add("new one")
    assert added.id == "T006"
    text = todo_list.path.read_text(encoding="utf-8")
    assert "### [T005] Water the plants reminder" in text  # id written back
    assert "### [T004] Broken by hand\n- status: almost done" in text  # kept as it was
    todo_list.all()
    assert len(recorder.of(MalformedEntry)) == 1
    assert [p.reason for p in todo_list.problems()] == [recorder.of(MalformedEntry)[0].reason]
    assert todo_list.next_pending() is not None
