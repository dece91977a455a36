"""What became of the message the person just sent, shown under the conversation the
moment Enter is pressed: ``sending…``, then ``sent · routing…``, then the task it became
(or joined), or why it could not be routed. The daemon's routing emits no event when it
succeeds, so the note asks for the open todos until one names the message."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rich.text import Text
from textual.widgets import Static

from jarvis.task_words import shown
from jarvis.tui.backend import Backend, BackendError
from jarvis.tui.state import routing_problem

ROUTE_WAIT_S = 120.0
"""How long the note asks which task the message became."""
ASK_EVERY_S = 0.5
SHOWN_CHARS = 60
MIN_SHOWN_CHARS = 8


class SentNote(Static):
    """One line: the last message sent from the prompt and where it is."""

    def __init__(self) -> None:
        super().__init__("", id="sent")
        self.text = ""
        self.message_id: str | None = None
        self.display = False

    def show(self, state: str, trouble: bool = False) -> None:
        """The note on its one line: the message cut to what leaves room for ``state``
        (the task it became must not be cut off by a narrow terminal or the side panel)."""
        flat = " ".join(self.text.split())
        room = (self.size.width or 80) - len(state) - 7  # "› ", " · " and the padding
        keep = max(MIN_SHOWN_CHARS, min(SHOWN_CHARS, room))
        short = flat if len(flat) <= keep else flat[: keep - 1] + "…"
        self.update(Text(f"› {short} · {state}"))  # the person's text is never markup
        self.set_class(trouble, "trouble")
        self.display = True

    def sending(self, text: str) -> None:
        self.text, self.message_id = text, None
        self.show("sending…")

    def sent(self, message_id: str | None) -> None:
        self.message_id = message_id
        self.show("sent · routing…")

    def not_sent(self) -> None:
        self.display = False

    def took(self, line: dict[str, Any]) -> None:
        """A journal line: a ``routing_failed`` of this message says why, here."""
        if line.get("kind") == "routing_failed" and line.get("message_id") == self.message_id:
            self.show(f"not routed: {routing_problem(line)}", trouble=True)

    async def follow(self, backend: Backend) -> None:
        """Ask for the open todos until one names the message (or another is sent)."""
        asked = self.message_id
        deadline = time.monotonic() + ROUTE_WAIT_S
        while asked is not None and asked == self.message_id and time.monotonic() < deadline:
            try:
                todos = await backend.todos()
            except BackendError:
                todos = []
            for todo in todos:
                if asked in todo.get("message_ids", []) and asked == self.message_id:
                    joined = len(todo.get("message_ids", [])) > 1
                    how = "joined" if joined else "became"
                    self.show(f"{how} {todo.get('id')} ({shown(str(todo.get('status')))})")
                    return
            await asyncio.sleep(ASK_EVERY_S)
