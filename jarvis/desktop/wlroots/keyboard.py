"""Keys and text on a wlroots compositor through ``wtype`` (a virtual keyboard).

wtype makes a virtual keyboard with a keymap of its own holding exactly the keysyms it
types, so text comes out the same under any layout, and any Unicode character can be
typed. The window that is to take the keys is focused again over sway's IPC first, so
the seat's keyboard has entered it; with no window focused, text is refused (it would go
nowhere), while a chord still goes (the compositor's own bindings take it). wtype ends
with a roundtrip: exit status 0 means the compositor took every key event; a failure
raises :class:`~jarvis.desktop.wlroots.session.WaylandError`.
"""

from __future__ import annotations

import subprocess

from jarvis.desktop.windows import WindowInfo
from jarvis.desktop.wlroots.seat_keyboard import SeatKeyboard
from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError, swaymsg
from jarvis.desktop.wlroots.windows import focused_window
from jarvis.desktop.x11 import keysym_name

WTYPE_TIMEOUT_S = 60.0
WTYPE_MODIFIERS = {"ctrl": "ctrl", "alt": "alt", "shift": "shift", "super": "logo"}


def chord_args(chord: list[str]) -> list[str]:
    """wtype's arguments for a chord of canonical key names: modifiers held in order
    (``-M``), the other keys pressed and released (``-k``), modifiers let go in reverse."""
    mods = [k for k in chord if k in WTYPE_MODIFIERS]
    keys = [k for k in chord if k not in WTYPE_MODIFIERS]
    if not keys:  # a modifier alone: press and release the last one as a key
        last = mods.pop()
        keys = [{"ctrl": "Control_L", "alt": "Alt_L", "shift": "Shift_L"}.get(last, "Super_L")]
    else:
        keys = [keysym_name(k) for k in keys]
    args = [a for m in mods for a in ("-M", WTYPE_MODIFIERS[m])]
    args += [a for k in keys for a in ("-k", k)]
    args += [a for m in reversed(mods) for a in ("-m", WTYPE_MODIFIERS[m])]
    return args


def refocus(where: WaylandDisplay) -> WindowInfo | None:
    """Focus the focused window again, so the seat's keyboard enters it; the window, or
    None when no window has the focus (None too where there is no sway IPC to ask)."""
    if not where.swaysock:
        return None
    window = focused_window(where)
    if window is not None:
        swaymsg(where, f"[con_id={window.id}] focus")
    return window


def wtype(where: WaylandDisplay, args: list[str], text: str | None = None) -> None:
    """Run wtype with ``args`` on ``where`` (``text``, if given, on its stdin: ``wtype -``
    reads it there, so it is on no command line another process could read);
    WaylandError unless it delivered them."""
    try:
        done = subprocess.run(
            ["wtype", *args],
            capture_output=True,
            timeout=WTYPE_TIMEOUT_S,
            env=where.env(),
            input=text.encode() if text is not None else b"",
        )
    except FileNotFoundError as exc:
        raise WaylandError("wtype is not installed (apt install wtype)") from exc
    except subprocess.TimeoutExpired as exc:
        raise WaylandError(f"wtype did not finish in {WTYPE_TIMEOUT_S:.0f} s") from exc
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip()
        raise WaylandError(f"wtype failed, nothing certain was typed: {detail[:300]}")


def type_text(where: WaylandDisplay, text: str) -> str:
    """Type ``text`` into the focused window (newline is Return, tab is Tab); its app id.
    WaylandError when no window has the focus: the text would go nowhere."""
    window = refocus(where)
    if window is None and where.swaysock:
        raise WaylandError("no window has the keyboard focus: the text would go nowhere")
    wtype(where, ["-"], text)  # on stdin: a password is on no command line
    return window.wm_class if window is not None else ""


def press_chord(where: WaylandDisplay, chord: list[str], seat: SeatKeyboard | None) -> None:
    """Press ``chord`` in the focused window: as a keyboard does on the ``seat``'s keyboard
    (modifier keys pressed, GTK reads them), through wtype for keys off the US map."""
    refocus(where)
    if seat is None or not seat.press_chord(chord):
        wtype(where, chord_args(chord))
