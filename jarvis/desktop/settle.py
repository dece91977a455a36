"""Wait until the screen stops changing after an action, instead of a fixed sleep.

Frames are sampled every ``interval_ms`` and compared whole (:meth:`Screen.frame_digest`:
the X11 screen gives the frame itself, a memcmp away from the last). The screen counts
as still once ``still_frames`` consecutive samples match (by default two, i.e. no change
for two intervals) and at least ``floor_ms`` has passed since the action;
``ceiling_ms`` bounds the wait for screens that never settle (video, a spinner). A still
screen therefore returns after ``max(floor, still_frames * interval)`` plus the time of one grab.
A blinking caret changes the screen only every few hundred milliseconds, so it
delays settling by at most a frame or two.

While it waits, the settle makes the next observation: from the first frame that matches
the one before it (a still run begins), the screen's worker downscales, encodes and hashes
that frame (:meth:`Screen.prepare`) in the time until the next sample. When the screen
settles, the last frame equals it, so the result carries it (``still``): the loop's next
step starts from it instead of capturing the same pixels again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.desktop.screen import Observation, Screen


STILL_FRAMES = 2
"""Samples in a row that must match the one before for the screen to count as still."""


@dataclass
class SettleResult:
    waited_ms: float
    timed_out: bool
    frames: int
    still: Future[Observation] | None = field(default=None, compare=False)
    """The observation of the still screen, made while waiting (none after a timeout, or
    where the frames are not pictures for a model)."""


def wait_until_still(
    grab: Callable[[], bytes],
    floor_ms: float = 40,
    ceiling_ms: float = 3000,
    interval_ms: float = 20,
    still_frames: int = STILL_FRAMES,
    stop: threading.Event | None = None,
    on_unchanged: Callable[[bytes, int], object] | None = None,
) -> SettleResult:
    """Sample ``grab()`` until it returns the same value ``still_frames`` times in a row.

    ``stop`` (optional) ends the wait early, reported as a timeout. ``on_unchanged`` is
    called with each frame equal to the one before it and how many in a row are.
    """
    if interval_ms <= 0 or still_frames < 1:
        raise ValueError("interval_ms must be positive and still_frames at least 1")
    start = time.monotonic()
    previous = grab()
    frames, unchanged = 1, 0
    while True:
        due = start + frames * interval_ms / 1000
        pause = due - time.monotonic()
        if stop is not None:
            if stop.wait(max(0.0, pause)):
                return SettleResult(_ms_since(start), True, frames)
        elif pause > 0:
            time.sleep(pause)
        current = grab()
        frames += 1
        unchanged = unchanged + 1 if current == previous else 0
        previous = current
        if unchanged and on_unchanged is not None:
            on_unchanged(current, unchanged)
        waited = _ms_since(start)
        if unchanged >= still_frames and waited >= floor_ms:
            return SettleResult(waited, False, frames)
        if waited >= ceiling_ms:
            return SettleResult(waited, True, frames)


def _ms_since(start: float) -> float:
    return (time.monotonic() - start) * 1000


class Settler:
    """``wait_until_still`` on a Screen with the floor, ceiling and interval from settings."""

    def __init__(self, screen: Screen, settings: Settings) -> None:
        self.screen = screen
        self.floor_ms = settings.settle_floor_ms
        self.ceiling_ms = settings.settle_ceiling_ms
        self.interval_ms = settings.settle_interval_ms

    def wait(self, stop: threading.Event | None = None) -> SettleResult:
        """Wait for a still screen; the result carries its observation where the screen
        can make it from the frames."""
        prepared: list[Future[Observation] | None] = [None]

        def on_unchanged(frame: bytes, unchanged: int) -> None:
            if unchanged == 1:  # a still run begins: this frame is the one to observe
                if prepared[0] is not None:
                    prepared[0].cancel()
                prepared[0] = self.screen.prepare(frame)

        result = wait_until_still(
            self.screen.frame_digest,
            floor_ms=self.floor_ms,
            ceiling_ms=self.ceiling_ms,
            interval_ms=self.interval_ms,
            stop=stop,
            on_unchanged=on_unchanged,
        )
        if result.timed_out and prepared[0] is not None:
            prepared[0].cancel()
        elif not result.timed_out:
            result.still = prepared[0]
        return result
