"""Typing text as key presses on X11 (xdotool), any character, in any application, under
any keyboard layout and group.

The layout: xdotool reads the keymap with XKB when it starts, finds each character in
any group and level, and presses its key with that group locked and the modifiers of
its level held (``@`` is AltGr+q under ``de``; Latin letters under ``us,ru`` with the
Russian group active are typed in group 1 and the user's group is put back). A
character that is on no key (accents on a US layout, CJK, emoji) is put on a spare
keycode first (:class:`jarvis.desktop.keymap.SpareKeycodes`), and the spare keycodes are
mapped back to nothing once the application has read the text. The keymap is read from
the server before every piece, so a layout changed meanwhile (its MappingNotify) is the
one typed with.

A client translates a key event into a character with the keymap it has *read*: after
a change it gets a MappingNotify and refreshes, at its own pace (Xlib marks its map stale
when the XKB notification arrives on its socket; Xt clients such as xterm fetch the map
while dispatching the notification; GTK, Qt and Chromium on their XKB notify). So when
text has more distinct off-keymap characters than there are spare keycodes, the keycodes
are remapped between pieces, and a keycode remapped before the client has translated
the previous piece's presses of it comes out as the new character, or as nothing.
Measured: Chromium dropped CJK pieces, xterm printed the wrong characters under load.
Here:

- a piece uses at most half the spare keycodes, and the least recently used ones,
  so consecutive pieces never share a keycode (one piece of slack for the client);
- before a piece remaps keycodes, the focused application must prove that it has
  handled everything sent so far, and after the remap that it holds the new map, each
  with a signal the application gives, never a guessed delay:

  - an application that answers ``_NET_WM_PING`` (GTK, Qt, Chromium, Electron) answers
    it after the events queued before it (X delivers a client's events in order);
  - one that does not (xterm and other Xt clients) fetches the keyboard map while it
    dispatches a MappingNotify, and that fetch is seen through the RECORD extension
    (:class:`jarvis.desktop.map_answers.MapAnswers`): after a change that changes nothing
    (:meth:`SpareKeycodes.probe`) it proves every earlier key was dispatched, after the
    remap that the new map is held. A plain Xlib client (Tk) fetches the changed keys
    with XKB's GetMap instead, which counts for it (a weaker proof: see map_answers). A
    client that gives no signal (no RECORD on the server) is typed into without the
    proof, and the log says so once per window;

- after the last piece the application must give the signal too: a focused window that
  does not handle its events (no ping answer within 3 s) is an error, never a success.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import nullcontext

from jarvis.desktop import x11
from jarvis.desktop.keymap import Keymap, SpareKeycodes
from jarvis.desktop.map_answers import MapAnswers
from jarvis.desktop.x11_focus import FocusedClient, focused_client, ping

log = logging.getLogger(__name__)

TYPE_CHUNK = 100  # characters per xdotool call (keeps each call short and interruptible)
_KEY_DELAY_MS = 2  # per key for keymap characters (nothing is remapped while typing)
_REMAP_DELAY_MS = 12  # per key when no spare keycode is left and xdotool remaps itself
_PING_TIMEOUT_S = 3.0
_ANSWER_TIMEOUT_S = 1.5  # a client that fetches maps does so within milliseconds


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


def on_keymap(text: str, keymap: Keymap) -> set[str]:
    """The characters of ``text`` on the base keymap (not counting our spare keycodes)."""
    base = keymap.keysyms(base_only=True)
    return {c for c in set(text) if c in "\n\t" or x11.char_keysym(c) in base}


def _keysyms(piece: str) -> set[int]:
    return {x11.char_keysym(c) for c in piece if c not in "\n\t"}


class _Handshake:
    """The focused client's signal that it handled its keys (see the module docstring)."""

    def __init__(self, client: FocusedClient, spare: SpareKeycodes, answers: MapAnswers | None):
        self.client = client
        self.spare = spare
        self.answers = answers
        self.unproven = False  # the client gave no signal once: typing goes on without it

    def drained(self) -> None:
        """Return once the client has handled every key sent so far."""
        if self.client.pings:
            self._ping()
        elif self._watching() and self.answers is not None:
            self._answered(self.answers.changed(self.spare.probe))

    def remap(self, keysyms: set[int]) -> bool:
        """Put ``keysyms`` on spare keycodes and return once the client holds the new map;
        False (nothing changed) when too few keycodes are spare."""
        if self.client.pings:
            if not self.spare.ensure(keysyms):
                return False
            self._ping()
            return True
        if not self._watching() or self.answers is None:
            return self.spare.ensure(keysyms)
        done: list[bool] = []
        notification = self.answers.changed(lambda: done.append(self.spare.ensure(keysyms)))
        if done[0]:
            self._answered(notification)
        return done[0]

    def _watching(self) -> bool:
        """Whether the client's keymap fetches can still be waited for; says once when not."""
        if self.answers is not None and self.answers.ok and not self.unproven:
            return True
        self._unproven()
        return False

    def _answered(self, notification: int) -> None:
        assert self.answers is not None
        if not self.answers.wait(notification, _ANSWER_TIMEOUT_S):
            self._unproven()

    def _unproven(self) -> None:
        if not self.unproven:
            self.unproven = True
            log.info(
                "%s gave no sign of reading its keys (no ping, no keymap fetch seen): "
                "typing on without that proof",
                self.client.app,
            )

    def _ping(self) -> None:
        answer = ping(self.client.toplevel, _PING_TIMEOUT_S, where=self.spare.where)
        if answer == "gone":  # the keys closed it (Return in a dialog): they were handled
            log.debug("the focused window went away while typing")
        elif answer == "silent":
            raise KeyTypingError(
                f"the focused window ({self.client.app}) did not handle the typed keys within "
                f"{_PING_TIMEOUT_S:.0f} s: it is busy or frozen, and the text may be incomplete. "
                "Take a screenshot to see what arrived."
            )


class KeyTyper:
    """Types text with xdotool; see the module docstring for the keymap handshake."""

    def __init__(self, spare: SpareKeycodes) -> None:
        self.spare = spare
        self.silent: set[int] = set()
        """Windows whose client gave no sign once (no ping, no keymap fetch seen): later
        texts into them do not wait for one again."""

    def type(self, text: str, between: Callable[[], None] | None = None) -> FocusedClient:
        """Type ``text`` at the keyboard focus; ``between`` (a callable) runs before each
        piece (the caller's stop and fail-safe checks). Returns the client typed into."""
        where = self.spare.where
        client = focused_client(where)
        keymap = self.spare.keymap()
        limit = max(1, keymap.capacity() // 2)
        pieces = split_for_keymap(text, on_keymap(text, keymap), limit, TYPE_CHUNK)
        self.spare.changed.clear()
        silent = client.toplevel in self.silent
        watch = nullcontext(None) if client.pings or silent else MapAnswers(where, client.toplevel)
        with watch as answers:
            handshake = _Handshake(client, self.spare, answers)
            handshake.unproven = silent
            spare_used = self._pieces(pieces, handshake, between)
            if spare_used or client.pings:
                handshake.drained()  # every key handled: nothing typed is lost silently
            if handshake.unproven:
                self.silent.add(client.toplevel)
            if self.spare.changed:  # read by now: the keycodes go back to nothing
                self.spare.restore(self.spare.changed)
                self.spare.changed.clear()
        return client

    def _pieces(
        self, pieces: list[str], handshake: _Handshake, between: Callable[[], None] | None
    ) -> bool:
        """Type ``pieces``; True if any key was pressed on a spare keycode."""
        pending = False  # keys on spare keycodes sent but not yet proven handled
        used = False
        for piece in pieces:
            if between is not None:
                between()
            keymap = self.spare.keymap()  # now: a layout changed meanwhile is seen
            off = _keysyms(piece) - keymap.keysyms(base_only=True)  # typed on spare keycodes
            delay = _KEY_DELAY_MS
            if off - keymap.keysyms():
                if pending:
                    handshake.drained()  # the earlier keys were read with the old map
                    pending = False
                if not handshake.remap(off):  # the piece's others stay where they are
                    log.warning("no spare keycodes: xdotool remaps while typing (may garble)")
                    delay = _REMAP_DELAY_MS
            pending = pending or bool(off)
            used = used or bool(off)
            self._type_piece(piece, delay, self.spare.where)
        return used

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
