"""The run journal: every event of a task, one JSON line each, on disk as it happens.

Layout (under the data dir)::

    runs/seq                            the last sequence number handed out (flock'd)
    runs/DATE/TASK_ID/events.jsonl      the journal, append-only
    runs/DATE/TASK_ID/run.json          what the run was and how it ended

A journal line is one JSON object::

    {"seq": 42, "ts": 1764000000.25, "kind": "tool_call_started", "task_id": "T003", ...}

``seq`` is unique and increasing across the data dir (also across restarts and across
processes sharing the data dir: :class:`SeqCounter` keeps it in ``runs/seq`` under an
fcntl lock, and never goes below the last line on disk); ``ts`` is the event's time
(Unix seconds); ``kind`` and the rest are the fields of the :mod:`jarvis.events` model
(``event.model_dump()``). Known secret values (API keys) are replaced before a line is
written. Model text deltas are coalesced: a run writes at most one ``model_text_delta``
line per :data:`TEXT_INTERVAL_S` (20 a second), and pending text is written before any
other event of the run, so the order is kept. Events without a task id that come while
a task runs (model retries, tool-mode fallbacks) go into that task's journal; events of
no task are not journaled.

Each line is written with one ``write`` to a file opened with ``O_APPEND``: a crash
(even ``kill -9``) loses at most the line being written. A torn last line is skipped by
the reader with a warning, and terminated with a newline before the next append.

``run.json`` (written atomically at the start, after each step and at the end) is a
:class:`~jarvis.runs.run_info.RunInfo`: the task, channel, model, settings hash, times,
status, summary, verdict, who stopped it, and ``runs``, one entry per run of the task. A
task runs again after a person answers its question or an update is merged into it: the
new run goes on in the same folder and journal (its ``task_started`` line carries ``run``
and ``answer``, what the person added), the title stays the first run's, and ``steps``,
``tokens`` and ``cost_usd`` count every run (each run's own are in ``runs``). A
``task_finished`` line carries ``run`` and the task's ``task_tokens`` and
``task_cost_usd`` over all its runs beside the event's fields (this run's).

``status`` is ``running`` until the end (then finished, failed, needs_user or
cancelled); a reader shows a ``running`` run whose process is gone as ``interrupted``.
``verdict`` is the last verification, ``{"done", "reason"}``, or null.

Writing: :class:`JournalWriter` subscribes to an :class:`~jarvis.events.EventBus`;
``writer.listen(callback)`` sees every :class:`JournalLine` right after it is on disk (in
the emitting thread, in ``seq`` order; callbacks must not block); ``writer.close()``
writes pending text and unsubscribes. The run index (:mod:`jarvis.runs.index`) is told
of each folder opened, each ``run.json`` saved and each journal closed. Reading:
:mod:`jarvis.runs.reader` (``read_events``, ``events_after``, ``list_runs``, ``find_run``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.events import (
    Event,
    EventBus,
    ModelTextDelta,
    TaskFinished,
    TaskStarted,
    VerificationFinished,
)
from jarvis.redaction import known_secrets, redact
from jarvis.runs.folder import EVENTS_FILE, folder_name, last_seq
from jarvis.runs.index import JournalIndex
from jarvis.runs.run_info import RUN_FILE, RunInfo, added_text
from jarvis.runs.seq import SeqCounter

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)

TEXT_INTERVAL_S = 0.05
"""Model text deltas of a run are written at most this often (20 lines a second)."""


def runs_dir(data_dir: Path) -> Path:
    return data_dir / "runs"


@dataclass(frozen=True)
class JournalLine:
    """One line as written: its number, kind, task and exact JSON text (no newline)."""

    seq: int
    kind: str
    task_id: str
    text: str


Listener = Callable[[JournalLine], None]


@dataclass
class _Run:
    """One run being journaled: its folder, its open file and its run.json fields."""

    folder: Path
    fd: int
    info: RunInfo
    text: list[str] = field(default_factory=list)
    text_ts: float = 0.0
    last_text_write: float = 0.0
    flush_pending: bool = False


class JournalWriter:
    """Writes the journal of every task whose events pass on ``bus`` (see the module doc)."""

    def __init__(
        self,
        data_dir: Path,
        bus: EventBus,
        *,
        channel: str | Callable[[str], str | None] = "cli",
        provider: str = "",
        model: str = "",
        settings_hash: str = "",
        secrets: set[str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.counter = SeqCounter(data_dir)
        self._channel = channel
        self._provider, self._model, self._settings_hash = provider, model, settings_hash
        self._secrets = known_secrets() if secrets is None else secrets
        self._runs: dict[str, _Run] = {}
        self._current: str | None = None
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._closed = False
        self._index = JournalIndex(data_dir)
        self.last_seq = 0
        """The last seq this writer wrote (0 before its first line)."""
        self._unsubscribe = bus.subscribe(self._on_event)

    def _known(self) -> set[str]:
        """The secrets given at the start and those registered since (the API token)."""
        return self._secrets | known_secrets()

    @classmethod
    def for_settings(
        cls, settings: Settings, bus: EventBus, channel: str | Callable[[str], str | None]
    ) -> JournalWriter:
        """A writer for ``settings.data_dir``, naming the provider, model and settings."""
        return cls(
            settings.data_dir,
            bus,
            channel=channel,
            provider=settings.provider,
            model=settings.active_model,
            settings_hash=settings_digest(settings),
            secrets=known_secrets(settings),
        )

    @property
    def current(self) -> str | None:
        """The task running now (between its TaskStarted and TaskFinished), if any."""
        return self._current

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every line once it is written; returns an unsubscribe."""
        with self._lock:
            self._listeners.append(listener)

        def unlisten() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unlisten

    def folder(self, task_id: str) -> Path | None:
        """The run folder this writer journals ``task_id`` into, if it has one."""
        run = self._runs.get(task_id)
        return run.folder if run is not None else None

    def close(self) -> None:
        """Write pending text, close the files and stop listening to the bus."""
        self._unsubscribe()
        with self._lock:
            self._closed = True
            for run in self._runs.values():
                self._flush_text(run)
                self._close_run(run)
            self._runs.clear()
            self.counter.close()
            self._index.close()

    # -- events in --
    def _on_event(self, event: Event) -> None:
        task_id = event.task_id or self._current
        if task_id is None:
            return
        with self._lock:
            if self._closed:
                return
            extra: dict[str, Any] = {}
            if isinstance(event, TaskStarted):
                extra = self._start(task_id, event)
            run = self._runs.get(task_id) or self._reopen(task_id)
            if run is None:
                return
            if isinstance(event, ModelTextDelta):
                self._add_text(run, event)
                return
            self._flush_text(run)
            if isinstance(event, TaskFinished):
                extra = run.info.finishing(event)
            self._write(run, event.model_dump(mode="json") | {"task_id": task_id} | extra)
            self._update_info(run, event)

    def _start(self, task_id: str, event: TaskStarted) -> dict[str, Any]:
        """Open the task's run; a task that ran before (asked a question, took an update)
        goes on in its folder as run 2, 3...: the extra fields of its ``task_started`` line."""
        self._current = task_id
        for other, old in list(self._runs.items()):  # ended runs (kept for their replies)
            if other == task_id or old.info.status != "in_progress":
                self._flush_text(old)
                self._close_run(old)
                del self._runs[other]
        task = redact(event.task, self._known())
        earlier = self._earlier(task_id, task, event.ts)
        if earlier is not None:
            folder, info = earlier
            part = info.begin(event.ts, added_text(info.task_text or info.task, task))
            info.task_text = task
            info.pid = os.getpid()
            self._runs[task_id] = self._open(folder, info)
            return {"run": part.run, "answer": part.answer}
        day = datetime.fromtimestamp(event.ts).strftime("%Y-%m-%d")
        folder = runs_dir(self.data_dir) / day / folder_name(task_id)
        channel = self._channel(task_id) if callable(self._channel) else self._channel
        info = RunInfo(
            task_id=task_id,
            task=task,
            task_text=task,
            channel=channel or "unknown",
            provider=self._provider,
            model=self._model,
            settings_hash=self._settings_hash,
            pid=os.getpid(),
            started=event.ts,
        )
        self._runs[task_id] = self._open(folder, info)
        return {"run": 1}

    def _earlier(self, task_id: str, task: str, ts: float) -> tuple[Path, RunInfo] | None:
        """The folder and record of this task's earlier runs, to go on in; None for a first
        run. An earlier run continues when its text is where the new one starts (an answer
        or an update is appended to the task), or when it is in today's folder anyway."""
        folder = self._index.find(task_id)
        if folder is None:
            return None
        try:
            info = RunInfo.load(folder)
        except (OSError, ValueError):
            return None
        today = datetime.fromtimestamp(ts).strftime("%Y-%m-%d")
        if not task.startswith(info.task_text or info.task) and folder.parent.name != today:
            return None  # the same id for another task (a todo list begun anew)
        return folder, info

    def _reopen(self, task_id: str) -> _Run | None:
        """A run of this task from before (e.g. its reply after a restart), to append to."""
        folder = self._index.find(task_id)
        if folder is None:
            return None
        try:
            info = RunInfo.load(folder)
        except (OSError, ValueError):
            info = RunInfo(task_id=task_id)
        run = self._open(folder, info)
        self._runs[task_id] = run
        return run

    def _open(self, folder: Path, info: RunInfo) -> _Run:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / EVENTS_FILE
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        size = os.fstat(fd).st_size
        if size and _last_byte(path, size) != b"\n":  # a torn line from a crash: end it
            os.write(fd, b"\n")
        self._index.put(folder, info)  # the run index (runs/index.sqlite) knows it
        return _Run(folder=folder, fd=fd, info=info)

    def _close_run(self, run: _Run) -> None:
        os.close(run.fd)
        self._index.closed(run.folder)  # its last seq is now final

    # -- text coalescing --
    def _add_text(self, run: _Run, event: ModelTextDelta) -> None:
        if not run.text:
            run.text_ts = event.ts
        run.text.append(event.text)
        wait = run.last_text_write + TEXT_INTERVAL_S - time.monotonic()
        if wait <= 0:
            self._flush_text(run)
        elif not run.flush_pending:
            run.flush_pending = True
            _later(wait, lambda: self._timed_flush(run))

    def _timed_flush(self, run: _Run) -> None:
        with self._lock:
            run.flush_pending = False
            if self._closed or self._runs.get(run.info.task_id) is not run:
                return
            wait = run.last_text_write + TEXT_INTERVAL_S - time.monotonic()
            if wait > 0 and run.text:  # written meanwhile (a late timer): keep the pace
                run.flush_pending = True
                _later(wait, lambda: self._timed_flush(run))
                return
            self._flush_text(run)

    def _flush_text(self, run: _Run) -> None:
        if not run.text:
            return
        text, run.text = "".join(run.text), []
        run.last_text_write = time.monotonic()
        task_id = run.info.task_id
        line = {"kind": "model_text_delta", "ts": run.text_ts, "task_id": task_id, "text": text}
        self._write(run, line)

    # -- writing --
    def _write(self, run: _Run, fields: dict[str, Any]) -> None:
        seq = self.counter.next()
        record = {"seq": seq, "ts": fields.pop("ts"), "kind": fields.pop("kind")}
        record["task_id"] = fields.pop("task_id")
        record.update(fields)
        text = redact(json.dumps(record, ensure_ascii=False, default=str), self._known())
        os.write(run.fd, (text + "\n").encode("utf-8"))
        part = run.info.current
        if part.first_seq is None:
            part.first_seq = seq
        part.last_seq = self.last_seq = seq
        line = JournalLine(seq=seq, kind=record["kind"], task_id=record["task_id"], text=text)
        for listener in list(self._listeners):
            try:
                listener(line)
            except Exception:  # a broken listener must not stop the journal
                log.exception("journal listener %r failed", listener)

    def _update_info(self, run: _Run, event: Event) -> None:
        if not run.info.record(event, lambda text: redact(text, self._known())):
            return
        if isinstance(event, TaskFinished) and self._current == event.task_id:
            self._current = None
        if isinstance(event, VerificationFinished):
            return  # (written with the next step or the end)
        try:
            run.info.save(run.folder)
        except OSError as exc:
            log.warning("could not write %s: %s", run.folder / RUN_FILE, exc)
        self._index.put(run.folder, run.info)


def settings_digest(settings: Any) -> str:
    """A short hash of the settings (they hold no secrets) for ``run.json``."""
    dump = settings.model_dump_json() if hasattr(settings, "model_dump_json") else str(settings)
    return hashlib.sha256(dump.encode()).hexdigest()[:16]


def _last_byte(path: Path, size: int) -> bytes:
    with path.open("rb") as f:
        f.seek(size - 1)
        return f.read(1)


def _later(delay: float, callback: Callable[[], None]) -> None:
    """Run ``callback`` after ``delay`` seconds: on the running loop, else on a timer thread."""
    try:
        asyncio.get_running_loop().call_later(delay, callback)
    except RuntimeError:
        timer = threading.Timer(delay, callback)
        timer.daemon = True
        timer.start()


__all__ = [
    "EVENTS_FILE",
    "RUN_FILE",
    "TEXT_INTERVAL_S",
    "JournalLine",
    "JournalWriter",
    "SeqCounter",
    "last_seq",
    "settings_digest",
]
