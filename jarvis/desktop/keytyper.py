"""Typing text as key presses on X11 (xdotool), any character, in any application.

A character that is not on the keymap (accents on a US layout, CJK, emoji) is put
on a spare keycode first (:class:`jarvis.desktop.x11.SpareKeycodes`); xdotool then
finds it on the keymap and just presses that keycode. A client translates a key
event into a character with the keymap it has *read*: after a change it gets a
MappingNotify and refreshes, later and at its own pace (Xlib reads the new map at
the next key event it translates; GTK, Qt and Chromium on their XKB notify). So
when text has more distinct off-keymap characters than there are spare keycodes,
the keycodes are remapped between pieces, and a keycode remapped before the client
has translated the previous piece's presses of it comes out as the new character,
or as nothing. Measured: Chromium dropped CJK pieces, xterm printed the wrong
characters under load. Here:

- a piece uses at most half the spare keycodes, and the least recently used ones,
  so consecutive pieces never share a keycode (one piece of slack for the client);
- before a piece remaps keycodes, the focused application must prove that it has
  handled everything sent so far: it answers ``_NET_WM_PING`` (GTK, Qt, Chromium,
  Electron; X delivers events in order, so the answer comes after the keys were
  translated). A client without the ping (xterm) gets a grace time instead;
- after the remap, and before the piece's keys, it answers a ping again: it has
  handled the mapping notification by then, and a client that fetches the new map
  asynchronously has sent that request before the answer, so the server replies to
  it before it generates the keys (one ping before the remap only was not enough:
  under load, once in about ten runs of the matrix, an editor or Chromium read an
  emoji as the CJK character its keycode held before);
- after the last piece the application must answer the ping too: a focused window
  that does not handle its events is an error, never a success.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from jarvis.desktop import x11
from jarvis.desktop.x11_focus import FocusedClient, focused_client, ping

log = logging.getLogger(__name__)

TYPE_CHUNK = 100  # characters per xdotool call (keeps each call short and interruptible)
_KEY_DELAY_MS = 2  # per key for keymap characters (nothing is remapped while typing)
_REMAP_DELAY_MS = 12  # per key when no spare keycode is left and xdotool remaps itself
_GRACE_S = 0.08  # before remapping keycodes for a client that cannot be pinged
_PING_TIMEOUT_S = 3.0


class KeyTypingError(x11.X11Error):
    """Typing did not happen as asked; the message says what the model can do."""


def split_for_keymap(text: str, on_keymap: set[str], limit: int, size: int) -> list[str]:
    """Pieces of at most ``size`` characters with at most ``limit`` distinct characters
    that are not ``on_keymap`` (each piece's must fit on the spare keycodes at once)."""
    pieces: list[str] = []
    current: list[str] = []
    off: set[str] = set()
    for char in text:
        new_off = char not in on_keymap and char not in off
        if current and (len(current) >= size or (new_off and len(off) >= limit)):
            pieces.append("".join(current))
            current, off = [], set()
        if char not in on_keymap:
            off.add(char)
        current.append(char)
    if current:
        pieces.append("".join(current))
    return pieces


def on_keymap(text: str, keymap: x11.Keymap) -> set[str]:
    """The characters of ``text`` on the base keymap (not counting our spare keycodes)."""
    base = keymap.keysyms(base_only=True)
    return {c for c in set(text) if c in "\n\t" or x11.char_keysym(c) in base}


class KeyTyper:
    """Types text with xdotool; see the module docstring for the keymap handshake."""

    def __init__(self, spare: x11.SpareKeycodes) -> None:
        self.spare = spare

    def type(self, text: str, between: Callable[[], None] | None = None) -> FocusedClient:
        """Type ``text`` at the keyboard focus; ``between`` (a callable) runs before each
        piece (the caller's stop and fail-safe checks). Returns the client typed into."""
        where = self.spare.where
        client = focused_client(where)
        keymap = x11.read_keymap(where)
        keymapped = on_keymap(text, keymap)
        capacity = keymap.capacity()
        limit = max(1, capacity // 2)
        pieces = split_for_keymap(text, keymapped, limit, TYPE_CHUNK)
        pending = False  # keys on spare keycodes sent but not yet proven handled
        for piece in pieces:
            if between is not None:
                between()
            missing = {x11.char_keysym(c) for c in piece if c not in keymapped}
            delay = _KEY_DELAY_MS
            if missing and not self.spare.mapped(missing):
                if pending:
                    self._handshake(client)  # the earlier keys were read with the old map
                    pending = False
                if not self.spare.ensure(missing):
                    log.warning("no spare keycodes: xdotool remaps while typing (may garble)")
                    delay = _REMAP_DELAY_MS
                elif client.pings:
                    self._handshake(client)  # the client has seen (and asked for) the new map
            pending = pending or bool(missing)
            self._type_piece(piece, delay, where)
        if client.pings:
            self._handshake(client)
        return client

    @staticmethod
    def _type_piece(piece: str, delay: int, where: x11.XDisplay) -> None:
        """xdotool types a newline as the Linefeed keysym, which GTK text views ignore:
        newlines are Return key presses here."""
        for i, line in enumerate(piece.split("\n")):
            if i:
                x11.xdotool("key", "Return", where=where)
            if line:
                timeout = 5 + len(line) * delay / 250
                x11.xdotool("type", "--delay", str(delay), "--", line, timeout=timeout, where=where)

    def _handshake(self, client: FocusedClient) -> None:
        """Wait until ``client`` has handled every key sent so far (see the module doc)."""
        if not client.pings:
            time.sleep(_GRACE_S)
            return
        answer = ping(client.toplevel, _PING_TIMEOUT_S, where=self.spare.where)
        if answer == "gone":  # the keys closed it (Return in a dialog): they were handled
            log.debug("the focused window went away while typing")
        elif answer == "silent":
            raise KeyTypingError(
                f"the focused window ({client.app}) did not handle the typed keys within "
                f"{_PING_TIMEOUT_S:.0f} s: it is busy or frozen, and the text may be incomplete. "
                "Take a screenshot to see what arrived."
            )
