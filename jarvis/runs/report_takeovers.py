"""The takeovers of a run, for its report: who took the screen, when, for how long, the note.

Read from the run's journal (``takeover_started`` and ``takeover_ended`` lines)."""

from __future__ import annotations

import time
from html import escape
from pathlib import Path
from typing import Any

from jarvis.runs.reader import EVENTS_FILE, read_events

_REASONS = {"handed_back": "handed back", "idle": "ended after no input", "shutdown": "ended"}


def takeover_lines(folder: Path) -> list[dict[str, Any]]:
    kinds = ("takeover_started", "takeover_ended")
    return [r for r in read_events(folder / EVENTS_FILE) if r.get("kind") in kinds]


def takeovers_html(folder: Path) -> str:
    """A list of the run's takeovers (empty text when there were none)."""
    rows: list[str] = []
    started: dict[str, Any] | None = None
    for line in takeover_lines(folder):
        if line["kind"] == "takeover_started":
            started = line
            continue
        begin = started["ts"] if started else line["ts"] - float(line.get("held_s", 0))
        when = time.strftime("%H:%M:%S", time.localtime(begin))
        reason = _REASONS.get(str(line.get("reason")), str(line.get("reason", "")))
        text = (
            f"{when}: {escape(str(line.get('by', '')))} had the screen for "
            f"{float(line.get('held_s', 0)):.0f} s, {escape(reason)}"
        )
        if line.get("note"):
            text += f': <q class="takeover-note">{escape(str(line["note"]))}</q>'
        rows.append(f"<li>{text}</li>")
        started = None
    if started is not None:
        when = time.strftime("%H:%M:%S", time.localtime(started["ts"]))
        rows.append(f"<li>{when}: {escape(str(started.get('by', '')))} has the screen</li>")
    if not rows:
        return ""
    return (
        '<div class="replay-note" id="takeovers"><strong>A person took over</strong>'
        f"<ul>{''.join(rows)}</ul></div>"
    )
