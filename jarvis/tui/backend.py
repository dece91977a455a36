"""Where the cockpit's lines come from and where its commands go.

:class:`Backend` is what the app needs: the recent history, a live stream of journal
lines after a seq, and the few commands (send a message, cancel, answer, todos, runs, a
run's journal, the latest screen). :class:`~jarvis.tui.client.ApiBackend` is the control
API; :class:`ReplayBackend` plays a recorded journal (``jarvis tui --replay FILE``, and
the tests), and keeps what was sent to it.

Approvals: ``pending_approvals`` is what the daemon holds now (a journal alone cannot
tell a request still waiting from one a restarted daemon forgot), ``approve`` answers one,
and ``approval_screenshot`` is the screen at the moment of the request (None if there is
none).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from jarvis.apiclient.http import ApiError
from jarvis.tui.state import read_journal


class BackendError(ApiError):
    """A command could not be done (the daemon refused it, or is not reachable);
    ``status`` is the HTTP status when the daemon answered."""


class Backend(Protocol):
    label: str
    """What the footer says about where the cockpit is connected."""
    owns_gateway: bool
    """True when this TUI started the gateway itself (quitting stops it)."""
    recorded: bool
    """True for a recorded journal (``jarvis tui --replay``): nothing is live."""
    screen_note: str
    """What the last :meth:`screen` picture is when it is not the screen now (a fleet
    worker on another machine: its last step's screenshot); empty otherwise."""

    async def history(self, runs: int) -> list[dict[str, Any]]: ...

    def events(self, after: int) -> AsyncIterator[dict[str, Any]]:
        """Journal lines after seq ``after``, live; first ``{"kind": "connected"}`` once the
        stream is open. Raises BackendError when it breaks."""
        ...

    async def send(self, text: str) -> str | None:
        """Send a message as the person; its id (None where the backend gives none)."""
        ...

    async def cancel(self, task_id: str) -> None: ...

    async def answer(self, task_id: str, text: str) -> None: ...

    async def todos(self) -> list[dict[str, Any]]: ...

    async def runs(self) -> list[dict[str, Any]]:
        """The newest runs (``task_id``, ``task``, ``status``...), newest first."""
        ...

    async def run_events(self, task_id: str) -> list[dict[str, Any]]: ...

    async def screen(self, live: bool = False) -> bytes | None:
        """The latest step's screenshot, or with ``live`` the display as it is now (the
        latest screenshot when the daemon cannot capture it); None when there is none."""
        ...

    async def pending_approvals(self) -> list[dict[str, Any]]:
        """The ``approval_requested`` lines of the calls still waiting for an answer."""
        ...

    async def approve(self, approval_id: str, decision: str, note: str) -> None:
        """Answer a request: ``allow_once``, ``allow_task`` or ``deny`` (with the note)."""
        ...

    async def approval_screenshot(self, approval_id: str) -> bytes | None: ...

    async def workers(self) -> dict[str, Any]:
        """The fleet's workers: ``{fleet, workers: [{name, host, display, state, task,
        live, ...}]}`` (``fleet`` false: the daemon runs its tasks itself)."""
        ...

    async def schedules(self) -> list[dict[str, Any]]:
        """``GET /api/schedules``'s schedules (``id``, ``when``, ``tz``, ``next_run``...)."""
        ...

    async def pause(self, take_over: bool = False) -> None:
        """Take the screen from the agent (a takeover by the TUI: no VNC in a terminal);
        ``take_over``: from the face that holds it, having asked the person."""
        ...

    async def resume(self, note: str = "") -> None:
        """Hand the screen back to the agent."""
        ...

    async def recordings(self) -> dict[str, Any]:
        """``{recording, recordings}``: the one running (or None) and those on disk."""
        ...

    async def start_recording(self, name: str) -> dict[str, Any]:
        """Record a person on the daemon's desktop (teach by showing)."""
        ...

    async def stop_recording(self) -> dict[str, Any]:
        """End it: ``{name, slug, steps, skill, memory}``."""
        ...

    async def aclose(self) -> None: ...


class ReplayBackend:
    """A recorded journal: ``history`` lines at start, then whatever :meth:`push` adds.

    Its pending approvals are ``pending`` when given, else the requests of its lines that
    have no answer and whose task has not ended (what a daemon would still hold).
    """

    owns_gateway = False
    recorded = False
    screen_note = ""

    def __init__(
        self,
        history: list[dict[str, Any]] | None = None,
        *,
        todos: list[dict[str, Any]] | None = None,
        screen: bytes | None = None,
        label: str = "replay",
        pending: list[dict[str, Any]] | None = None,
        approval_screenshots: dict[str, bytes] | None = None,
        workers: list[dict[str, Any]] | None = None,
    ) -> None:
        self.label = label
        self._history = list(history or [])
        self._todos = list(todos or [])
        self._screen = screen
        self.screen_requests: list[bool] = []
        """``live`` of each screen request, in order."""
        self._pending = pending
        self._approval_screenshots = dict(approval_screenshots or {})
        self._pushed: list[dict[str, Any]] = []
        self._live: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[str] = []
        self.cancelled: list[str] = []
        self.answers: list[tuple[str, str]] = []
        self.approvals: list[tuple[str, str, str]] = []
        """``(approval_id, decision, note)`` of every answer given."""
        self.takeovers: list[str] = []
        self.fleet_workers = workers
        self.schedule_rows: list[dict[str, Any]] = []
        """The schedules to show (set by a test)."""
        """The fleet's workers to show (None: not a fleet)."""
        """``pause`` and ``resume`` in the order they were asked."""

    @classmethod
    def from_file(cls, path: Path, **kwargs: Any) -> ReplayBackend:
        """A recording: no daemon holds its requests, so none can be answered; the screen
        is the run's last screenshot (see :func:`recorded_screen`)."""
        lines = read_journal(path)
        kwargs.setdefault("pending", [])
        kwargs.setdefault("screen", recorded_screen(path, lines))
        backend = cls(lines, label=f"replay {path.name}", **kwargs)
        backend.recorded = True
        return backend

    def push(self, *lines: dict[str, Any]) -> None:
        for line in lines:
            self._pushed.append(line)
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

    async def send(self, text: str) -> str | None:
        self.sent.append(text)
        return None

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

    async def screen(self, live: bool = False) -> bytes | None:
        self.screen_requests.append(live)
        return self._screen

    async def pending_approvals(self) -> list[dict[str, Any]]:
        if self._pending is not None:
            return list(self._pending)
        return unanswered(self._history + self._pushed)

    async def approve(self, approval_id: str, decision: str, note: str) -> None:
        self.approvals.append((approval_id, decision, note))

    async def approval_screenshot(self, approval_id: str) -> bytes | None:
        return self._approval_screenshots.get(approval_id)

    async def workers(self) -> dict[str, Any]:
        found = self.fleet_workers
        return {"fleet": found is not None, "workers": list(found or [])}

    async def schedules(self) -> list[dict[str, Any]]:
        return list(self.schedule_rows)

    async def pause(self, take_over: bool = False) -> None:
        self.takeovers.append("take over" if take_over else "pause")

    async def resume(self, note: str = "") -> None:
        self.takeovers.append(f"resume: {note}" if note else "resume")

    async def recordings(self) -> dict[str, Any]:
        return {"recording": None, "recordings": []}

    async def start_recording(self, name: str) -> dict[str, Any]:
        raise BackendError("a recorded journal cannot record: connect to jarvis serve")

    async def stop_recording(self) -> dict[str, Any]:
        raise BackendError("a recorded journal cannot record: connect to jarvis serve")

    async def aclose(self) -> None:
        return None


def unanswered(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``approval_requested`` lines with no ``approval_resolved`` after them, of tasks
    that have not ended since."""
    waiting: dict[str, dict[str, Any]] = {}
    for line in lines:
        kind = line.get("kind")
        if kind == "approval_requested":
            waiting[str(line.get("approval_id"))] = line
        elif kind == "approval_resolved":
            waiting.pop(str(line.get("approval_id")), None)
        elif kind == "task_finished":
            ended = line.get("task_id")
            waiting = {k: v for k, v in waiting.items() if v.get("task_id") != ended}
    return list(waiting.values())


def recorded_screen(journal: Path, lines: list[dict[str, Any]]) -> bytes | None:
    """The last screenshot of a recorded run: the newest step's ``after.jpg`` (or
    ``before.jpg``) beside a run's ``events.jsonl``, else the last ``step_finished``
    screenshot under the data dir the journal sits in (``DATA/runs/DATE/TASK_ID/``)."""
    folder = journal.parent
    for step in sorted((folder / "steps").glob("[0-9]*"), reverse=True):
        for name in ("after.jpg", "before.jpg"):
            if (step / name).is_file():
                return (step / name).read_bytes()
    data_dir = folder.parents[2] if len(folder.parents) > 2 else folder
    for line in reversed(lines):
        shot = line.get("screenshot") if line.get("kind") == "step_finished" else None
        if isinstance(shot, str) and shot and (found := _inside(data_dir, shot)) is not None:
            return found.read_bytes()
    return None


def _inside(data_dir: Path, relative: str) -> Path | None:
    """``data_dir / relative`` when that is a file inside ``data_dir``."""
    path = (data_dir / relative).resolve()
    return path if path.is_relative_to(data_dir.resolve()) and path.is_file() else None
