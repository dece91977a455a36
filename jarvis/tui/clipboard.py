"""Copying text: the system clipboard (xclip, wl-copy, pbcopy through pyperclip) when there
is one, otherwise OSC 52, which asks the terminal to set its clipboard (over ssh too)."""

from __future__ import annotations

import logging
from typing import Protocol

log = logging.getLogger(__name__)


class _Copier(Protocol):
    def osc52_copy(self, text: str) -> None: ...


def copy_text(app: _Copier, text: str) -> str:
    """Copy ``text``; returns how ("clipboard" or "OSC 52")."""
    import pyperclip

    try:
        pyperclip.copy(text)
    except pyperclip.PyperclipException as exc:
        log.debug("no system clipboard (%s); using OSC 52", exc)
        app.osc52_copy(text)
        return "OSC 52"
    app.osc52_copy(text)  # also keeps the app's own clipboard (paste inside the TUI)
    return "clipboard"
