"""The cockpit's status line, as text: the stream, the backend, the task and its usage."""

from __future__ import annotations

from jarvis.task_words import shown as said
from jarvis.tui.approvals import budget_text
from jarvis.tui.state import Cockpit


def status_line(cockpit: Cockpit, connection: str, label: str, screen_holder: str | None) -> str:
    """``live · LABEL · T in progress · budget ... · tokens ... · $...``: the running task (or
    idle), its budget, who holds the screen, the approvals waiting, and the usage of the
    running task (or the last one)."""
    running = cockpit.running
    task = f"{running.task_id} {said(running.status)}" if running else "idle"
    if running is not None and (budget := budget_text(running.budget)):
        task += f" · budget {budget}"  # the running task's first: the totals may be cut
    if screen_holder is not None:
        task += f" · ✋ {screen_holder} has the screen (agent paused)"
    if cockpit.model_trouble is not None:
        task += f" · ⚠ model: {cockpit.model_trouble}"
    if waiting := len(cockpit.open_approvals()):
        task += f" · ⚠ {waiting} approval{'s' if waiting > 1 else ''} waiting"
    usage = ""
    if (shown := cockpit.latest) is not None:  # one task's usage: the running one, or the last
        usage = (
            f" · {shown.task_id} tokens {shown.input_tokens:,} in / "
            f"{shown.output_tokens:,} out · ${shown.cost_usd:.4f}"
        )
    return f"{connection} · {label} · {task}{usage}"
