"""Teach by showing from the cockpit: F6 (or "Record a skill" in the palette) asks for a
name and starts recording a person on the daemon's desktop (``POST /api/recordings``);
F6 again stops it (``POST /api/recordings/stop``) and says where the skill file went."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from jarvis.tui.backend import BackendError

if TYPE_CHECKING:
    from jarvis.tui.app import JarvisApp


class RecordName(ModalScreen[str]):
    """What the recording is called (what the task is, in words); Esc gives it up."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss('')", "Do not record", id="record_cancel")
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(
                "Record a skill: name the task you will show (Enter starts, Esc cancels).\n"
                "Then do it on the daemon's desktop and press F6 to stop."
            )
            yield Input(placeholder="e.g. Sign in to Example", id="record-name")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())


class RecordingKeys:
    """The cockpit's recording action (a part of :class:`~jarvis.tui.app.JarvisApp`)."""

    recording_note: str = ""
    """The last thing a start or stop said (shown as a notification too)."""

    def action_toggle_recording(self) -> None:
        app: JarvisApp = self  # type: ignore[assignment]
        if isinstance(app.screen, RecordName):  # the name is being asked for already
            return
        app.run_worker(_toggle(app), group="recording", exclusive=True)


async def _toggle(app: JarvisApp) -> None:
    try:
        now = (await app.backend.recordings()).get("recording")
    except BackendError as exc:
        _say(app, f"cannot record: {exc}", error=True)
        return
    if now:
        _say(app, f"stopping the recording {now.get('name')!r}: writing the skill ...")
        try:
            done = await app.backend.stop_recording()
        except BackendError as exc:
            _say(app, f"not stopped: {exc}", error=True)
            return
        if done.get("steps"):
            _say(app, f"recorded {done['steps']} steps in {done['skill']}; {done['memory']}")
        else:
            _say(app, f"recording stopped: {done.get('memory', '')}")
        return
    app.push_screen(RecordName(), lambda name: _start(app, name))


def _start(app: JarvisApp, name: str | None) -> None:
    if name:
        app.run_worker(_started(app, name), group="recording", exclusive=True)


async def _started(app: JarvisApp, name: str) -> None:
    try:
        now: dict[str, Any] = await app.backend.start_recording(name)
    except BackendError as exc:
        _say(app, f"not recording: {exc}", error=True)
        return
    _say(app, f"recording {now.get('name')!r} on {now.get('display')}: F6 stops it")


def _say(app: JarvisApp, text: str, error: bool = False) -> None:
    app.recording_note = text
    if error:
        app.notify(text, title="recording", severity="error", markup=False, timeout=6)
    else:
        app.notify(text, title="recording", markup=False, timeout=6)
