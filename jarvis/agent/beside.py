"""Blocking work the loop runs in a worker thread while it waits anyway, awaited later.

The loop recalls memories for a step's thought while the screen settles: the settle sleeps
between its frames, so an embedding there costs the step nothing, where beside the action it
would slow the action on a busy machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Beside(Generic[T]):
    """``fn(*args)`` in a worker thread, from the first :meth:`start` (at the latest from
    :meth:`result`); :meth:`drop` when it is no longer wanted."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        self._fn = fn
        self._args = args
        self._task: asyncio.Future[T] | None = None

    def start(self) -> None:
        """Start it (once; later calls do nothing)."""
        if self._task is None:
            self._task = asyncio.ensure_future(asyncio.to_thread(self._fn, *self._args))

    async def result(self) -> T:
        """Its result (or its exception), started now if it was not yet."""
        self.start()
        assert self._task is not None
        return await self._task

    def drop(self) -> None:
        """Not wanted any more: cancelled if it waits, its failure, if any, marked as seen
        (asyncio would log it as never retrieved). A thread already running ends on its own."""
        if self._task is not None:
            self._task.cancel()
            self._task.add_done_callback(_retrieved)


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
