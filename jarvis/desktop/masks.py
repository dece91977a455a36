"""Parts of the screen no picture may show: the field a secret was typed into.

A :class:`ScreenMasks` belongs to one :class:`~jarvis.desktop.screen.Screen`; every picture
the screen takes (the model's screenshots, the step pictures, the live view, a zoom) has the
masked boxes painted over before it is scaled or encoded. A box lasts ``seconds`` (the
``safety.secrets.mask_s`` setting) and can be cleared.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from PIL import Image, ImageDraw

Box = tuple[int, int, int, int]
"""x, y, width, height in absolute logical screen pixels."""
MASK_FILL = (32, 32, 32)
PAD = 4


class ScreenMasks:
    """Boxes painted over every picture until they expire (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._boxes: list[tuple[Box, float]] = []
        self._lock = threading.Lock()

    def add(self, box: Box, seconds: float) -> None:
        x, y, w, h = box
        padded = (x - PAD, y - PAD, w + 2 * PAD, h + 2 * PAD)
        with self._lock:
            self._boxes.append((padded, self._clock() + seconds))

    def active(self) -> list[Box]:
        now = self._clock()
        with self._lock:
            self._boxes = [(b, until) for b, until in self._boxes if until > now]
            return [b for b, _ in self._boxes]

    def clear(self) -> None:
        with self._lock:
            self._boxes.clear()

    def paint(self, image: Image.Image, origin: tuple[int, int], logical: tuple[int, int]) -> None:
        """Paint the active boxes over ``image``, a picture of the monitor at ``origin`` of
        logical size ``logical`` (its pixels may be device pixels)."""
        boxes = self.active()
        if not boxes:
            return
        sx, sy = image.width / logical[0], image.height / logical[1]
        draw = ImageDraw.Draw(image)
        for x, y, w, h in boxes:
            left, top = (x - origin[0]) * sx, (y - origin[1]) * sy
            draw.rectangle((left, top, left + w * sx, top + h * sy), fill=MASK_FILL)
