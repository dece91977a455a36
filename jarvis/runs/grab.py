"""Small screen regions at full resolution, for target crops and their matches.

Target crops are cut from the screen itself (not from the downscaled screenshot the model
saw), so a replay matches them pixel for pixel: a window that moved by 40 screen pixels
moved by a whole number of pixels here, where the model's picture would have resampled it.
One mss instance per thread (mss connections are not shared across threads), on the
grabber's display (grim on a Wayland compositor): :meth:`Grabber.move_to` moves it (a
task's private display, and back).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from PIL import Image

from jarvis.desktop.backend import Where, region_grab
from jarvis.desktop.monitors import mss_for

Box = tuple[int, int, int, int]
"""left, top, right, bottom in absolute logical screen pixels."""


class Grabber:
    def __init__(self, where: Where | None = None) -> None:
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        self.where = where

    def move_to(self, where: Where | None) -> None:
        """Grab from ``where`` from now on."""
        self.where = where

    def _sct(self) -> Any:
        name = self.where  # None: the display this process was started on
        sct = getattr(self._local, "sct", None)
        if sct is not None and getattr(self._local, "display", None) != name:
            with self._lock:
                self._all.remove(sct)
            _close(sct)
            sct = None
        if sct is None:
            sct = mss_for(name)  # type: ignore[arg-type]  # region_grab took a Wayland one
            self._local.sct, self._local.display = sct, name
            with self._lock:
                self._all.append(sct)
        return sct

    def grab(self, box: Box) -> Image.Image:
        """The region ``box`` as an RGB image (physical pixels; equal to logical on X11;
        through screencopy on a Wayland compositor)."""
        cut = region_grab(self.where)
        if cut is not None:
            return cut(box)
        left, top, right, bottom = box
        shot = self._sct().grab(
            {"left": left, "top": top, "width": right - left, "height": bottom - top}
        )
        return Image.frombytes("RGB", (shot.width, shot.height), shot.raw, "raw", "BGRX")

    def close(self) -> None:
        with self._lock:
            for sct in self._all:
                _close(sct)
            self._all.clear()
        self._local = threading.local()


def _close(sct: Any) -> None:
    with contextlib.suppress(Exception):  # its display may be gone (a private one stopped)
        sct.close()
