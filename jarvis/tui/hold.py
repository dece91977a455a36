"""Holding the screen from the cockpit (ctrl+t): the TUI pauses the agent by taking the
screen (``POST /api/takeover``), and resumes it by handing the screen back with a note for
the model (``POST /api/handback``). A hold belongs to whoever took it: while another face
holds the screen (the web panel), ctrl+t asks "web has the screen: take it over?" first,
and a yes takes the hold over (``take_over``), told to the journal and the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

if TYPE_CHECKING:
    from jarvis.tui.app import JarvisApp

FACE = "tui"


class TakeItOver(ModalScreen[bool]):
    """Another face holds the screen: take it over from them?"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Take it over", id="take_over_yes"),
        Binding("n,escape", "answer(False)", "Leave it", id="take_over_no"),
    ]

    def __init__(self, holder: str) -> None:
        super().__init__()
        self.holder = holder

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(
                f"{self.holder} has the screen: take it over? Their hold ends and the "
                "screen is yours (Jarvis stays paused)."
            )
            with Horizontal(id="confirm-buttons"):
                yield Button("Take it over (y)", variant="warning", id="yes")
                yield Button("Leave it (n)", variant="primary", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ResumeNote(ModalScreen["str | None"]):
    """Handing the screen back: a note for Jarvis (what you did), or none."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Stay paused", id="resume_cancel")
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(
                "Hand the screen back to Jarvis. A note for it (what you did; Enter sends, "
                "empty for none, Esc keeps it paused):"
            )
            yield Input(placeholder="e.g. I logged in; go on", id="resume-note")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())


class HoldKeys:
    """The cockpit's pause/resume action (a part of :class:`~jarvis.tui.app.JarvisApp`)."""

    def action_toggle_pause(self) -> None:
        app: JarvisApp = self  # type: ignore[assignment]
        if isinstance(app.screen, (TakeItOver, ResumeNote)):
            return
        holder = app.screen_holder
        if holder is None:
            app._command("agent paused: the screen is yours", app.backend.pause())
        elif holder == FACE:
            app.push_screen(ResumeNote(), lambda note: _resume(app, note))
        else:
            app.push_screen(TakeItOver(holder), lambda yes: _take_over(app, holder, yes))


def _resume(app: JarvisApp, note: str | None) -> None:
    if note is not None:
        app._command("agent resumed", app.backend.resume(note))


def _take_over(app: JarvisApp, holder: str, yes: bool | None) -> None:
    if yes:
        done = f"you took the screen over from {holder}: Jarvis stays paused"
        app._command(done, app.backend.pause(take_over=True))
