"""Every key of the cockpit, each with an id that settings can remap (``tui.keys``).

``{"tui": {"keys": {"cancel": "ctrl+x", "help": "f2"}}}`` in settings.json moves
"cancel" to ctrl+x and help to F2 (a comma gives several keys: ``"f10,ctrl+q"``). The
keys of an approval card (``allow_once``, ``allow_task``, ``deny``) remap the same way. An
unknown id is an error at start, so a typo does not go unnoticed.
"""

from __future__ import annotations

from textual.binding import Binding

BINDINGS: list[Binding] = [
    Binding("escape", "cancel_task", "Cancel task", id="cancel", priority=True),
    Binding("ctrl+q", "request_quit", "Quit", id="quit", priority=True),
    Binding("f1", "toggle_help", "Help", id="help"),
    Binding("ctrl+p", "command_palette", "Commands", id="palette"),
    Binding("f2", "toggle_side", "Screen panel", id="toggle_screen"),
    Binding("ctrl+o", "copy_card", "Copy card", id="copy_card"),
    Binding("ctrl+l", "focus_prompt", "Prompt", id="focus_prompt", show=False),
    Binding("ctrl+r", "focus_answer", "Answer", id="focus_answer"),
    Binding("ctrl+g", "focus_approval", "Approval", id="focus_approval"),
    Binding("ctrl+end", "follow", "Follow live", id="follow", show=False),
    Binding("ctrl+t", "toggle_pause", "Pause/resume", id="pause"),
    Binding("f6", "toggle_recording", "Record/stop", id="record", priority=True, show=False),
]

APPROVAL_BINDINGS: list[Binding] = [
    Binding("a", "decide('allow_once')", "Allow once", id="allow_once"),
    Binding("t", "decide('allow_task')", "Allow for this task", id="allow_task"),
    Binding("d", "deny", "Deny with a note", id="deny"),
]
"""Keys of an approval card while it (or one of its buttons) has the focus."""

BINDING_IDS = frozenset(b.id for b in BINDINGS + APPROVAL_BINDINGS if b.id)


class UnknownBinding(ValueError):
    """A key remap names a binding id that does not exist."""


def keymap(remaps: dict[str, str]) -> dict[str, str]:
    """The keymap for :meth:`textual.app.App.set_keymap`; raises for unknown ids."""
    unknown = sorted(set(remaps) - BINDING_IDS)
    if unknown:
        known = ", ".join(sorted(BINDING_IDS))
        raise UnknownBinding(
            f"tui.keys: unknown binding id(s) {', '.join(unknown)}; known: {known}"
        )
    return dict(remaps)
