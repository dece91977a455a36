"""Small screen regions at full resolution, for target crops and their matches.

Target crops are cut from the screen itself (not from the downscaled screenshot the model
saw), so a replay matches them pixel for pixel: a window that moved by 40 screen pixels
moved by a whole number of pixels here, where the model's picture would have resampled it.
One mss instance per thread (mss connections are not shared across threads).
"""

from __future__ import annotations

import threading
from typing import Any

from PIL import Image

Box = tuple[int, int, int, int]
"""left, top, right, bottom in absolute logical screen pixels."""


class Grabber:
    def __init__(self) -> None:
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    def _sct(self) -> Any:
        sct = getattr(self._local, "sct", None)
        if sct is None:
            import mss

            sct = mss.MSS()
            self._local.sct = sct
            with self._lock:
                self._all.append(sct)
        return sct

    def grab(self, box: Box) -> Image.Image:
        """The region ``box`` as an RGB image (physical pixels; equal to logical on X11)."""
        left, top, right, bottom = box
        shot = self._sct().grab(
            {"left": left, "top": top, "width": right - left, "height": bottom - top}
        )
        return Image.frombytes("RGB", (shot.width, shot.height), shot.raw, "raw", "BGRX")

    def close(self) -> None:
        with self._lock:
            for sct in self._all:
                sct.close()
            self._all.clear()
        self._local = threading.local()
