"""The side panel's data, loaded from the daemon: the todos, the fleet's workers, the
screen, and the list of runs (for the palette's "Open run" entries).

:class:`SideFeed` works for the app (:class:`~jarvis.tui.app.JarvisApp`). Each kind loads
in a worker of its own group, and a new load replaces one still waiting; a load that
fails is logged and the panel keeps what it showed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

from jarvis.tui.backend import BackendError

if TYPE_CHECKING:
    from jarvis.tui.app import JarvisApp

log = logging.getLogger(__name__)


class SideFeed:
    def __init__(self, app: JarvisApp) -> None:
        self.app = app

    def load_all(self) -> None:
        self.todos()
        self.workers()
        self.schedules()
        self.screen()
        self.runs()

    def todos(self) -> None:
        self._start(self._todos, "todos")

    def workers(self) -> None:
        """The fleet's workers (``GET /api/workers``); the app asks every few seconds."""
        self._start(self._workers, "workers")

    def schedules(self) -> None:
        """The schedules and their next runs (``GET /api/schedules``), with the workers."""
        self._start(self._schedules, "schedules")

    def screen(self, live: bool = False) -> None:
        """The last step's screenshot; ``live``: the display as it is now."""
        self._start(partial(self._screen, live), "screen")

    def runs(self) -> None:
        self._start(self._runs, "runs")

    def _start(self, load: Callable[[], Awaitable[None]], group: str) -> None:
        self.app.run_worker(load, name=f"load {group}", group=group, exclusive=True)

    async def _todos(self) -> None:
        try:
            self.app.side.show_todos(await self.app.backend.todos())
        except BackendError as exc:
            log.info("todos: %s", exc)

    async def _workers(self) -> None:
        try:
            self.app.side.show_workers(await self.app.backend.workers())
        except BackendError as exc:
            log.info("workers: %s", exc)

    async def _schedules(self) -> None:
        try:
            self.app.side.show_schedules(await self.app.backend.schedules())
        except BackendError as exc:
            log.info("schedules: %s", exc)

    async def _screen(self, live: bool) -> None:
        app = self.app
        try:
            png = await app.backend.screen(live)
        except BackendError as exc:
            log.info("screen: %s", exc)
            return
        if png:
            app.side.show_screen(png, app.cockpit.last_click, app.backend.screen_note)

    async def _runs(self) -> None:
        try:
            self.app.known_runs = await self.app.backend.runs()
        except BackendError as exc:
            log.info("runs: %s", exc)
