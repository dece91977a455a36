"""Who holds the screen: a person who took over, or the agent (shared/DESIGN.md section 11).

:class:`ScreenHold` is the agent's pause gate. :meth:`ScreenHold.take` sets ``held`` (the
agent's input refuses every action from then on, :class:`jarvis.desktop.input.Input`),
ends the agent's running ``xdotool type`` at once the way the kill switch does, and journals
``takeover_started``. The agent loop awaits :meth:`ScreenHold.wait_released` before each
step, and skips calls it decided before a person took the screen. :meth:`ScreenHold.hand_back`
journals ``takeover_ended`` and leaves a note for the model (a person used the desktop, with
their note); the next step starts from a fresh screenshot. One person holds the screen at a
time; a takeover without input for ``takeover.idle_end_s`` ends by itself with a note.
Channels that may not approve (email, a2a, mcp, ``may_approve: false``) may not take over.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, TakeoverEnded, TakeoverStarted
from jarvis.safety import killswitch

log = logging.getLogger(__name__)

MAX_NOTE = 2000
MAIN_SCREEN = "main"
"""The id of the daemon's own display; a channel's private display is ``private/N`` (its
display number) while a task runs there, a fleet worker's is ``worker/NAME``."""


REFUSALS = ("not_allowed", "held", "not_held", "unreachable", "no_agent", "no_worker")
"""Why a takeover or hand back is refused: the channel may not take over, someone holds
the screen already, nobody holds it, the screen's worker cannot be told, no agent drives
the screen, no task runs on that worker (the API maps each to its HTTP status)."""


class TakeoverRefused(Exception):
    """The takeover or hand back cannot happen; ``why`` is one of :data:`REFUSALS`."""

    def __init__(self, why: str, detail: str) -> None:
        super().__init__(detail)
        self.why = why
        self.detail = detail


@dataclass
class Holder:
    by: str
    task_id: str | None
    since: float = field(default_factory=time.time)
    last_input: float = field(default_factory=time.monotonic)


HOW_IT_CAME_BACK = {
    "handed_back": "handed it back",
    "idle": "left it idle, so it came back",
    "closed": "closed the page they held it from, so it came back",
    "taken_over": "then a person at another face took it over from them",
}
"""Why a takeover ended (``takeover_ended``'s ``reason``), in the words the model reads."""


def handback_note(holder: Holder, note: str, reason: str) -> str:
    """What the model reads at its next step."""
    held = time.time() - holder.since
    how = HOW_IT_CAME_BACK.get(reason, HOW_IT_CAME_BACK["handed_back"])
    text = (
        f"A person ({holder.by}) took over the desktop for {held:.0f} s and {how}. "
        "The screen may have changed: look at this fresh screenshot before you go on."
    )
    return f"{text} Their note: {note}" if note else text


def refuse_take(refused: frozenset[str], by: str, holder: Holder | None) -> None:
    """The checks of every takeover: a channel that may not take over, a screen held."""
    if by in refused:
        raise TakeoverRefused("not_allowed", f"the {by} channel may not take over the screen")
    if holder is not None:
        raise TakeoverRefused("held", f"the screen is already held by {holder.by}")


class IdleClock:
    """Ends a takeover nobody sent input to for ``idle_end_s``: one clock per held screen
    (``key``), started at the take and stopped at the hand back; ``current(key)`` is its
    holder now (whose ``last_input`` the person's input moves), ``on_idle(key, holder,
    note)`` ends it. Outside an event loop (a test, a script) there is no idle end."""

    def __init__(
        self,
        idle_end_s: float,
        current: Callable[[str], Holder | None],
        on_idle: Callable[[str, Holder, str], None],
    ) -> None:
        self.idle_end_s = idle_end_s
        self.current = current
        self.on_idle = on_idle
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def start(self, key: str, after: float | None = None) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self.stop(key)
        delay = self.idle_end_s if after is None else after
        self._timers[key] = loop.call_later(delay, self._check, key)

    def stop(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def running(self, key: str) -> bool:
        return key in self._timers

    def close(self) -> None:
        for key in list(self._timers):
            self.stop(key)

    def _check(self, key: str) -> None:
        self._timers.pop(key, None)
        holder = self.current(key)
        if holder is None:
            return
        idle = time.monotonic() - holder.last_input
        if idle < self.idle_end_s:
            self.start(key, self.idle_end_s - idle)
            return
        self.on_idle(key, holder, f"(no input for {idle:.0f} s: the takeover ended by itself)")


class ScreenHold:
    """The pause gate shared by the agent's input, its loop, and the API."""

    def __init__(
        self,
        bus: EventBus,
        idle_end_s: float = 300.0,
        refused: frozenset[str] = frozenset(),
        *,
        stop_typing: Callable[[], None],
        held: threading.Event | None = None,
    ) -> None:
        self.bus = bus
        self.idle_end_s = idle_end_s
        self.refused = refused
        self.held = held or threading.Event()
        """Set while a person holds the screen: the agent's input refuses every action (the
        event its :class:`~jarvis.desktop.input.Input` was made with, ``Desktop.hold``)."""
        self.holder: Holder | None = None
        self.generation = 0
        """Counts takeovers; the agent compares it to see whether a person came meanwhile."""
        self.notes: dict[int, str] = {}
        """Per ended takeover (its generation), the note for the model."""
        self.stop_typing = stop_typing
        """Ends the agent's typing now (:func:`interrupt_typing` on its display)."""
        self._released: asyncio.Event | None = None
        self._idle = IdleClock(idle_end_s, lambda _screen: self.holder, self._idle_end)
        self.on_end: list[Callable[[], None]] = []
        """Called when a takeover ends (the relay closes the person's full-access view)."""
        self.screen = MAIN_SCREEN
        """The screen the agent works on now: what a person watches and takes over."""
        self.where: XDisplay | None = None
        """The display of a private screen (None on the main one)."""
        self.on_move: list[Callable[[str], None]] = []
        """Called with the screen left when the agent moves to another one."""

    @staticmethod
    def idle_status() -> dict[str, object]:
        return {"held": False, "by": None, "since": None, "task_id": None}

    def status(self) -> dict[str, object]:
        h = self.holder
        where = {"screen": self.screen}
        if h is None:
            return self.idle_status() | where
        return {"held": True, "by": h.by, "since": h.since, "task_id": h.task_id} | where

    def moved_to(self, screen: str, where: XDisplay | None) -> None:
        """The agent works on ``screen`` (at ``where``, a private display) from now on."""
        left, self.screen, self.where = self.screen, screen, where
        if left != screen:
            for callback in list(self.on_move):
                callback(left)

    async def take(self, by: str, task_id: str | None, *, idle_clock: bool = True) -> Holder:
        """A person takes the screen; the agent's input stops now: ``held`` refuses every
        next action, and the ``xdotool type`` running now is ended (in a thread: waiting for
        it to exit must not hold up the loop). ``idle_clock`` false: the person's input
        does not pass here (a fleet worker's: the coordinator's relay keeps that clock)."""
        refuse_take(self.refused, by, self.holder)
        holder = self.holder = Holder(by=by, task_id=task_id)
        self.generation += 1
        self.held.set()
        self._event_flag().clear()
        try:
            await asyncio.to_thread(self.stop_typing)
        except Exception as exc:  # the gate holds either way: the next piece is refused
            log.warning("takeover: could not end the agent's typing: %s", exc)
        self.bus.emit(TakeoverStarted(task_id=task_id, by=by))
        if idle_clock:
            self._idle.start(MAIN_SCREEN)
        log.info("takeover: %s holds the screen", by)
        return holder

    def pass_to(self, by: str, *, idle_clock: bool = True) -> Holder:
        """Another face takes over a screen held by someone else, having said so (the TUI
        asks "web has the screen: take it over?"): the hold becomes ``by``'s without the
        agent waking in between; the journal and the model are told who ended it.
        ``idle_clock`` as in :meth:`take`."""
        old = self.holder
        if old is None:
            raise TakeoverRefused("not_held", "nobody holds the screen")
        refuse_take(self.refused, by, None)
        self.notes[self.generation] = handback_note(old, "", "taken_over")
        self.bus.emit(
            TakeoverEnded(
                task_id=old.task_id,
                by=old.by,
                reason="taken_over",
                ended_by=by,
                held_s=round(time.time() - old.since, 3),
            )
        )
        for callback in list(self.on_end):  # the old holder's full-access view closes
            callback()
        holder = self.holder = Holder(by=by, task_id=old.task_id)
        self.generation += 1
        self.bus.emit(TakeoverStarted(task_id=old.task_id, by=by))
        if idle_clock:
            self._idle.start(MAIN_SCREEN)
        log.info("takeover: %s took the screen over from %s", by, old.by)
        return holder

    def hand_back(self, note: str = "", reason: str = "handed_back") -> Holder:
        """The agent gets the screen back, with ``note`` for the model."""
        holder = self.holder
        if holder is None:
            raise TakeoverRefused("not_held", "nobody holds the screen")
        note = note.strip()[:MAX_NOTE]
        self.notes[self.generation] = handback_note(holder, note, reason)
        self.holder = None
        self._idle.stop(MAIN_SCREEN)
        self.bus.emit(
            TakeoverEnded(
                task_id=holder.task_id,
                by=holder.by,
                note=note,
                reason=reason,
                held_s=round(time.time() - holder.since, 3),
            )
        )
        self.held.clear()
        self._event_flag().set()
        for callback in list(self.on_end):
            callback()
        log.info("takeover: %s handed the screen back", holder.by)
        return holder

    def _idle_end(self, _screen: str, _holder: Holder, note: str) -> None:
        self.hand_back(note, "idle")

    def touched(self) -> None:
        """The person sent input (their idle clock starts again)."""
        if self.holder is not None:
            self.holder.last_input = time.monotonic()

    async def wait_released(self) -> None:
        """Return once nobody holds the screen (at once when nobody does)."""
        while self.held.is_set():
            await self._event_flag().wait()

    def notes_after(self, generation: int) -> list[str]:
        """The notes of the takeovers that ended after ``generation``."""
        return [text for g, text in sorted(self.notes.items()) if g > generation]

    def _event_flag(self) -> asyncio.Event:
        if self._released is None:
            self._released = asyncio.Event()
            if not self.held.is_set():
                self._released.set()
        return self._released


def interrupt_typing(where: XDisplay) -> None:
    """End the agent's ``xdotool type`` now and release any key it left down on ``where``
    (the display it types on)."""
    typing = killswitch.end_own_xdotool()
    killswitch.end_own_wtype()  # on a Wayland desktop
    if typing:
        killswitch._wait_ended(typing)
        killswitch.release_held_keys(set(), where)
