"""The inbox channel: markdown files dropped into ``messages/drop/``, and hand edits of
``messages/inbox.md``, become messages.

A drop file is its text, with an optional front-matter header::

    ---
    sender: ada
    priority: high
    ---
    Open the quarterly report and print page 3.

Files whose names start with a dot or that do not end in ``.md`` (editor temp files,
``*.tmp``, ``*~``) are ignored, and a file is read only once its size and time stopped
changing for ``settle_s``. Only regular files are read, opened without following a link,
and only up to the API's cap on a message: a link (to ``/etc/passwd``, to the API token),
a FIFO or a file too big is moved to ``drop/refused/`` unread, with a warning. After its
message is safely in the inbox the file is moved to ``drop/processed/`` (never deleted).
The message id is derived from the file (name, time, content), so a crash between the
append and the move re-imports nothing: the append with that id finds the message already
in the inbox, processing or the archive.

watchdog reports changes in the messages folder; a periodic scan covers file systems
that send no events. Whoever waits on :attr:`InboxChannel.arrived` (or passes
``on_messages``) hears about every message that newly shows up in the inbox.

It is a :class:`~jarvis.gateway.channels.base.Channel`: its reply is the message's entry in
``messages/archive/DATE.md`` with the task's outcome, which the worker writes, so
:meth:`InboxChannel.deliver` has nothing more to send.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from watchdog.events import (
    EVENT_TYPE_CLOSED_NO_WRITE,
    EVENT_TYPE_OPENED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from jarvis.events import EventBus
from jarvis.gateway.channels.drop_files import (
    Refused,
    drop_message_id,
    fsync_folder,
    lexists,
    open_folder,
    read_drop_file,
    split_front_matter,
    wanted,
)
from jarvis.gateway.markdown import (
    Problem,
    ProblemLog,
    parse_priority,
)
from jarvis.gateway.message_format import (
    KEY_PATTERN,
    MAX_MESSAGE_CHARS,
    Message,
)
from jarvis.gateway.queue import MessageQueue

if TYPE_CHECKING:
    from jarvis.events import ReplyReady
    from jarvis.gateway.channels.base import ChannelHost

log = logging.getLogger(__name__)

CHANNEL = "inbox"
PROCESSED = "processed"
REFUSED = "refused"
OnMessages = Callable[[list[Message]], Any]
READS = (EVENT_TYPE_OPENED, EVENT_TYPE_CLOSED_NO_WRITE)
"""Watcher events that change nothing (a file opened, or closed unwritten): each scan
reads ``inbox.md``, so waking on these would scan again and again."""


class InboxChannel:
    """Watches ``messages/`` for drop files and inbox edits; asyncio-friendly."""

    name = CHANNEL

    def __init__(
        self,
        queue: MessageQueue,
        *,
        poll_interval_s: float = 2.0,
        settle_s: float = 0.5,
        use_polling: bool = False,
        on_messages: OnMessages | None = None,
        bus: EventBus | None = None,
    ) -> None:
        self.queue = queue
        self.drop_dir = queue.drop_dir
        self.processed_dir = self.drop_dir / PROCESSED
        self.refused_dir = self.drop_dir / REFUSED
        self.poll_interval_s = poll_interval_s
        self.settle_s = settle_s
        self.use_polling = use_polling
        self.on_messages = on_messages
        self.arrived = asyncio.Event()
        """Set when new messages show up in the inbox; the consumer clears it."""
        self._wake = asyncio.Event()
        self._seen: set[str] = set()
        self._sizes: dict[str, tuple[tuple[int, int], float]] = {}
        self._unready = False
        self._observer: BaseObserver | None = None
        self._worker: asyncio.Task[None] | None = None
        self._problems = ProblemLog(bus)
        self._scan_lock = asyncio.Lock()
        self._folder_refused = ""

    # -- lifecycle --
    async def start(self, host: ChannelHost | None = None) -> None:
        self.drop_dir.mkdir(parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        self._observer = await asyncio.to_thread(self._start_observer, loop)
        self._worker = asyncio.create_task(self._run(), name="inbox-channel")
        self._wake.set()

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        if self._observer is not None:
            observer, self._observer = self._observer, None
            observer.stop()
            await asyncio.to_thread(observer.join, 5.0)

    async def deliver(self, reply: ReplyReady) -> None:
        """Nothing to send: the worker archives the messages with the task's outcome."""
        log.debug("task %s answered in the inbox archive (%s)", reply.task_id, reply.status)

    def _start_observer(self, loop: asyncio.AbstractEventLoop) -> BaseObserver | None:
        handler = _Wake(self, loop)
        kinds = [PollingObserver] if self.use_polling else [Observer, PollingObserver]
        for kind in kinds:
            observer = kind()
            try:
                observer.schedule(handler, str(self.queue.root), recursive=True)
                observer.start()
                return observer
            except OSError as exc:  # e.g. out of inotify watches
                log.warning("cannot watch %s with %s: %s", self.queue.root, kind.__name__, exc)
        log.warning("no file watcher; scanning %s every %gs", self.queue.root, self.poll_interval_s)
        return None

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        while True:
            timeout = (
                min(self.settle_s, self.poll_interval_s) if self._unready else self.poll_interval_s
            )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.scan()
            except Exception:  # the boundary: keep watching whatever one scan hit
                log.exception("inbox scan failed; trying again on the next change")

    # -- one pass --
    async def scan(self) -> list[Message]:
        """Import ready drop files, then report messages new to the inbox (and return them)."""
        async with self._scan_lock:
            fresh = await asyncio.to_thread(self._scan_files)
        if fresh:
            self.arrived.set()
            if self.on_messages is not None:
                outcome = self.on_messages(fresh)
                if inspect.isawaitable(outcome):
                    await outcome
        return fresh

    def _scan_files(self) -> list[Message]:
        for path in self._ready_files():
            self.import_file(path)
        pending = self.queue.pending()
        fresh = [m for m in pending if m.id not in self._seen]
        self._seen = {m.id for m in pending}
        return fresh

    @contextlib.contextmanager
    def _drop_folder(self) -> Iterator[int | None]:
        """``messages/drop/`` as a descriptor, neither folder followed through a link; None
        (with one warning while it lasts) when either is a link, so nothing outside the data
        dir is ever listed, read or moved."""
        with contextlib.ExitStack() as stack:
            try:
                root = stack.enter_context(
                    open_folder(self.queue.root.parent, self.queue.root.name)
                )
                drop: int | None = stack.enter_context(open_folder(root, self.drop_dir.name))
                self._folder_refused = ""
            except FileNotFoundError:
                drop = None
            except Refused as exc:
                if self._folder_refused != str(exc):
                    log.warning("the drop folder is not read: %s", exc)
                self._folder_refused = str(exc)
                drop = None
            yield drop

    def _ready_files(self) -> list[Path]:
        """Drop entries whose size and time have been still for ``settle_s`` (links and
        other non-regular files too: :meth:`import_file` refuses them)."""
        ready, now, sizes = [], time.time(), {}
        self._unready = False
        with self._drop_folder() as drop:
            if drop is None:
                return []
            with os.scandir(drop) as entries:
                listed = sorted((entry.name, entry) for entry in entries if wanted(entry.name))
            for name, entry in listed:
                try:
                    st = entry.stat(follow_symlinks=False)  # a link is never followed
                except FileNotFoundError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    continue
                key = (st.st_size, st.st_mtime_ns)
                before = self._sizes.get(name)
                since = before[1] if before and before[0] == key else now
                if now - st.st_mtime >= self.settle_s or now - since >= self.settle_s:
                    ready.append(self.drop_dir / name)
                else:
                    sizes[name] = (key, since)
                    self._unready = True
        self._sizes = sizes
        return ready

    def import_file(self, path: Path) -> Message | None:
        """Turn one drop file into an inbox message and move the file aside; a link, a
        file that is not regular, or one over :data:`MAX_DROP_BYTES` is moved to
        ``drop/refused/`` with a warning, unread. Everything is opened relative to the
        drop folder's descriptor, so a folder swapped for a link is never followed."""
        with self._drop_folder() as drop:
            if drop is None:
                return None
            return self._import(drop, path)

    def _import(self, drop: int, path: Path) -> Message | None:
        try:
            data, mtime = read_drop_file(path.name, dir_fd=drop)
        except FileNotFoundError:
            return None
        except Refused as exc:
            self._refuse(drop, path, str(exc))
            return None
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", "replace")
            self._report(path, "not valid UTF-8; undecodable bytes replaced (file kept)")
        if len(text) > MAX_MESSAGE_CHARS:
            self._refuse(drop, path, f"longer than {MAX_MESSAGE_CHARS} characters")
            return None
        fields, body = split_front_matter(text)
        if not body.strip():
            self._report(path, "no message text; the file stays where it is")
            return None
        sender = fields.pop("sender", "") or fields.pop("from", "") or "user"
        message = self.queue.append(
            body,
            sender=sender,
            channel=CHANNEL,
            priority=self._priority(path, fields.pop("priority", "")),
            reply_to=fields.pop("reply_to", "") or None,
            source=f"drop/{path.name}",
            meta=self._meta(path, fields),
            message_id=drop_message_id(path.name, mtime, text),
        )
        target = self._move_aside(drop, path, message.id)
        log.info("imported %s as message %s (file now %s)", path.name, message.id, target)
        return message

    def _priority(self, path: Path, value: str) -> str | None:
        if not value:
            return None
        try:
            parse_priority(value)
        except ValueError as exc:
            self._report(path, f"{exc}; imported without a priority")
            return None
        return value

    def _meta(self, path: Path, fields: dict[str, str]) -> dict[str, str]:
        fields.pop("from", None)
        fields.pop("sender", None)
        meta = {}
        for key, value in fields.items():
            if KEY_PATTERN.fullmatch(key) and key not in ("via", "id", "source"):
                meta[key] = value
            else:
                self._report(path, f"front-matter field {key!r} ignored")
        return meta

    def _move_aside(self, drop: int, path: Path, message_id: str) -> Path:
        try:
            with open_folder(drop, PROCESSED, create=True) as processed:
                name = path.name
                if lexists(name, processed):
                    name = f"{path.stem}.{message_id}{path.suffix}"
                try:
                    os.replace(path.name, name, src_dir_fd=drop, dst_dir_fd=processed)
                except FileNotFoundError:  # someone took it away meanwhile; the message is in
                    return path
                fsync_folder(processed)
                fsync_folder(drop)
                return self.processed_dir / name
        except Refused as exc:
            log.warning(
                "%s stays in the drop folder (message %s is in): %s", path.name, message_id, exc
            )
            return path

    def _refuse(self, drop: int, path: Path, reason: str) -> None:
        """Move a drop entry it will not read to ``drop/refused/`` (the entry itself, never
        what a link points to) and warn."""
        try:
            with open_folder(drop, REFUSED, create=True) as refused:
                name = path.name
                if lexists(name, refused):
                    name = f"{path.stem}.{time.time_ns()}{path.suffix}"
                try:
                    os.replace(path.name, name, src_dir_fd=drop, dst_dir_fd=refused)
                except FileNotFoundError:
                    return
        except Refused as exc:
            self._report(path, f"{reason}; not imported, and not moved: {exc}")
            return
        self._report(path, f"{reason}; not imported, moved to {self.refused_dir / name}")

    def _report(self, path: Path, reason: str) -> None:
        self._problems.report([Problem(str(path), 1, reason, path.name)])


class _Wake(FileSystemEventHandler):
    """Wakes the channel's loop for changes to inbox.md or files in drop/."""

    def __init__(self, channel: InboxChannel, loop: asyncio.AbstractEventLoop) -> None:
        self.channel = channel
        self.loop = loop
        self.drop_dir = os.path.abspath(channel.drop_dir)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in READS:  # the scan's own reads: waking on them never stops
            return
        paths = [event.src_path, getattr(event, "dest_path", "")]
        for raw in paths:
            if not raw:
                continue
            path = os.path.abspath(os.fsdecode(raw))
            if os.path.basename(path) == "inbox.md" or os.path.dirname(path) == self.drop_dir:
                with contextlib.suppress(RuntimeError):  # the loop has closed
                    self.loop.call_soon_threadsafe(self.channel.wake)
                return
