"""Does the screen still match a recording, and where did a recorded target go?

Two measures: the pHash distance of two screenshots (bits out of 64, model space), and a
template match of a target crop (OpenCV ``matchTemplate`` with normalised correlation,
screen pixels) in a region around where the target was recorded. A match gives the
offset to shift the action by.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

MIN_CONTRAST = 2.0
"""Least standard deviation (grey levels) of a crop for a template match to mean anything."""
TIE = 0.01
"""Peaks within this of the best score count as equally good; the nearest one wins."""


def phash_distance(a: str, b: str) -> int:
    """Bits that differ between two 64-bit pHashes in hex (64 when one is missing)."""
    if not a or not b:
        return 64
    try:
        return bin(int(a, 16) ^ int(b, 16)).count("1")
    except ValueError:
        return 64


Box = tuple[int, int, int, int]


AMBIGUOUS_PX = 4
"""Equally good places farther apart than this make a match ambiguous."""


@dataclass(frozen=True)
class Match:
    offset: tuple[int, int]
    """Where the crop is now minus where it was, in screen pixels."""
    score: float
    ties: tuple[tuple[int, int], ...] = ()
    """Offsets of every place scoring within :data:`TIE` of the best."""
    at_edge: bool = False
    """A tie lies on the edge of the search (the true best may be beyond it)."""

    @property
    def ambiguous(self) -> bool:
        """Equally good places far apart (a flat bar, a repeating grid), or the best at the
        edge of the search."""
        x, y = self.offset
        spread = any(abs(tx - x) + abs(ty - y) > AMBIGUOUS_PX for tx, ty in self.ties)
        return spread or self.at_edge

    def nearest(self, expected: tuple[float, float]) -> Match:
        """The tie nearest to ``expected`` (an offset)."""
        best = min(self.ties, key=lambda t: (t[0] - expected[0]) ** 2 + (t[1] - expected[1]) ** 2)
        return Match(offset=best, score=self.score, ties=self.ties, at_edge=self.at_edge)


def global_shift(before: Image.Image, now: Image.Image) -> tuple[float, float, float] | None:
    """How far the picture ``now`` moved against ``before`` as a whole (phase correlation):
    (dx, dy, response), in their pixels; ``None`` when the sizes differ."""
    import cv2

    if before.size != now.size:
        return None
    a = _grey(before).astype(np.float32)
    b = _grey(now).astype(np.float32)
    window = cv2.createHanningWindow((a.shape[1], a.shape[0]), cv2.CV_32F)
    (dx, dy), response = cv2.phaseCorrelate(a, b, window)
    return float(dx), float(dy), float(response)


def _grey(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L"), dtype=np.uint8)


def has_contrast(crop: Image.Image) -> bool:
    return float(_grey(crop).std()) >= MIN_CONTRAST


def search_box(box: Box, search_px: int, bounds: Box) -> Box:
    """``box`` grown by ``search_px`` on every side, kept inside ``bounds``."""
    left, top, right, bottom = box
    return (
        max(bounds[0], left - search_px),
        max(bounds[1], top - search_px),
        min(bounds[2], right + search_px),
        min(bounds[3], bottom + search_px),
    )


def find_target(
    region: Image.Image,
    region_box: Box,
    crop: Image.Image,
    box: Box,
    min_score: float,
    expected: tuple[int, int] = (0, 0),
    bounds: Box | None = None,
) -> Match | None:
    """Where ``crop`` (cut at ``box`` of the recording) is in ``region`` (the screen at
    ``region_box``); ``None`` when no place scores ``min_score``.

    Among places scoring within :data:`TIE` of the best, the one nearest to the recorded
    place shifted by ``expected`` wins (a grid repeats; the window moved as a whole).
    """
    import cv2

    w, h = box[2] - box[0], box[3] - box[1]
    if region.width < w or region.height < h or crop.size != (w, h):
        return None
    scores = cv2.matchTemplate(_grey(region), _grey(crop), cv2.TM_CCOEFF_NORMED)
    scores = np.nan_to_num(scores, nan=-1.0, posinf=-1.0, neginf=-1.0)
    best = float(scores.max())
    if best < min_score:
        return None
    ys, xs = np.nonzero(scores >= best - TIE)
    dx0, dy0 = region_box[0] - box[0], region_box[1] - box[1]
    ties = tuple((int(x) + dx0, int(y) + dy0) for x, y in zip(xs, ys, strict=True))
    # an edge of the search that is not the screen's: the scores may go on rising past it
    last_x, last_y = scores.shape[1] - 1, scores.shape[0] - 1
    screen = bounds or region_box
    open_edges = (
        region_box[0] > screen[0],
        region_box[1] > screen[1],
        region_box[2] < screen[2],
        region_box[3] < screen[3],
    )
    at_edge = bool(
        (open_edges[0] and (xs == 0).any())
        or (open_edges[1] and (ys == 0).any())
        or (open_edges[2] and (xs == last_x).any())
        or (open_edges[3] and (ys == last_y).any())
    )
    return Match(offset=ties[0], score=best, ties=ties, at_edge=at_edge).nearest(expected)
