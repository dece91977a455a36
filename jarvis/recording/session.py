"""One recording that runs in the background until it is stopped: the daemon's Record
button (``POST /api/recordings``, the web panel, the TUI) records its own desktop with it.

:meth:`RecordingSession.start` opens the recorder on a display and returns once XRecord
listens (or raises :class:`~jarvis.recording.xrecord.RecordUnavailable`);
:meth:`RecordingSession.stop` ends it, writes ``DATA/recordings/SLUG/`` and keeps the skill
in long-term memory, as ``jarvis record`` does. The person's stop chord ends it too; the
files are written at :meth:`stop` either way.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jarvis.desktop.a11y.reader import A11yReader
from jarvis.desktop.x11 import XDisplay
from jarvis.recording.recorder import Recorder, Recording, recordings_dir
from jarvis.recording.skill_file import (
    RecordingFile,
    load_recording,
    procedure,
    slug_of,
    write_recording,
)
from jarvis.recording.xrecord import RecordUnavailable

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)
READY_S = 10.0
"""How long XRecord may take to listen before the start is given up."""
STOP_S = 20.0


@dataclass(frozen=True)
class Finished:
    """What a stopped recording became."""

    name: str
    slug: str
    steps: int
    skill: str
    """The skill file, relative to the data dir ("" when nothing was done)."""
    memory: str
    """A line: kept in long-term memory, or why not."""


@dataclass(frozen=True)
class Listed:
    name: str
    slug: str
    created: str
    steps: int


def remember_recording(settings: Settings, data: RecordingFile) -> str:
    """Keep the recording as a ``skill`` memory (replacing an earlier one of the same
    name); a line saying what happened."""
    from jarvis.memory.embedding import EmbeddingUnavailable
    from jarvis.memory.long_term import LongTermMemory
    from jarvis.memory.recall import MemoryBridge

    try:
        memory = LongTermMemory.from_settings(settings)
    except EmbeddingUnavailable as exc:
        return f"not kept in long-term memory: {exc}"
    source = f"recording:{data.slug}"
    try:
        old = [m.id for m in memory.list(types=["skill"]) if source in m.task_ids]
        memory.forget_many(old)
        note = f"\n(recorded by a person: recordings/{data.slug}/skill.md)"
        MemoryBridge(memory).store_skill(data.name, procedure(data) + note, source)
    finally:
        memory.close()
    return "kept in long-term memory as a skill"


class RecordingSession:
    """A recording of ``where`` under the name ``name``, in a thread of its own."""

    def __init__(self, settings: Settings, where: XDisplay, name: str) -> None:
        self.settings = settings
        self.where = where
        self.name = name
        self.slug = slug_of(name)  # ValueError for a name without letters or digits
        self.started_at = 0.0
        self._stop = threading.Event()
        self._done: list[Recording] = []
        self._failed: list[BaseException] = []
        self._thread: threading.Thread | None = None
        self._recorder: Recorder | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Listen on the display; raises RecordUnavailable when it cannot be recorded."""
        bus = self.settings.a11y_session_bus or self.where.session_bus
        timeout = self.settings.tree_timeout_ms / 1000
        reader = A11yReader(bus, timeout=timeout) if bus else None
        try:
            self._recorder = Recorder(self.where, reader)
        except Exception as exc:  # no display to open: one line for the caller
            if reader is not None:
                reader.close()
            why = f"display {self.where.name!r} cannot be recorded: {exc}"
            raise RecordUnavailable(why) from None
        self._thread = threading.Thread(target=self._run, name="recording", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + READY_S
        while not self._recorder.started.wait(0.05):
            if self._failed or not self._thread.is_alive() or time.monotonic() > deadline:
                self._stop.set()
                self._thread.join(STOP_S)
                self._recorder.close()
                failed = str(self._failed[0]) if self._failed else "XRecord did not start"
                raise RecordUnavailable(failed)
        self.started_at = time.time()

    def _run(self) -> None:
        assert self._recorder is not None
        try:
            self._done.append(self._recorder.run(self._stop))
        except Exception as exc:  # reported by start() or stop()
            log.warning("recording %s: %s", self.slug, exc)
            self._failed.append(exc)

    def stop(self, remember: bool = True) -> Finished:
        """End the recording (blocking: call it from a worker thread), write its folder and
        keep it in memory; a recording with no step writes nothing."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(STOP_S)
        if self._recorder is not None:
            self._recorder.close()
        if self._failed:
            return Finished(self.name, self.slug, 0, "", f"not recorded: {self._failed[0]}")
        recording = self._done[0] if self._done else Recording()
        if not recording.steps:
            return Finished(self.name, self.slug, 0, "", "nothing was done; nothing written")
        path = write_recording(self.settings.data_dir, self.name, recording)
        _, data = load_recording(self.settings.data_dir, self.name)
        memory = remember_recording(self.settings, data) if remember else "not kept in memory"
        skill = str(path.relative_to(self.settings.data_dir))
        return Finished(self.name, self.slug, len(data.steps), skill, memory)


def list_recordings(data_dir: Path) -> list[Listed]:
    """The recordings in ``DATA/recordings/``, newest first; a folder that cannot be read
    is left out."""
    found: list[Listed] = []
    root = recordings_dir(data_dir)
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            _, data = load_recording(data_dir, folder.name)
        except (OSError, ValueError) as exc:
            log.debug("recording %s: %s", folder.name, exc)
            continue
        found.append(Listed(data.name, data.slug, data.created, len(data.steps)))
    return sorted(found, key=lambda r: r.created, reverse=True)
