"""The cockpit's command palette (Ctrl+P): its actions, and one entry per known run that
opens the run's journal in the conversation."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.app import SystemCommand

from jarvis.task_words import shown

if TYPE_CHECKING:
    from jarvis.tui.app import JarvisApp


def palette_commands(app: JarvisApp) -> Iterable[SystemCommand]:
    """The cockpit's own entries, before Textual's."""
    yield SystemCommand(
        "Cancel the running task", "Esc; stops it within a moment", app.action_cancel_task
    )
    yield SystemCommand(
        "Toggle the screen panel", "Show or hide the screen and todos", app.action_toggle_side
    )
    yield SystemCommand(
        "Copy the card", "The focused (or last) tool card, as text", app.action_copy_card
    )
    yield SystemCommand(
        "Answer the question", "Focus the answer field of call_user", app.action_focus_answer
    )
    yield SystemCommand(
        "Answer the approval",
        "Focus the oldest call waiting for you",
        app.action_focus_approval,
    )
    yield SystemCommand(
        "Record a skill (or stop recording)",
        "Teach by showing: record yourself doing a task on the daemon's desktop",
        app.action_toggle_recording,
    )
    for run in app.known_runs:
        task_id = str(run.get("task_id"))
        yield SystemCommand(
            f"Open run {task_id}: {run.get('task', '')}",
            f"{shown(str(run.get('status', '')))}; its journal into the conversation",
            lambda task_id=task_id: app.open_run(task_id),
        )
