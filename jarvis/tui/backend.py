"""Where the cockpit's lines come from and where its commands go.

:class:`Backend` is what the app needs: the recent history, a live stream of journal
lines after a seq, and the few commands (send a message, cancel, answer, todos, runs, a
run's journal, the latest screen). :class:`~jarvis.tui.client.ApiBackend` is the control
API; :class:`ReplayBackend` plays a recorded journal (``jarvis tui --replay FILE``, and
the tests), and keeps what was sent to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from jarvis.tui.state import read_journal


class BackendError(Exception):
    """A command could not be done (the daemon refused it, or is not reachable);
    ``status`` is the HTTP status when the daemon answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Backend(Protocol):
    label: str
    """What the footer says about where the cockpit is connected."""
    owns_gateway: bool
    """True when this TUI started the gateway itself (quitting stops it)."""

    async def history(self, runs: int) -> list[dict[str, Any]]: ...

    def events(self, after: int) -> AsyncIterator[dict[str, Any]]:
        """Journal lines after seq ``after``, live; first ``{"kind": "connected"}`` once the
        stream is open. Raises BackendError when it breaks."""
        ...

    async def send(self, text: str) -> None: ...

    async def cancel(self, task_id: str) -> None: ...

    async def answer(self, task_id: str, text: str) -> None: ...

    async def todos(self) -> list[dict[str, Any]]: ...

    async def runs(self) -> list[dict[str, Any]]: ...

    async def run_events(self, task_id: str) -> list[dict[str, Any]]: ...

    async def screen(self) -> bytes | None: ...

    async def aclose(self) -> None: ...


class ReplayBackend:
    """A recorded journal: ``history`` lines at start, then whatever :meth:`push` adds."""

    owns_gateway = False

    def __init__(
        self,
        history: list[dict[str, Any]] | None = None,
        *,
        todos: list[dict[str, Any]] | None = None,
        screen: bytes | None = None,
        label: str = "replay",
    ) -> None:
        self.label = label
        self._history = list(history or [])
        self._todos = list(todos or [])
        self._screen = screen
        self._live: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[str] = []
        self.cancelled: list[str] = []
        self.answers: list[tuple[str, str]] = []

    @classmethod
    def from_file(cls, path: Path, **kwargs: Any) -> ReplayBackend:
        return cls(read_journal(path), label=f"replay {path.name}", **kwargs)

    def push(self, *lines: dict[str, Any]) -> None:
        for line in lines:
            self._live.put_nowait(line)

    async def history(self, runs: int) -> list[dict[str, Any]]:
        ids: list[str] = []
        for line in self._history:
            task_id = line.get("task_id")
            if isinstance(task_id, str) and task_id not in ids:
                ids.append(task_id)
        keep = set(ids[-runs:]) if runs else set()
        return [line for line in self._history if line.get("task_id") in keep]

    async def events(self, after: int) -> AsyncIterator[dict[str, Any]]:
        yield {"kind": "connected"}
        while True:
            line = await self._live.get()
            if int(line.get("seq") or 0) > after:
                yield line

    async def send(self, text: str) -> None:
        self.sent.append(text)

    async def cancel(self, task_id: str) -> None:
        self.cancelled.append(task_id)

    async def answer(self, task_id: str, text: str) -> None:
        self.answers.append((task_id, text))

    async def todos(self) -> list[dict[str, Any]]:
        return list(self._todos)

    async def runs(self) -> list[dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for line in self._history:
            if line.get("kind") == "task_started":
                found[line["task_id"]] = {"task_id": line["task_id"], "task": line.get("task", "")}
            elif line.get("kind") == "task_finished" and line.get("task_id") in found:
                found[line["task_id"]]["status"] = line.get("status")
        return list(reversed(found.values()))

    async def run_events(self, task_id: str) -> list[dict[str, Any]]:
        return [line for line in self._history if line.get("task_id") == task_id]

    async def screen(self) -> bytes | None:
        return self._screen

    async def aclose(self) -> None:
        return None
