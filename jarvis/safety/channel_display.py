"""A private display for the tasks of some channels (``channels.NAME.private_display``;
formerly ``safety.sandbox.channels``, still read).

`jarvis run --sandbox` and `jarvis serve --sandbox` put the whole process on a private
display. With a channel's ``private_display`` on, only its tasks go there: for
each such task a fresh :class:`~jarvis.safety.sandbox.Sandbox` (``safety.sandbox``'s
size, window manager and apps) is started, this process's ``DISPLAY`` is pointed at it
and the agent's screen and input move to it (:meth:`Screen.reopen`,
:meth:`Input.reopen`); when the task ends they move back and the display and everything
on it are stopped. Tasks from other channels run on the person's display as before.

The daemon runs one task at a time, so the switch is safe between tasks; the control
API's live screen follows ``DISPLAY`` and shows the private display while such a task
runs. It fails closed: when the display cannot be started, or the desktop cannot move to
it, the task fails with the reason and never touches the person's display.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from jarvis.desktop.x11 import X11Error
from jarvis.safety.sandbox import Sandbox, pointed_at

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)

Reopen = Callable[[], None]
"""Move the agent's screen and input to the display ``DISPLAY`` names now."""


class PrivateDisplayError(RuntimeError):
    """A task that must run on a private display cannot; the message says why."""


def sandboxed(settings: Settings, channels: Sequence[str]) -> list[str]:
    """The task's channels that ask for a private display."""
    blocks = settings.channels
    return [c for c in channels if (b := blocks.get(c)) is not None and b.private_display]


@asynccontextmanager
async def display_for(
    settings: Settings, channels: Sequence[str], reopen: Reopen | None
) -> AsyncIterator[str | None]:
    """Inside, the task's desktop: a private display (its name) when one of ``channels``
    asks for it, else the current one (None)."""
    wanted = sandboxed(settings, channels)
    if not wanted:
        yield None
        return
    which = ", ".join(wanted)
    if reopen is None:
        raise PrivateDisplayError(
            f"tasks from {which} run on a private display, and this agent cannot move there"
        )
    box = Sandbox(settings.safety.sandbox)
    try:
        await _to_the_end(asyncio.to_thread(box.start), box.stop)
    except (X11Error, OSError) as exc:
        raise PrivateDisplayError(f"the private display for tasks from {which}: {exc}") from exc
    log.info("a task from %s runs on the private display %s", which, box.display)
    try:
        with pointed_at(box):
            try:
                await asyncio.to_thread(reopen)
            except Exception as exc:
                raise PrivateDisplayError(
                    f"the desktop could not move to the private display {box.display}: {exc}"
                ) from exc
            yield box.display
    finally:
        await _to_the_end(_back(reopen, box))


async def _back(reopen: Reopen, box: Sandbox) -> None:
    """Back to the person's display, then stop the private one and all on it."""
    try:
        await asyncio.to_thread(reopen)
    except Exception:
        log.exception("the desktop could not move back from %s", box.display)
    await asyncio.to_thread(box.stop)


async def _to_the_end(work: Awaitable[Any], undo: Callable[[], Any] | None = None) -> None:
    """Await ``work`` to its end even when cancelled meanwhile, however often (a stop
    cancels more than once): a display is never left half started or running. After a
    cancel, ``undo`` runs (in a thread) and the cancel goes on."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        if not task.cancelled():
            task.exception()  # retrieved: the cancel is what goes on
        if undo is not None:
            await _to_the_end(asyncio.to_thread(undo))
        raise asyncio.CancelledError
    task.result()
