"""The X keymap as Jarvis types with it: reading it, spare keycodes, chords through XTEST.

- :class:`Keymap` is one reading of the server's keyboard mapping (the core map, which
  XKB keeps for the master keyboard and, on every change made through the core
  protocol, for each keyboard attached to it, the XTEST device that our key events come
  from included). In a row, columns 0-1 are group 1 (unshifted, shifted) and columns
  2-3 group 2, so a two-group layout (``us,ru``) shows both alphabets.
- :class:`SpareKeycodes` puts keysyms that are missing from the keymap (F13-F24,
  accented letters on a US layout, CJK, emoji) onto keycodes that have no keysym (no
  physical key) before they are pressed, and maps those keycodes back to nothing when
  the typing is done (:meth:`SpareKeycodes.restore`). Left to itself, xdotool remaps a
  scratch keycode per character and maps it back at once, and the receiving client,
  reading the event later, sees the wrong keysym: under load a CJK string came out
  garbled and F13 as "??".
- :func:`key_chord` presses a chord with XTEST when xdotool is missing, in the keyboard
  group where its key is (locked around the press, the user's group put back after).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from jarvis.desktop import xkb
from jarvis.desktop.x11 import X11Error, XDisplay, close_display

log = logging.getLogger(__name__)

_VOID = 0xFFFFFF  # the VoidSymbol keysym
_SHIFT_L = 0xFFE1  # the Shift_L keysym
_CLICK_GAP_MS = 12
# (group, level) of the core map's first four columns
_COLUMNS = ((0, 0), (0, 1), (1, 0), (1, 1))


@dataclass(frozen=True)
class Keymap:
    """One reading of the server's keyboard mapping.

    Keycodes we put a keysym on read ``[sym, sym, VoidSymbol, VoidSymbol, ...]``
    (group 1 is the keysym, group 2 explicitly nothing), which no key of a standard
    keymap has: that marks them as ours, for any process. A key pressed on one of them
    is pressed with group 1 locked (xdotool does that for every key it types, and
    :func:`key_chord` too), so it types its keysym under any active group.
    """

    first: int
    rows: list[list[int]]

    @staticmethod
    def read(display: Any) -> Keymap:
        first = display.display.info.min_keycode
        rows = display.get_keyboard_mapping(first, display.display.info.max_keycode - first + 1)
        return Keymap(first, [list(row) for row in rows])

    @staticmethod
    def is_ours(row: list[int]) -> bool:
        return len(row) >= 4 and row[0] not in (0, _VOID) and row[:4] == our_row(row[0])

    def ours(self) -> dict[int, int]:
        """keycode -> keysym of the rows we mapped."""
        return {self.first + i: row[0] for i, row in enumerate(self.rows) if self.is_ours(row)}

    def unmapped(self) -> list[int]:
        """Keycodes without any keysym (no physical key)."""
        return [self.first + i for i, row in enumerate(self.rows) if not any(row)]

    def free(self) -> list[int]:
        """Keycodes without any keysym, the last one left to xdotool."""
        return self.unmapped()[:-1]

    def keycode(self, keysym: int, group: int = 0) -> tuple[int, int, int]:
        """(keycode, group, level) of ``keysym`` on the first two levels of groups 1
        and 2, looked up in ``group`` (0 = group 1) first; X11Error when no key has it."""
        order = sorted(_COLUMNS, key=lambda gl: (gl[0] != group, gl[1], gl[0]))
        for g, level in order:
            column = 2 * g + level
            for i, row in enumerate(self.rows):
                if len(row) > column and row[column] == keysym:
                    return self.first + i, g, level
        raise X11Error(f"the keysym {keysym:#x} is on no key of the keymap")

    def keysyms(self, base_only: bool = False) -> set[int]:
        """Every keysym on the keymap; ``base_only`` leaves out the rows we mapped."""
        rows = [r for r in self.rows if not (base_only and self.is_ours(r))]
        return {sym for row in rows for sym in row if sym}

    def capacity(self) -> int:
        """How many keysyms can be put on spare keycodes at once."""
        return len(self.free()) + len(self.ours())


def our_row(keysym: int) -> list[int]:
    """The keyboard-mapping row that puts ``keysym`` on a spare keycode (see Keymap)."""
    return [keysym, keysym, _VOID, _VOID]


def change_rows(display: Any, rows: dict[int, list[int]]) -> None:
    """Set keyboard-mapping ``rows`` (keycode -> row), one request per run of consecutive
    keycodes: each request makes every client re-read the map, so fewer is faster."""
    run: list[int] = []
    for code in sorted(rows):
        if run and code != run[-1] + 1:
            display.change_keyboard_mapping(run[0], [rows[c] for c in run])
            run = []
        run.append(code)
    if run:
        display.change_keyboard_mapping(run[0], [rows[c] for c in run])
        group_told_again(display)


def group_told_again(display: Any) -> None:
    """After a keyboard mapping change, tell every client the active group again, when it
    is not the first: Qt (5.15 measured) builds a fresh keyboard state with its new keymap
    on XkbMapNotify and translates keys in group 1 until an XkbStateNotify arrives (under
    ``us,ru`` with the Russian group locked, "привет" typed after a remap came out as
    "ghbdtn"). Locking group 1 and then the active group sends that notification after
    the mapping's, so every client reads its next key with the group in force."""
    group = xkb.active_group(display)
    if group:
        xkb.lock_group(display, 0)
        xkb.lock_group(display, group)
        display.sync()


def read_keymap(where: XDisplay) -> Keymap:
    display = where.open()
    try:
        return Keymap.read(display)
    finally:
        display.close()


class SpareKeycodes:
    """Puts keysyms that are missing from the keymap onto spare keycodes.

    Mapped here first, xdotool finds the keysym on the keymap and just presses it, and
    the mapping is still in place when the client reads the event. A mapping stays
    until its keycode is needed for another keysym (least recently used first) or until
    :meth:`restore` maps the keycodes back to nothing. Keycodes without keysyms have no
    physical key, so this changes no real key.
    """

    def __init__(self, where: XDisplay) -> None:
        self.where = where
        self._recent: OrderedDict[int, int] = OrderedDict()  # keycode -> keysym, newest last
        self.changed: set[int] = set()  # keycodes mapped since the caller last cleared it

    def keymap(self) -> Keymap:
        """The keymap as the server has it now (read at every use, so a layout changed by
        the user or another program is the one typed with)."""
        return read_keymap(self.where)

    def mapped(self, keysyms: Collection[int]) -> bool:
        """True if every one of ``keysyms`` is on the keymap now (ours or the base map's)."""
        return set(keysyms) <= self.keymap().keysyms()

    def ensure(self, keysyms: Collection[int]) -> bool:
        """Map the missing ``keysyms``; False (and no change) if too few keycodes are free."""
        wanted = list(dict.fromkeys(keysyms))
        display = self.where.open()
        try:
            keymap = Keymap.read(display)
            ours = keymap.ours()
            for code, sym in ours.items():
                if sym in wanted:
                    self._recent[code] = sym
                    self._recent.move_to_end(code)
            missing = [sym for sym in wanted if sym not in keymap.keysyms()]
            if not missing:
                return True
            recent = [code for code in self._recent if code in ours]
            oldest_first = [code for code in ours if code not in recent] + recent
            slots = keymap.free() + [code for code in oldest_first if ours[code] not in wanted]
            if len(missing) > len(slots):
                return False
            rows = {code: our_row(sym) for sym, code in zip(missing, slots, strict=False)}
            change_rows(display, rows)
            for code, row in rows.items():
                self.changed.add(code)
                self._recent[code] = row[0]
                self._recent.move_to_end(code)
            log.debug("mapped %d keysyms onto spare keycodes", len(missing))
            return True
        finally:
            close_display(display)

    def restore(self, codes: Collection[int]) -> int:
        """Map ``codes`` that still hold our rows back to nothing; how many did. Call it
        once the client has read the keys typed on them."""
        display = self.where.open()
        try:
            ours = Keymap.read(display).ours()
            back = [code for code in codes if code in ours]
            change_rows(display, {code: [0, 0, 0, 0] for code in back})
            for code in back:
                self._recent.pop(code, None)
            return len(back)
        finally:
            close_display(display)

    def probe(self) -> None:
        """A keyboard mapping change that changes nothing (an unmapped keycode mapped to
        nothing again): every client gets a MappingNotify, and a client that fetches
        the map on it says that it has dispatched every earlier event."""
        display = self.where.open()
        try:
            keymap = Keymap.read(display)
            spare = keymap.unmapped()
            if spare:
                display.change_keyboard_mapping(spare[-1], [[0, 0, 0, 0]])
            else:  # a full keymap: one of its rows written again as it is
                display.change_keyboard_mapping(keymap.first, [keymap.rows[0]])
            group_told_again(display)
        finally:
            close_display(display)


def key_chord(display: Any, keysyms: list[int]) -> None:
    """Press ``keysyms`` in order and release them in reverse with XTEST on ``display``
    (an open python-xlib connection), as ``xdotool key`` does: each keysym's keycode
    is read from the server's keymap now (python-xlib's cached copy may be older than
    our spare keycodes), a keysym found only on a key's shifted level gets Shift held
    with it, and the chord is pressed with the group of its last key locked (``ctrl+z``
    under ``us,ru`` with the Russian group active is ctrl and the key of z in group 1).
    A keysym not on the keymap is an X11Error; nothing is pressed then."""
    from Xlib import X
    from Xlib.ext import xtest

    try:
        keymap = Keymap.read(display)
        active = xkb.active_group(display)
        codes: list[int] = []
        group = active
        for sym in keysyms:
            code, group, level = keymap.keycode(sym, active)
            if level == 1:
                shift, _, _ = keymap.keycode(_SHIFT_L)
                codes += [c for c in (shift,) if c not in codes]
            codes.append(code)
        with xkb.group_locked(display, group):
            for code in codes:
                xtest.fake_input(display, X.KeyPress, code, time=_CLICK_GAP_MS)
            for code in reversed(codes):
                xtest.fake_input(display, X.KeyRelease, code, time=_CLICK_GAP_MS)
            display.sync()
    except X11Error:
        raise
    except Exception as exc:  # the display is gone or refuses us
        raise X11Error(f"the display took no keys: {exc!r}") from exc
