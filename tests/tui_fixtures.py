"""Shared pieces of the TUI tests: the recorded journal, a replay app, waiting helpers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jarvis.tui.app import JarvisApp
from jarvis.tui.backend import ReplayBackend
from jarvis.tui.settings import TuiSettings
from jarvis.tui.state import read_journal

DATA = Path(__file__).parent / "data"
JOURNAL = DATA / "tui_journal.jsonl"
SCREEN = DATA / "tui_screen.png"
APPROVALS = DATA / "tui_approvals.jsonl"
"""One task whose held calls were allowed once, denied with a note and left to time out,
with a budget (tests/tui_record.py approvals)."""
TODOS = [
    {"id": "T001", "title": "Write hello world into the notes", "status": "completed"},
    {"id": "T002", "title": "Log in to the mail account", "status": "needs_user"},
    {"id": "T003", "title": "Describe the screen", "status": "cancelled"},
    {"id": "T004", "title": "Open the calculator", "status": "pending"},
]


def journal() -> list[dict[str, Any]]:
    return read_journal(JOURNAL)


def approval_journal() -> list[dict[str, Any]]:
    return read_journal(APPROVALS)


def task_lines(task_id: str) -> list[dict[str, Any]]:
    return [line for line in journal() if line.get("task_id") == task_id]


def replay_app(
    history: list[dict[str, Any]] | None = None, owns_gateway: bool = False, **tui: Any
) -> tuple[JarvisApp, ReplayBackend]:
    backend = ReplayBackend(
        journal() if history is None else history, todos=TODOS, screen=SCREEN.read_bytes()
    )
    backend.owns_gateway = owns_gateway
    settings = TuiSettings(thumbnail="halfblocks", **tui)
    return JarvisApp(backend, settings), backend


async def until(check: Callable[[], object], pilot: Any = None, timeout: float = 10.0) -> None:
    """Wait (letting the app run) until ``check()`` is true; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {check}")
        if pilot is not None:
            await pilot.pause(0.02)
        else:
            await asyncio.sleep(0.02)


def relabel(lines: list[dict[str, Any]], task_id: str, seq_from: int) -> list[dict[str, Any]]:
    """The lines of a recorded task, as a new task with later seqs (a fresh live run)."""
    out = []
    for n, line in enumerate(lines):
        out.append({**line, "task_id": task_id, "seq": seq_from + n})
    return out
