"""``GET /api/screen/live``: the daemon's display as it is now, as JPEG.

The display is the one the agent's desktop is on now, as the daemon says
(:meth:`Gateway.display_now`): under ``jarvis serve --sandbox`` the private display, and
during a task from a channel with a private display, that one.

Each capture opens its own :class:`~jarvis.desktop.screen.Screen` (so its own mss, which is
bound to the thread that made it) in a worker thread, grabs the monitor the agent uses and
scales it like the model's screenshots (longest side at most ``max_side``). One capture
runs at a time; clients asking within :data:`FRESH_S` of the last one share its frame, so
several open panels cost no more than one.

In a fleet the picture is the worker's that runs the watched task: :mod:`jarvis.api.fleet_live`
passes that worker's display here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from jarvis.desktop.backend import Where
from jarvis.desktop.live_frame import NoDisplay, capture_jpeg

__all__ = ["FRESH_S", "LiveScreen", "NoDisplay", "capture_jpeg"]

FRESH_S = 0.25


@dataclass
class LiveScreen:
    """One capture at a time of the display ``where()`` names now, and a frame shared by
    callers that ask within ``fresh_s``."""

    where: Callable[[], Where]
    fresh_s: float = FRESH_S
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _last: tuple[float, Where, bytes] | None = None
    """(when, of which display, the frame): a task that moved to a private display since
    gets a frame of that one."""

    async def frame(self, monitor: int, max_side: int, where: Where | None = None) -> bytes:
        """A frame of ``where`` (a fleet worker's display), by default of ``where()``."""
        async with self._lock:
            last, display = self._last, where if where is not None else self.where()
            if (
                last is not None
                and last[1] == display
                and time.monotonic() - last[0] < self.fresh_s
            ):
                return last[2]
            self._last = None
            data = await asyncio.to_thread(capture_jpeg, display, monitor, max_side)
            self._last = (time.monotonic(), display, data)
            return data
