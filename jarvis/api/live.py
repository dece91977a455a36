"""``GET /api/screen/live``: the daemon's display as it is now, as JPEG.

The display is the daemon process's own (``DISPLAY``, ``XAUTHORITY``): the one the agent
works on. Under ``jarvis serve --sandbox`` that is the private display, since the sandbox
points this process's ``DISPLAY`` at it before anything else starts.

Each capture opens its own :class:`~jarvis.desktop.screen.Screen` (so its own mss, which is
bound to the thread that made it) in a worker thread, grabs the monitor the agent uses and
scales it like the model's screenshots (longest side at most ``max_side``). One capture
runs at a time; clients asking within :data:`FRESH_S` of the last one share its frame, so
several open panels cost no more than one.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field

LIVE_JPEG_QUALITY = 70
FRESH_S = 0.25


class NoDisplay(RuntimeError):
    """No display can be captured; the message says why."""


def capture_jpeg(monitor: int, max_side: int, quality: int = LIVE_JPEG_QUALITY) -> bytes:
    """The monitor of this process's display now, scaled to ``max_side``, as JPEG bytes.
    Raises :class:`NoDisplay` when there is no display to capture."""
    from mss.exception import ScreenShotError

    from jarvis.desktop.screen import Screen

    try:
        with Screen(monitor=monitor, max_side=max_side, jpeg_quality=quality) as screen:
            return screen.encoded()
    except (ScreenShotError, ValueError) as exc:
        shown = os.environ.get("DISPLAY") or "DISPLAY is not set"
        raise NoDisplay(f"no display to capture ({shown}): {exc}") from exc


@dataclass
class LiveScreen:
    """One capture at a time, and a frame shared by callers that ask within ``fresh_s``."""

    fresh_s: float = FRESH_S
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _last: tuple[float, str | None, bytes] | None = None
    """(when, of which display, the frame): a task that moved to a private display since
    gets a frame of that one."""

    async def frame(self, monitor: int, max_side: int) -> bytes:
        async with self._lock:
            last, display = self._last, os.environ.get("DISPLAY")
            if (
                last is not None
                and last[1] == display
                and time.monotonic() - last[0] < self.fresh_s
            ):
                return last[2]
            self._last = None
            data = await asyncio.to_thread(capture_jpeg, monitor, max_side)
            self._last = (time.monotonic(), display, data)
            return data
