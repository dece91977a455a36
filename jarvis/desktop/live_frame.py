"""One picture of a display as it is now, for the people watching it (not the model):
the daemon's live screen (``GET /api/screen/live``) and a fleet worker's frames sent
through Redis (:mod:`jarvis.fleet.frames`) share it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.desktop.backend import Where

LIVE_JPEG_QUALITY = 70


class NoDisplay(RuntimeError):
    """No display can be captured; the message says why."""


def capture_jpeg(
    where: Where, monitor: int, max_side: int, quality: int = LIVE_JPEG_QUALITY
) -> bytes:
    """The monitor of the display ``where`` now, scaled to ``max_side``, as JPEG bytes
    (blocking). Raises :class:`NoDisplay` when there is no display to capture."""
    from mss.exception import ScreenShotError

    from jarvis.desktop.backend import open_screen
    from jarvis.desktop.errors import InputError

    try:
        if not where.name:
            raise ValueError("no display is given")
        with open_screen(where, monitor, max_side, quality) as screen:
            return screen.encoded()
    except (ScreenShotError, ValueError, InputError) as exc:
        shown = where.name or "DISPLAY is not set"
        raise NoDisplay(f"no display to capture ({shown}): {exc}") from exc
