"""The prompt: Enter sends, Shift+Enter (or ctrl+j) adds a line, Up and Down walk the history."""

from __future__ import annotations

import time

from textual import events
from textual.message import Message
from textual.widgets import TextArea


class Prompt(TextArea):
    """A multi-line text field that sends on Enter."""

    HELP = (
        "Type a task for Jarvis. **Enter** sends it, **Shift+Enter** (or ctrl+j) starts a new "
        "line, **Up** and **Down** on the first or last line walk through what you sent before."
    )

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self) -> None:
        super().__init__(id="prompt", soft_wrap=True, show_line_numbers=False, compact=True)
        self.sent: list[str] = []
        self._place: int | None = None
        self._draft = ""
        self.last_key_at = 0.0
        """When a key last came (the app holds streamed text back while the user types)."""

    async def _on_key(self, event: events.Key) -> None:
        self.last_key_at = time.monotonic()
        if event.key == "enter":
            event.prevent_default()
            event.stop()
            self._send()
            return
        if event.key in ("shift+enter", "ctrl+j"):
            event.prevent_default()
            event.stop()
            self.insert("\n")
            return
        row = self.cursor_location[0]
        if event.key == "up" and row == 0 and self._walk(-1):
            event.prevent_default()
            event.stop()
            return
        if event.key == "down" and row == self.document.line_count - 1 and self._walk(1):
            event.prevent_default()
            event.stop()
            return
        await super()._on_key(event)

    def _send(self) -> None:
        text = self.text.strip()
        if not text:
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._place, self._draft = None, ""
        self.clear()
        self.post_message(self.Submitted(text))

    def restore(self, text: str) -> None:
        """Put back ``text`` that could not be sent, before anything typed since."""
        typed = self.text.strip()
        self.load_text(f"{text}\n{typed}" if typed else text)
        self.move_cursor(self.document.end)

    def _walk(self, step: int) -> bool:
        """Show the previous (-1) or next (+1) entry of the history; False at either end."""
        if not self.sent:
            return False
        if self._place is None:
            if step > 0:
                return False
            self._draft, place = self.text, len(self.sent) - 1
        else:
            place = self._place + step
        if place < 0:
            return False
        if place >= len(self.sent):
            self._place = None
            self.load_text(self._draft)
        else:
            self._place = place
            self.load_text(self.sent[place])
        self.move_cursor(self.document.end)
        return True
