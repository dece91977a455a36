"""Mouse and keyboard input on the real desktop. All coordinates are absolute logical
screen pixels; every method blocks (callers run it in a worker thread).

How each primitive is delivered, and why:

- Mouse (click, double/right click, move, drag, scroll) on X11 is XTEST through the
  Input's own connection to its display (:class:`jarvis.desktop.pointer.XPointer`), so
  two Inputs drive two displays from one process. Elsewhere it goes through pyautogui,
  imported on first use (it opens the display on import), with its global PAUSE set to
  0 and its own fail-safe replaced by ours (below). Drag presses, moves in steps and
  releases, so the target sees button-held motion and the release point. Scroll on X11
  is buttons 4/5 (up/down) and 6/7 (left/right); on Windows horizontal scroll is
  shift+wheel.
- Keys on X11 go through ``xdotool key``, or without xdotool XTEST on the Input's own
  connection (:func:`jarvis.desktop.keymap.key_chord`; never pyautogui, which presses on
  the process's ``DISPLAY``); a keysym missing from the keymap (F13-F24,
  a non-ASCII character) is first put on a spare keycode (see
  :class:`jarvis.desktop.keymap.SpareKeycodes`), because xdotool's own remapping races
  with the receiving client. Elsewhere keys go through pyautogui keyDown/keyUp.
  Key names are validated first (:mod:`jarvis.desktop.keys`): an unknown key is an
  :class:`UnknownKeyError`, never a silent no-op (pyautogui ignores names it does not know).
- Text (``type_method``) on X11 is key presses (xdotool) or a paste with the focused
  application's paste key, checked to arrive; elsewhere pyautogui or pyperclip, which
  cannot check: see :mod:`jarvis.desktop.text_entry`.

Fail-safe (``settings.failsafe``, on): a pointer in a screen corner we did not put there
makes the next action raise FailSafeError, so a person can stop the agent by throwing
the mouse into a corner; the agent itself may still click a corner pixel.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Literal

from jarvis.desktop import keyhold, keymap, x11, xconnect
from jarvis.desktop.errors import FailSafeError, InputError, InputInterrupted
from jarvis.desktop.keys import (
    MODIFIERS,
    UnknownKeyError,
    normalize_key,
    parse_chord,
    pyautogui_key,
)
from jarvis.desktop.keytyper import KeyTyper, split_for_keymap
from jarvis.desktop.monitors import Monitor, desktop_monitors, failsafe_corners
from jarvis.desktop.pointer import XPointer
from jarvis.desktop.pointer_gestures import check_scroll
from jarvis.desktop.text_entry import (
    UNCHECKED_KEYS,
    UNCHECKED_PASTE,
    TypedText,
    TypeMethod,
    choose_method,
    clean_text,
    type_pasted,
    type_pyperclip,
)

if TYPE_CHECKING:
    from jarvis.config import Settings

__all__ = [
    "MODIFIERS",
    "FailSafeError",
    "Input",
    "InputError",
    "InputInterrupted",
    "TypedText",
    "UnknownKeyError",
    "normalize_key",
    "parse_chord",
    "pyautogui_key",
    "split_for_keymap",
]

log = logging.getLogger(__name__)

Direction = Literal["up", "down", "left", "right"]
_MULTI_CLICK_S = 0.5  # GTK and Qt count clicks within 400 ms as one sequence, Chromium 500
_DRAG_STEP_S = 0.005  # between drag steps: apps see each position


class Input:
    """Mouse and keyboard. See the module docstring for how each action is delivered."""

    def __init__(
        self,
        failsafe: bool = True,
        type_method: TypeMethod = "auto",
        stop: threading.Event | None = None,
        hold: threading.Event | None = None,
        *,
        display: x11.XDisplay,
    ) -> None:
        """``stop``, once set, interrupts a running action between its pieces (typing
        chunks, drag steps) and refuses new ones, until it is cleared. ``display`` is the
        X display to act on (its name empty where there is no X: Windows, macOS). ``hold``
        acts like ``stop`` while it is set: a person holds the screen (a takeover)."""
        if type_method not in ("auto", "xdotool", "clipboard"):
            raise ValueError(f"unknown type_method {type_method!r}")
        self.failsafe = failsafe
        self.type_method: TypeMethod = type_method
        self._x11 = x11.is_x11(display)
        self.where = display
        self._pg: Any = None
        self._pointer = XPointer(self.where)
        self._monitors: list[Monitor] | None = None  # read on first use
        self._placed: tuple[int, int] | None = None  # where we last put the pointer
        self._last_press = 0.0  # monotonic time of our last button press
        self._spare = keymap.SpareKeycodes(self.where)
        self._typer = KeyTyper(self._spare)
        self._lock = threading.RLock()
        self.held: list[str] = []  # keys held down by hold_key, in the order pressed
        self.stop = stop
        self.hold = hold

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        stop: threading.Event | None = None,
        *,
        hold: threading.Event | None = None,
        display: x11.XDisplay,
    ) -> Input:
        return cls(
            failsafe=settings.failsafe,
            type_method=settings.type_method,
            stop=stop,
            hold=hold,
            display=display,
        )

    # -- plumbing

    @property
    def gui(self) -> Any:
        """The pyautogui module, imported on first use (it opens the display on import)."""
        if self._pg is None:
            try:
                xconnect.allow_missing_xauthority()  # pyautogui connects at import
                import pyautogui
            except Exception as exc:  # any failure to reach the display; re-raised typed
                raise InputError(f"cannot open the display for input: {exc!r}") from exc
            pyautogui.PAUSE = 0
            pyautogui.FAILSAFE = False  # replaced by _guard, which knows where we left it
            self._pg = pyautogui
        return self._pg

    @property
    def mouse(self) -> Any:
        """What moves the pointer: our XTEST pointer on X11, pyautogui elsewhere."""
        return self._pointer if self._x11 else self.gui

    def reopen(self, display: x11.XDisplay) -> None:
        """Move to ``display`` (a task's private display, and back): forget the old one's
        bounds, pointer and spare keycodes. Between tasks only."""
        with self._lock:
            self._pointer.close()
            self.where = display
            self._pointer = XPointer(display)
            self._monitors = None
            self._placed = None
            self._spare = keymap.SpareKeycodes(display)
            self._typer = KeyTyper(self._spare)

    def close(self) -> None:
        """Close the connection to the display (a later action opens a new one)."""
        with self._lock:
            self._pointer.close()

    def monitors(self) -> list[Monitor]:
        """The display's monitors (all together, then each), read once per display."""
        with self._lock:
            if self._monitors is None:
                self._monitors = desktop_monitors(self.where if self._x11 else None)
            return self._monitors

    def bounds(self) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of all monitors together, right/bottom exclusive."""
        m = self.monitors()[0]
        return m.left, m.top, m.left + m.width, m.top + m.height

    def _check_point(self, x: int, y: int) -> None:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (x, y)):
            raise InputError(f"coordinates must be integers, got ({x!r}, {y!r})")
        left, top, right, bottom = self.bounds()
        if not (left <= x < right and top <= y < bottom):
            raise InputError(
                f"({x}, {y}) is outside the screen ({left}, {top})-({right - 1}, {bottom - 1})"
            )

    def _guard(self) -> None:
        """Raise InputInterrupted once ``stop`` is set, FailSafeError if a person moved the
        pointer into a screen corner. Called before an action and between its pieces."""
        if self.stop is not None and self.stop.is_set():
            raise InputInterrupted("input stopped: the task was cancelled")
        if self.hold is not None and self.hold.is_set():
            raise InputInterrupted("input stopped: a person took over the screen")
        if not self.failsafe:
            return
        pos = self.position()  # a corner of the whole or of a monitor
        if pos in failsafe_corners(self.monitors()) and pos != self._placed:
            raise FailSafeError(
                f"fail-safe: the mouse was moved into the screen corner {pos}; input stopped. "
                "Move it away to go on, or turn the fail-safe off (failsafe=false)."
            )

    def _placed_at(self, x: int, y: int) -> None:
        self._placed = (x, y)

    def position(self) -> tuple[int, int]:
        x, y = self.mouse.position()
        return int(x), int(y)

    # -- mouse

    def click(self, x: int, y: int) -> None:
        self._mouse("click", x, y, clicks=1, button="left")
        self._last_press = time.monotonic()

    def double_click(self, x: int, y: int) -> None:
        self._burst(x, y, 2)

    def triple_click(self, x: int, y: int) -> None:
        """Three left clicks in one burst (selects a line or paragraph)."""
        self._burst(x, y, 3)

    def _burst(self, x: int, y: int, count: int) -> None:
        if not self._x11:
            self._mouse("click", x, y, clicks=count, button="left")
            return
        with self._lock:  # one burst: a busy machine cannot stretch it past the double-click time
            self._check_point(x, y)
            self._guard()
            self._outlast_click_sequence()
            self._pointer.moveTo(x, y)
            try:
                x11.click_burst(self._pointer.display, button=1, count=count)
            except x11.X11Error as exc:
                raise InputError(str(exc)) from exc
            self._placed_at(x, y)
            self._last_press = time.monotonic()

    def _outlast_click_sequence(self) -> None:
        """Let the double-click time of our last press pass, so that the application
        does not count a double click as the third and fourth click of a sequence
        (measured in mousepad: a double click 0.3 s after the last one selected
        nothing, four times in ten)."""
        wait = self._last_press + _MULTI_CLICK_S - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def right_click(self, x: int, y: int) -> None:
        self._mouse("click", x, y, clicks=1, button="right")

    def middle_click(self, x: int, y: int) -> None:
        self._mouse("click", x, y, clicks=1, button="middle")

    def move(self, x: int, y: int) -> None:
        self._mouse("moveTo", x, y)

    def _mouse(self, action: str, x: int, y: int, **kwargs: Any) -> None:
        with self._lock:
            self._check_point(x, y)
            self._guard()
            getattr(self.mouse, action)(x, y, **kwargs)
            self._placed_at(x, y)

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        """Press at (x1, y1), move there in steps with the button held, release at (x2, y2)."""
        with self._lock:
            self._check_point(x1, y1)
            self._check_point(x2, y2)
            self._guard()
            gui = self.mouse
            gui.moveTo(x1, y1)
            self._placed_at(x1, y1)
            gui.mouseDown(x1, y1, button="left")
            released = False
            try:
                steps = max(4, min(12, max(abs(x2 - x1), abs(y2 - y1)) // 40))
                for i in range(1, steps + 1):
                    time.sleep(_DRAG_STEP_S)
                    self._guard()
                    px = x1 + round((x2 - x1) * i / steps)
                    py = y1 + round((y2 - y1) * i / steps)
                    gui.moveTo(px, py)
                    self._placed_at(px, py)
                gui.mouseUp(x2, y2, button="left")
                released = True
                self._last_press = time.monotonic()
            finally:
                if not released:
                    gui.mouseUp(button="left")

    def scroll(self, x: int, y: int, direction: Direction, amount: int = 3) -> None:
        """Scroll ``amount`` wheel clicks at (x, y) in ``direction``."""
        check_scroll(direction, amount)
        with self._lock:
            self._check_point(x, y)
            self._guard()
            gui = self.mouse
            sign = 1 if direction in ("up", "right") else -1
            if direction in ("up", "down"):
                gui.scroll(sign * amount, x, y)
            elif sys.platform == "win32":  # no horizontal wheel in pyautogui: shift+wheel
                with gui.hold("shift"):
                    gui.scroll(-sign * amount, x, y)
            else:
                gui.hscroll(sign * amount, x, y)
            self._placed_at(x, y)

    # -- keyboard

    def hotkey(self, keys: str) -> None:
        """Press a chord such as ``"ctrl+shift+s"`` (held in order, released in reverse)."""
        chord = parse_chord(keys)
        with self._lock:
            self._guard()
            self._press(chord)

    def press_key(self, key: str) -> None:
        """Press and release one key (a ``+`` chord is accepted too)."""
        self.hotkey(key)

    def hold_key(self, key: str, down: bool = True) -> None:
        """Hold one key down (``down``) until it is let go (see :mod:`.keyhold`)."""
        name = normalize_key(key)
        with self._lock:
            if down:
                self._guard()
            keyhold.send_key(
                name,
                down,
                on_x11=self._x11,
                where=self.where,
                spare=self._spare,
                display=lambda: self._pointer.display,
                gui=lambda: self.gui,
            )
            self.held[:] = [k for k in self.held if k != name] + ([name] if down else [])

    def release_keys(self) -> None:
        """Let go of every key :meth:`hold_key` holds, last pressed first (a task's end)."""
        for name in reversed(self.held):
            self.hold_key(name, down=False)

    def _press(self, chord: list[str]) -> None:
        if not self._x11:
            self.gui.hotkey(*[pyautogui_key(k) for k in chord])
            return
        keysyms = [x11.keysym_number(k) for k in chord]
        self._spare.ensure(keysyms)
        if x11.have("xdotool"):
            self._xdotool("key", "+".join(x11.keysym_name(k) for k in chord))
            return
        try:  # XTEST on our own connection: pyautogui would press on $DISPLAY
            keymap.key_chord(self._pointer.display, keysyms)
        except x11.X11Error as exc:
            raise InputError(str(exc)) from exc

    def _xdotool(self, *args: str, timeout: float = 10.0) -> None:
        try:
            x11.xdotool(*args, timeout=timeout, where=self.where)
        except x11.X11Error as exc:
            raise InputError(str(exc)) from exc

    def type_text(self, text: str) -> TypedText:
        """Type ``text`` exactly; newline is the Return key and tab the Tab key."""
        text = clean_text(text)
        if not text:
            return TypedText(self.type_method, 0)
        with self._lock:
            self._guard()
            method = choose_method(self.type_method, self._x11, text)
            log.debug("typing %d characters with %s", len(text), method)
            try:
                if method == "xdotool":
                    client = self._typer.type(text, between=self._guard)
                    return TypedText(method, len(text), target=client.app)
                if method == "clipboard":
                    return type_pasted(text, self.where, self._press, self._guard)
            except x11.X11Error as exc:
                self._guard()  # ended by a brake or a takeover: say so, not "xdotool failed"
                raise InputError(str(exc)) from exc
            if method == "write":
                self.gui.write(text)
                return TypedText(method, len(text), unchecked=UNCHECKED_KEYS)
            type_pyperclip(text, self.gui)
            return TypedText(method, len(text), unchecked=UNCHECKED_PASTE)
