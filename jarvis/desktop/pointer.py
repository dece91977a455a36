"""The mouse on one X display, through a connection of its own (XTEST).

:class:`XPointer` offers the part of pyautogui's mouse interface that
:class:`jarvis.desktop.input.Input` uses (``position``, ``moveTo``, ``click``,
``mouseDown``, ``mouseUp``, ``scroll``, ``hscroll``), the same events as pyautogui's
X11 backend (a motion, then press and release; wheel buttons 4/5 up/down and 6/7
left/right), but on the display it was made for: pyautogui keeps one connection in a
module global, so a process could drive only one display with it.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from jarvis.desktop.errors import InputError
from jarvis.desktop.x11 import XDisplay, close_display

_BUTTONS = {"left": 1, "middle": 2, "right": 3}


class XPointer:
    """XTEST pointer events on ``where``; the connection opens on first use."""

    def __init__(self, where: XDisplay) -> None:
        self.where = where
        self._display: Any = None
        self._lock = threading.RLock()

    @property
    def display(self) -> Any:
        """The open python-xlib connection (InputError when the display cannot be reached)."""
        with self._lock:
            if self._display is None:
                try:
                    self._display = self.where.open()
                except Exception as exc:  # any failure to reach the display; re-raised typed
                    raise InputError(
                        f"cannot open the display {self.where.name} for input: {exc!r}"
                    ) from exc
            return self._display

    def _send(self, kind: str, detail: int = 0, x: int | None = None, y: int | None = None) -> None:
        from Xlib import X
        from Xlib.ext import xtest

        with self._lock:
            display = self.display
            try:
                if kind == "motion":
                    xtest.fake_input(display, X.MotionNotify, x=x, y=y)
                else:
                    event = X.ButtonPress if kind == "press" else X.ButtonRelease
                    xtest.fake_input(display, event, detail)
                display.sync()
            except Exception as exc:  # the display went away under us
                raise InputError(f"the display {self.where.name} took no input: {exc!r}") from exc

    def position(self) -> tuple[int, int]:
        with self._lock:
            pointer = self.display.screen().root.query_pointer()
            return int(pointer.root_x), int(pointer.root_y)

    def moveTo(self, x: int, y: int) -> None:
        self._send("motion", x=x, y=y)

    def mouseDown(self, x: int, y: int, button: str = "left") -> None:
        self.moveTo(x, y)
        self._send("press", _BUTTONS[button])

    def mouseUp(self, x: int | None = None, y: int | None = None, button: str = "left") -> None:
        if x is not None and y is not None:
            self.moveTo(x, y)
        self._send("release", _BUTTONS[button])

    def click(self, x: int, y: int, clicks: int = 1, button: str = "left") -> None:
        self.moveTo(x, y)
        for _ in range(clicks):
            self._send("press", _BUTTONS[button])
            self._send("release", _BUTTONS[button])

    def _wheel(self, button: int, times: int, x: int, y: int) -> None:
        self.moveTo(x, y)
        for _ in range(times):
            self._send("press", button)
            self._send("release", button)

    def scroll(self, clicks: int, x: int, y: int) -> None:
        """Positive ``clicks`` scroll up (button 4), negative down (button 5)."""
        self._wheel(4 if clicks > 0 else 5, abs(clicks), x, y)

    def hscroll(self, clicks: int, x: int, y: int) -> None:
        """Positive ``clicks`` scroll right (button 7), negative left (button 6)."""
        self._wheel(7 if clicks > 0 else 6, abs(clicks), x, y)

    def close(self) -> None:
        with self._lock:
            if self._display is not None:
                display, self._display = self._display, None
                with contextlib.suppress(Exception):  # the display may be gone already
                    close_display(display)
