"""How :meth:`jarvis.desktop.input.Input.type_text` delivers text, and what it reports.

On X11 (``type_method``): ``auto`` and ``xdotool`` type it as key presses
(:mod:`jarvis.desktop.keytyper`: pieces whose off-keymap characters fit on the spare
keycodes, with a handshake so the application reads every key with the right keymap);
keys work in every application, terminals and Chromium included. ``clipboard`` pastes it
with the focused application's paste key (:class:`jarvis.desktop.clipboard.PasteRoute`:
ctrl+v, ctrl+shift+v in VTE-like terminals, shift+Insert with PRIMARY in xterm), counts
it done only when the application fetched the text after that key, and restores what the
selection held. Newlines and tabs are always the Return and Tab keys. Other control
characters are refused (use press_key). The result (:class:`TypedText`) says which
method delivered how many characters; what did not arrive is an error.

On other platforms ``auto`` uses ``pyautogui.write`` for ASCII and a pyperclip paste
(ctrl+v, cmd+v on macOS) for the rest; ``pyautogui.write`` cannot type non-ASCII text.
Neither can see whether the application took the text, so their result says that
delivery was not checked (:attr:`TypedText.unchecked`).
"""

from __future__ import annotations

import re
import sys
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from jarvis.desktop import clipboard, x11
from jarvis.desktop.clipboard import PasteRoute
from jarvis.desktop.errors import InputError
from jarvis.desktop.keys import normalize_key, parse_chord
from jarvis.desktop.x11_focus import focused_client

TypeMethod = Literal["auto", "xdotool", "clipboard"]
UNCHECKED_PASTE = (
    "pasted with the system clipboard, which does not tell whether the application read it; "
    "look at the screen to see whether the text arrived"
)
UNCHECKED_KEYS = (
    "typed as key events, which do not tell whether the application read them; "
    "look at the screen to see whether the text arrived"
)


@dataclass(frozen=True)
class TypedText:
    """What ``type_text`` did: the method that delivered the text and how many
    characters it sent (newlines and tabs included), and where it went."""

    method: str  # "xdotool", "clipboard", "write" (pyautogui) or "pyperclip"
    chars: int
    target: str = ""  # the application typed into (its WM_CLASS), when known
    paste_key: str = ""  # for the clipboard method: the key that made the app paste
    unchecked: str = ""  # why nothing could check that the text arrived; "" when it was checked


def clean_text(text: str) -> str:
    """``text`` with every line break a newline; InputError for what is not text or has
    control characters other than newline and tab."""
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    control = sorted({f"U+{ord(c):04X}" for c in text if c not in "\n\t" and _is_control(c)})
    if control:
        raise InputError(f"text has control characters {', '.join(control)}; use press_key")
    return text


def _is_control(char: str) -> bool:
    return unicodedata.category(char) == "Cc"


def choose_method(type_method: TypeMethod, on_x11: bool, text: str) -> str:
    """``auto`` types keys wherever it can: they work in every application, while a
    paste needs the application's paste key and is refused by some."""
    if not on_x11:
        if type_method == "xdotool":
            raise InputError("type_method 'xdotool' needs an X11 desktop")
        plain = all(c in "\n\t" or " " <= c <= "~" for c in text)
        return "write" if plain and type_method == "auto" else "pyperclip"
    has_xdotool, has_xclip = x11.have("xdotool"), x11.have("xclip")
    if type_method == "clipboard" or (type_method == "auto" and not has_xdotool):
        if not has_xclip:
            raise InputError("type_method 'clipboard' needs xclip (apt-get install xclip)")
        return "clipboard"
    if not has_xdotool:
        raise InputError("typing needs xdotool (apt-get install xdotool)")
    return "xdotool"


def type_pasted(
    text: str,
    where: x11.XDisplay,
    press: Callable[[list[str]], None],
    guard: Callable[[], None],
) -> TypedText:
    """Paste runs of text with the focused application's paste key; newlines and
    tabs are key presses (``press`` a chord); ``guard`` runs before each paste. A paste
    the application did not fetch is an error."""
    client = focused_client(where)
    route = PasteRoute.for_class(client.wm_class)
    chord = parse_chord(route.key)
    try:
        with clipboard.ClipboardPaster(selection=route.selection, where=where) as paster:
            for piece in re.split(r"([\n\t])", text):
                if piece in ("\n", "\t"):
                    press([normalize_key(piece)])
                elif piece:
                    guard()
                    paster.paste(piece, lambda: press(chord))
    except clipboard.PasteNotFetched as exc:
        raise InputError(
            f"the focused window ({client.app}) did not take the pasted text: it did not "
            f"read the {route.selection} selection within {exc.timeout:.0f} s after "
            f"{route.key}, so nothing more was typed. Click into a text field and try "
            "again, or set type_method to auto (typing keys)."
        ) from exc
    return TypedText("clipboard", len(text), target=client.app, paste_key=route.key)


def type_pyperclip(text: str, gui: Any) -> None:
    """Paste ``text`` through pyperclip with pyautogui's ``gui`` (not X11); what the
    clipboard held is put back."""
    import pyperclip

    paste_mod = "command" if sys.platform == "darwin" else "ctrl"
    previous = pyperclip.paste()
    try:
        for piece in re.split(r"([\n\t])", text):
            if piece in ("\n", "\t"):
                gui.press("enter" if piece == "\n" else "tab")
            elif piece:
                pyperclip.copy(piece)
                gui.hotkey(paste_mod, "v")
                time.sleep(0.15)  # the OS pasteboard is read asynchronously by the app
    finally:
        pyperclip.copy(previous)
