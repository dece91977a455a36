"""Are two screenshots the same picture? Their pixels decide, not their pHash.

A 64-bit pHash within a few bits is only a candidate: "the editor with a typed line" and
"the empty editor" hash alike. Two screenshots are the same when they decode to the same
size and no channel of any pixel differs by more than :data:`TOLERANCE` (room for an
encoder's rounding, none for a glyph). Equal bytes are the same without decoding.
"""

from __future__ import annotations

import io
import logging
from collections import OrderedDict
from pathlib import Path

from PIL import Image, ImageChops, UnidentifiedImageError

log = logging.getLogger(__name__)

TOLERANCE = 8
"""Largest difference (0..255) allowed in any channel of any pixel."""

Source = Path | bytes


def decode(source: Source) -> Image.Image | None:
    """The RGB pixels of an image file or of encoded bytes; None when it is not an image."""
    try:
        with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as opened:
            return opened.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        log.debug("not a readable image: %s", exc)
        return None


def raw(source: Source) -> bytes | None:
    if isinstance(source, bytes):
        return source
    try:
        return source.read_bytes()
    except OSError:
        return None


def same_images(a: Image.Image, b: Image.Image, tolerance: int = TOLERANCE) -> bool:
    if a.size != b.size:
        return False
    beyond = ImageChops.difference(a, b).point(lambda v: 255 if v > tolerance else 0)
    return beyond.getbbox() is None  # no channel of any pixel is off by more


def same_pixels(a: Source, b: Source, tolerance: int = TOLERANCE) -> bool:
    """True when ``a`` and ``b`` (files or encoded bytes) show the same pixels."""
    data_a, data_b = raw(a), raw(b)
    if data_a is None or data_b is None:
        return False
    if data_a == data_b:
        return True
    first, second = decode(data_a), decode(data_b)
    return first is not None and second is not None and same_images(first, second, tolerance)


class PixelCache:
    """Decoded files for many comparisons in a row, the last few kept in memory."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._images: OrderedDict[Path, Image.Image | None] = OrderedDict()

    def image(self, path: Path) -> Image.Image | None:
        if path in self._images:
            self._images.move_to_end(path)
            return self._images[path]
        image = decode(path)
        self._images[path] = image
        if len(self._images) > self.size:
            self._images.popitem(last=False)
        return image

    def same(self, a: Path, b: Path) -> bool:
        first, second = self.image(a), self.image(b)
        return first is not None and second is not None and same_images(first, second)
