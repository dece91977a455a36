"""SVG snapshots of the cockpit's main states, from the recorded journal (cursor blink
off, the clock's time zone fixed, the thumbnail in half-blocks). Update them with
``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the SVGs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.tui_fixtures import journal, replay_app, task_lines, until


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def settled(app: Any, runs: int) -> Any:
    async def run_before(pilot: Any) -> None:
        app.prompt.cursor_blink = False
        await app.history_loaded.wait()
        await until(lambda: app.connection == "live", pilot)
        await until(lambda: app.side.thumb.image is not None, pilot)
        await until(lambda: len(app.conversation.children) == runs, pilot)
        await pilot.pause(0.3)
        await pilot.wait_for_scheduled_animations()

    return run_before


def check(snap_compare: Any, lines: list[dict[str, Any]], runs: int, size: tuple[int, int]) -> None:
    app, _ = replay_app(history=lines)
    assert snap_compare(app, terminal_size=size, run_before=settled(app, runs))


def test_idle(snap_compare: Any) -> None:
    check(snap_compare, [], 0, (120, 36))


def test_streaming(snap_compare: Any) -> None:
    check(snap_compare, task_lines("T003")[:20], 1, (120, 36))


def test_tool_error(snap_compare: Any) -> None:
    check(snap_compare, task_lines("T001")[:9], 1, (120, 36))


def test_needs_user(snap_compare: Any) -> None:
    check(snap_compare, task_lines("T002"), 1, (120, 36))


def test_finished(snap_compare: Any) -> None:
    check(snap_compare, task_lines("T001"), 1, (120, 36))


def test_cancelled(snap_compare: Any) -> None:
    check(snap_compare, task_lines("T003"), 1, (120, 36))


def test_small_terminal(snap_compare: Any) -> None:
    check(snap_compare, journal(), 3, (80, 24))


def test_wide_terminal(snap_compare: Any) -> None:
    check(snap_compare, journal(), 3, (200, 50))
