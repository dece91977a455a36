"""Modal questions."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmQuit(ModalScreen[bool]):
    """Quitting stops the gateway this TUI started, and the task it runs with it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Quit", id="confirm_quit"),
        Binding("n,escape", "answer(False)", "Stay", id="stay"),
    ]

    def __init__(self, task_id: str) -> None:
        super().__init__()
        self.task_id = task_id

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(
                f"Task {self.task_id} is running in the gateway this TUI started.\n"
                "Quitting stops it (it goes back to pending). Quit?"
            )
            with Horizontal(id="confirm-buttons"):
                yield Button("Quit (y)", variant="error", id="yes")
                yield Button("Stay (n)", variant="primary", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, quit_now: bool) -> None:
        self.dismiss(quit_now)
