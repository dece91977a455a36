"""``GET /api/screen/live`` in a fleet (``serve --fleet``): the picture of the worker that
runs the watched task (or the task the request names), not the coordinator's own display.

- A worker on this machine (its heartbeat names this host, an X display and a cookie file
  this process may read, :func:`~jarvis.fleet.screens.why_not_here`): its display is
  captured directly, as an :class:`~jarvis.desktop.x11.XDisplay` of its own (the
  process's ``DISPLAY`` is neither read nor set), through the shared :class:`LiveScreen`.
- A worker on another host: the picture it sends through Redis when asked
  (:mod:`jarvis.fleet.frames`; its heartbeat says ``frames``), live as well.
- A worker whose display cannot be captured either way: the screenshot of the task's last
  step that has arrived here (workers ship their step screenshots into the coordinator's
  data dir), marked as such (``x-jarvis-screen: last-step``): it is the last step's
  picture, not the screen now.
- No task to show: the coordinator's own display when it has one (``--local-worker`` works
  there), else :class:`NoPicture` 404 with a one-line reason.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jarvis.api.fleet_parts import screens_of, worker_of
from jarvis.api.live import LiveScreen, NoDisplay
from jarvis.api.views import IMAGE_SUFFIXES, safe_screenshot, screenshot_path
from jarvis.desktop.x11 import XDisplay
from jarvis.fleet.frames import FrameError
from jarvis.fleet.screens import WorkerScreens, why_not_here
from jarvis.gateway.service import DaemonService

log = logging.getLogger(__name__)
LIVE, LAST_STEP = "live", "last-step"


class NoPicture(Exception):
    """Nothing to show; ``status`` is the HTTP status to answer (404 or 409)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class Picture:
    data: bytes
    media_type: str
    source: str
    """``live`` (the display now) or ``last-step`` (the last step's screenshot)."""
    worker: str = ""
    task: str = ""
    step: int | None = None

    def headers(self) -> dict[str, str]:
        """The marker of what the picture is (read by the panel and the TUI)."""
        found = {"cache-control": "no-store", "x-jarvis-screen": self.source}
        if self.worker:
            found["x-jarvis-worker"] = self.worker
        if self.task:
            found["x-jarvis-task"] = self.task
        if self.step is not None:
            found["x-jarvis-step"] = str(self.step)
        return found


def last_step_picture(data_dir: Path, events: list[dict[str, Any]]) -> tuple[Path, int] | None:
    """The screenshot of the last step in a task's journal lines whose file is here (it
    arrives as the worker ships it), and that step's number; None when none has arrived.
    Only this task's own steps: never another task's picture."""
    for r in reversed(events):
        if r.get("kind") != "step_finished":
            continue
        name = screenshot_path(r.get("screenshot"))
        found = safe_screenshot(data_dir, name) if name else None
        if found is not None:
            return found, int(r.get("step") or 0)
    return None


async def fleet_picture(
    service: DaemonService, live: LiveScreen, task_id: str | None, monitor: int, max_side: int
) -> Picture:
    """What ``GET /api/screen/live`` shows in a fleet (see the module doc); raises
    :class:`NoPicture` when there is nothing to show."""
    wanted = task_id or service.watched_task()
    if wanted is None:
        own = service.display_now()
        if not own.name:
            raise NoPicture(
                404, "no task is running in the fleet, and this coordinator has no display"
            )
        data = await live.frame(monitor, max_side)  # NoDisplay: the route's 503
        return Picture(data, "image/jpeg", LIVE)
    worker = await worker_of(service, wanted)
    why = f"task {wanted} runs on no worker now"
    if worker is not None:
        now, why = await _worker_now(service, live, worker, monitor, max_side)
        if now is not None:
            return Picture(now, "image/jpeg", LIVE, worker, wanted)
    record = await service.task(wanted)
    found = await asyncio.to_thread(
        last_step_picture, service.data_dir, record.events if record is not None else []
    )
    if found is None:
        status = 404 if worker is None else 409
        raise NoPicture(status, f"{why}, and no picture of a step of it has arrived yet")
    path, step = found
    data = await asyncio.to_thread(path.read_bytes)
    media = IMAGE_SUFFIXES[path.suffix.lower()]
    return Picture(data, media, LAST_STEP, worker or "", wanted, step)


async def _worker_now(
    service: DaemonService, live: LiveScreen, worker: str, monitor: int, max_side: int
) -> tuple[bytes | None, str]:
    """Worker ``worker``'s display now: captured here when it is on this machine, else
    through Redis when it sends pictures; else None and why."""
    from redis.exceptions import RedisError

    screens = screens_of(service)
    if screens is None:
        return None, "this daemon coordinates no fleet"
    try:
        beat = await screens.beat(worker)
    except (RedisError, OSError):
        return None, "the fleet's Redis does not answer"
    if beat is None:
        return None, f"worker {worker} has sent no heartbeat lately"
    why = why_not_here(beat)
    if why is None:
        where = XDisplay(str(beat["display"]), str(beat.get("xauthority") or "") or None)
        try:
            return await live.frame(monitor, max_side, where), ""
        except NoDisplay as exc:
            why = f"worker {worker}'s display cannot be captured here: {exc}"
    elif beat.get("frames"):
        return await _sent(screens, worker, monitor, max_side, why)
    log.info("%s; its last step's picture instead", why)
    return None, why


async def _sent(
    screens: WorkerScreens, worker: str, monitor: int, max_side: int, why: str
) -> tuple[bytes | None, str]:
    try:
        return await screens.frames.frame(worker, monitor, max_side), ""
    except FrameError as exc:
        log.info("%s, and no picture came through Redis: %s", why, exc)
        return None, f"{why}, and {exc}"
