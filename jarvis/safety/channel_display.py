"""A private display for the tasks of some channels (``channels.NAME.private_display``;
formerly ``safety.sandbox.channels``, still read).

`jarvis run --sandbox` and `jarvis serve --sandbox` put the whole process on a private
display. With a channel's ``private_display`` on, only its tasks go there: for
each such task a fresh :class:`~jarvis.safety.sandbox.Sandbox` (``safety.sandbox``'s
size, window manager and apps; with its own accessibility bus when the agent reads the
tree, and the desktop's tree reader follows it there) is started and the agent's
:class:`~jarvis.desktop.desktop.Desktop` moves to it (:meth:`Desktop.move_to`: screen,
input, window lookups, and the recorder's crops with it); when the task ends it moves
back and the display and everything on it are stopped. Tasks from other channels run on
the person's display as before. This process's ``DISPLAY`` is never changed.

The daemon runs one task at a time, so the switch is safe between tasks; the control
API's live screen follows the agent's desktop and shows the private display while such
a task runs. It fails closed: when the display cannot be started, or the desktop cannot move to
it, the task fails with the reason and never touches the person's display.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from jarvis.desktop.x11 import X11Error, XDisplay
from jarvis.safety.sandbox import Sandbox, wants_tree
from jarvis.safety.takeover import MAIN_SCREEN

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.desktop.desktop import Desktop
    from jarvis.safety.takeover import ScreenHold

log = logging.getLogger(__name__)


class PrivateDisplayError(RuntimeError):
    """A task that must run on a private display cannot; the message says why."""


class PrivateDisplayLost(PrivateDisplayError):
    """The private display a task ran on ended under it; the task stopped there."""


def sandboxed(settings: Settings, channels: Sequence[str]) -> list[str]:
    """The task's channels that ask for a private display."""
    blocks = settings.channels
    return [c for c in channels if (b := blocks.get(c)) is not None and b.private_display]


@asynccontextmanager
async def display_for(
    settings: Settings,
    channels: Sequence[str],
    desktop: Desktop | None,
    hold: ScreenHold | None = None,
) -> AsyncIterator[str | None]:
    """Inside, the task's desktop: ``desktop`` moved to a private display (its name is
    given) when one of ``channels`` asks for it, else where it is (None). ``hold`` (the
    takeover's) is told the screen: a person watches and takes over ``private/N``."""
    if desktop is not None and desktop.where != desktop.home:
        await _home_again(desktop)  # a move back that failed after the last private task
    wanted = sandboxed(settings, channels)
    if not wanted:
        yield None
        return
    which = ", ".join(wanted)
    if desktop is None:
        raise PrivateDisplayError(
            f"tasks from {which} run on a private display, and this agent cannot move there"
        )
    box = Sandbox(settings.safety.sandbox, wants_tree(settings))  # a tree: with its bus
    try:
        await _to_the_end(asyncio.to_thread(box.start), box.stop)
    except (X11Error, OSError) as exc:
        raise PrivateDisplayError(f"the private display for tasks from {which}: {exc}") from exc
    log.info("a task from %s runs on the private display %s", which, box.display)
    home = desktop.home
    try:
        try:
            await asyncio.to_thread(desktop.move_to, box.where)
        except Exception as exc:
            raise PrivateDisplayError(
                f"the desktop could not move to the private display {box.display}: {exc}"
            ) from exc
        if hold is not None:
            hold.moved_to(screen_id(box.display), box.where)
        async with _stopped_if_lost(box):
            yield box.display
    finally:
        await _to_the_end(_back(desktop, home, box, hold))


@asynccontextmanager
async def _stopped_if_lost(box: Sandbox) -> AsyncIterator[None]:
    """Inside, the task is stopped with :class:`PrivateDisplayLost` when ``box``'s display
    server ends (killed, crashed): the agent never goes on acting on a dead display."""
    task = asyncio.current_task()
    lost: list[int | None] = []
    inside = [True]

    async def watch() -> None:
        status = await asyncio.to_thread(box.wait_ended)
        if inside[0] and task is not None:  # not once the task is done with the display
            lost.append(status)
            task.cancel()

    watcher = asyncio.create_task(watch(), name=f"watch {box.display}")
    try:
        yield
        inside[0] = False
    except asyncio.CancelledError:
        inside[0] = False
        if not lost or task is None:
            raise
        task.uncancel()
        raise PrivateDisplayLost(
            f"the private display {box.display} ended while the task ran (status {lost[0]})"
        ) from None
    finally:
        inside[0] = False
        watcher.cancel()


def screen_id(display: str) -> str:
    """The screen id of a private display (``:12`` -> ``private/12``)."""
    return "private/" + display.rsplit(":", 1)[-1].split(".")[0]


async def _back(desktop: Desktop, home: XDisplay, box: Sandbox, hold: ScreenHold | None) -> None:
    """Back to the person's display, then stop the private one and all on it."""
    if hold is not None:
        hold.moved_to(MAIN_SCREEN, None)  # its live view closes before the display goes
    try:
        await asyncio.to_thread(desktop.move_to, home)
    except Exception as exc:  # the next task tries again, and fails closed if it cannot
        log.warning("the desktop could not move back from %s: %s", box.display, exc)
    await asyncio.to_thread(box.stop)


async def _home_again(desktop: Desktop) -> None:
    """Back to the desktop's own display before a task; PrivateDisplayError when it cannot:
    the agent never acts on the private display that was stopped meanwhile."""
    try:
        await asyncio.to_thread(desktop.move_to, desktop.home)
    except Exception as exc:
        raise PrivateDisplayError(
            f"the desktop could not come back to {desktop.home.name} from a private display: {exc}"
        ) from exc


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
