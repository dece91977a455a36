"""The message queue: ``messages/inbox.md`` -> ``processing.md`` -> ``archive/DATE.md``.

Entries are in the format of :mod:`jarvis.gateway.message_format`. Every file is locked,
written atomically and re-read when someone else changed it (see :mod:`.markdown`); the
archive's day files are appended to instead, and looked up by id through an index
(:mod:`.message_archive`).

Moves are crash-safe: the destination is written before the source, and readers drop an
entry whose id (with the same content) already exists further down the line, so a crash
between the two writes leaves a duplicate that the next claim or :meth:`recover` removes.
A message with the same id but other content (an entry copied by hand) gets a new id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import date, datetime
from pathlib import Path

from jarvis.config import Settings
from jarvis.events import EventBus
from jarvis.gateway.locked_file import LOCK_TIMEOUT_S, MarkdownFile, Snapshot, retrying
from jarvis.gateway.markdown import (
    Document,
    Malformed,
    Problem,
    ProblemLog,
    canonical_time,
    now,
    parse_priority,
    problems_of,
)
from jarvis.gateway.message_archive import MessageArchive
from jarvis.gateway.message_format import (
    MAX_MESSAGE_CHARS,
    Message,
    content_id,
    forgiven_headings,
    new_message_id,
    parse_messages,
    render_messages,
)
from jarvis.gateway.oversized import cut_oversized

__all__ = ["Message", "MessageQueue"]

log = logging.getLogger(__name__)

INBOX_PREAMBLE = (
    "# Jarvis inbox\n\n"
    "<!-- One message per section: a line `## [YYYY-MM-DD HH:MM:SS] from:NAME via:inbox`,\n"
    "     the text, then a line `---`. Jarvis adds the id and picks messages up from here. -->"
)
PROCESSING_PREAMBLE = "# Jarvis: messages being handled\n\n<!-- Moved here from inbox.md. -->"


# --- dedupe -------------------------------------------------------------------------
Lookup = Callable[[Message], Message | None]


def _settle_ids(doc: Document[Message], elsewhere: Lookup) -> None:
    """Drop copies of messages already here or further down the line; re-id clashes."""
    seen: dict[str, Message] = {}
    kept: list[Message | Malformed] = []
    for item in doc.items:
        if isinstance(item, Message):
            other = seen.get(item.id) or elsewhere(item)
            if other is not None and other.same_as(item):
                log.warning(  # a crash leftover, or an identical copy: same id, time, text
                    "dropping a second copy of message %s (it is already queued or archived)",
                    item.id,
                )
                doc.changed = True
                continue
            if other is not None:
                old, item.id = item.id, _fresh_id(item, seen)
                log.warning("message id %s was taken by another message; now %s", old, item.id)
                doc.changed = True
            seen[item.id] = item
        kept.append(item)
    doc.items = kept


def _fresh_id(message: Message, taken: dict[str, Message]) -> str:
    candidate = content_id(message)
    while candidate in taken or candidate == message.id:
        candidate = new_message_id(message.timestamp)
    return candidate


def _copy(item: Message | Malformed) -> Message | Malformed:
    """A reader's own copy of a parsed entry (readers move, re-id and fill entries in)."""
    return item.model_copy() if isinstance(item, Message) else item


# --- the queue ----------------------------------------------------------------------
class MessageQueue:
    """Markdown-backed message queue shared by the daemon, CLI, TUI and people."""

    def __init__(
        self,
        data_dir: Path,
        *,
        bus: EventBus | None = None,
        lock_timeout: float = LOCK_TIMEOUT_S,
        max_message_chars: int = MAX_MESSAGE_CHARS,
    ) -> None:
        self.root = Path(data_dir) / "messages"
        self.inbox_file = MarkdownFile(self.root / "inbox.md", lock_timeout=lock_timeout)
        self.processing_file = MarkdownFile(self.root / "processing.md", lock_timeout=lock_timeout)
        self.archive_dir = self.root / "archive"
        self.history = MessageArchive(self.archive_dir, lock_timeout=lock_timeout)
        self.drop_dir = self.root / "drop"
        self.max_message_chars = max_message_chars
        """Longer inbox entries are cut out to ``drop/refused/`` before the inbox is read."""
        self.lock_timeout = lock_timeout
        self._problems = ProblemLog(bus)
        self._parsed: dict[Path, tuple[str, Document[Message]]] = {}
        """Each file's last text read and its parse (entries copied out for each reader)."""
        self._settled_texts: tuple[str, str] | None = None
        """(processing, inbox) as they were when last found settled against each other."""

    @classmethod
    def from_settings(cls, settings: Settings, bus: EventBus | None = None) -> MessageQueue:
        return cls(settings.data_dir, bus=bus, max_message_chars=settings.inbox.max_message_chars)

    def archive_file(self, day: date) -> MarkdownFile:
        return self.history.file(day)

    # -- reading --
    def _load(self, file: MarkdownFile, preamble: str) -> tuple[Snapshot, Document[Message]]:
        """The file and its entries; a text parsed before is not parsed again (a scan of the
        inbox every fraction of a second costs a read and a compare while nothing changes).
        The inbox's entries over the cap are cut out first, unread (the caller holds its
        lock)."""
        if file is self.inbox_file:
            self._cut_oversized()
        snapshot = file.read()
        cached = self._parsed.get(file.path)
        if cached is not None and cached[0] == snapshot.text:
            parsed = cached[1]
        else:
            parsed = parse_messages(snapshot.text)
            self._parsed[file.path] = (snapshot.text, parsed)
            self._problems.report(problems_of(file.path, parsed))
            for line, head, what in forgiven_headings(snapshot.text):
                log.info("%s:%d: read %r as a message heading (%s)", file.path, line, head, what)
        doc = Document(
            preamble=preamble if snapshot.stamp is None else parsed.preamble,
            items=[_copy(item) for item in parsed.items],
            changed=parsed.changed,
            warnings=parsed.warnings,
        )
        return snapshot, doc

    def _cut_oversized(self) -> None:
        """Move inbox entries over :attr:`max_message_chars` to ``drop/refused/``, one
        warning line each."""
        refused = self.drop_dir / "refused"
        for cut in cut_oversized(self.inbox_file.path, refused, self.max_message_chars):
            log.warning(
                "%s:%d: a message of %d characters (over inbox.max_message_chars, %d) was "
                "not taken; moved to %s: %s",
                self.inbox_file.path, cut.line, cut.chars, self.max_message_chars,
                cut.moved_to, cut.head,
            )  # fmt: skip

    def _both(self) -> tuple[Snapshot, Document[Message], Snapshot, Document[Message]]:
        """Inbox and processing (caller holds both locks), settled against each other: each
        entry checked against those further down the line, unless both texts are the ones
        last found settled (nothing to drop or re-id then)."""
        archive = self.history
        psnap, pdoc = self._load(self.processing_file, PROCESSING_PREAMBLE)
        isnap, idoc = self._load(self.inbox_file, INBOX_PREAMBLE)
        texts = (psnap.text, isnap.text)
        if texts == self._settled_texts:
            return isnap, idoc, psnap, pdoc
        archived = archive.present([m.id for m in (*pdoc.entries(), *idoc.entries())])

        def done(message: Message) -> Message | None:
            if message.id not in archived:
                return None
            return archive.find(message.id, message.timestamp.date())

        _settle_ids(pdoc, done)
        ahead = {m.id: m for m in pdoc.entries()}
        _settle_ids(idoc, lambda m: ahead.get(m.id) or done(m))
        if not (pdoc.changed or idoc.changed):
            self._settled_texts = texts
        return isnap, idoc, psnap, pdoc

    def pending(self) -> list[Message]:
        """Messages waiting in the inbox (hand-written ones get their ids written back)."""
        return self._settled(lambda idoc, pdoc: idoc.entries())

    def processing(self) -> list[Message]:
        """Messages taken from the inbox and not archived yet."""
        return self._settled(lambda idoc, pdoc: pdoc.entries())

    def recover(self) -> list[Message]:
        """After a crash: resolve half-done moves; returns the messages still in processing."""
        return self.processing()

    def _settled(
        self, pick: Callable[[Document[Message], Document[Message]], list[Message]]
    ) -> list[Message]:
        with self.inbox_file.locked(), self.processing_file.locked():

            def operation() -> list[Message]:
                isnap, idoc, psnap, pdoc = self._both()
                if pdoc.changed:
                    self.processing_file.replace(psnap, render_messages(pdoc))
                if idoc.changed:
                    self.inbox_file.replace(isnap, render_messages(idoc))
                return pick(idoc, pdoc)

            return retrying(operation, "reading the queue")

    def archived(self, day: date) -> list[Message]:
        return self.history.messages(day)

    def find(self, message_id: str, since: date | None = None) -> Message | None:
        """The message with this id in the inbox, processing or the archive (from ``since``)."""
        for file in (self.inbox_file, self.processing_file):
            for message in parse_messages(file.read().text).entries():
                if message.id == message_id:
                    return message
        return self.history.find(message_id, since)

    def problems(self) -> list[Problem]:
        """Sections that cannot be read, in the inbox, processing and today's archive."""
        today = self.archive_file(now().date())
        texts = [(f.path, f.read().text) for f in (self.inbox_file, self.processing_file)]
        texts.append((today.path, self.history.text(now().date())))
        return [p for path, text in texts for p in problems_of(path, parse_messages(text))]

    # -- writing --
    def append(
        self,
        text: str,
        sender: str = "user",
        channel: str = "inbox",
        priority: int | str | None = None,
        *,
        reply_to: str | None = None,
        source: str | None = None,
        meta: dict[str, str] | None = None,
        message_id: str | None = None,
        timestamp: datetime | None = None,
    ) -> Message:
        """Add a message to the inbox. With ``message_id`` it is idempotent: a message with
        that id already in the inbox, processing or archive is returned instead."""
        at = canonical_time(timestamp or now())
        message = Message(
            id=message_id or new_message_id(at),
            timestamp=at,
            sender=sender,
            channel=channel,
            text=text,
            priority=None if priority is None else parse_priority(priority),
            reply_to=reply_to,
            source=source,
            meta=meta or {},
        )
        if not message.text:
            raise ValueError("a message needs some text")
        with self.inbox_file.locked():

            def operation() -> Message:
                snapshot, doc = self._load(self.inbox_file, INBOX_PREAMBLE)
                ids = {m.id for m in doc.entries()}
                if message_id is not None:
                    existing = self._known(message_id, doc)
                    if existing is not None:
                        return existing
                while message.id in ids:
                    message.id = new_message_id(at)
                doc.items.append(message)
                self.inbox_file.replace(snapshot, render_messages(doc))
                return message

            return retrying(operation, "appending to the inbox")

    def _known(self, message_id: str, inbox: Document[Message]) -> Message | None:
        # processing before archive: a message moves in that order, destination first
        docs = (inbox, self._load(self.processing_file, PROCESSING_PREAMBLE)[1])
        for doc in docs:
            for message in doc.entries():
                if message.id == message_id:
                    return message
        return self.history.find(message_id)  # every day: the index makes it one lookup

    def claim_next(self, skip: Collection[str] = ()) -> Message | None:
        """Move the most urgent waiting message (oldest first among equals), other than those
        in ``skip``, to processing."""
        claimed = self.claim(limit=1, skip=skip)
        return claimed[0] if claimed else None

    def claim_all(self) -> list[Message]:
        """Move every waiting message to processing, most urgent first."""
        return self.claim()

    def claim(self, limit: int | None = None, skip: Collection[str] = ()) -> list[Message]:
        claimed: list[Message] = []
        with self.inbox_file.locked(), self.processing_file.locked():

            def operation() -> None:
                isnap, idoc, psnap, pdoc = self._both()
                room = None if limit is None else limit - len(claimed)
                waiting = sorted(
                    ((i, m) for i, m in enumerate(idoc.entries()) if m.id not in skip),
                    key=lambda p: (-(p[1].priority or 0), p[0]),
                )
                chosen = [m for _, m in waiting][:room]
                if chosen or pdoc.changed:
                    pdoc.items.extend(chosen)
                    self.processing_file.replace(psnap, render_messages(pdoc))
                    claimed.extend(chosen)
                if chosen or idoc.changed:
                    taken = {id(m) for m in chosen}
                    idoc.items = [i for i in idoc.items if id(i) not in taken]
                    self.inbox_file.replace(isnap, render_messages(idoc))

            retrying(operation, "claiming messages")
        return claimed

    def release(self, message_id: str) -> Message | None:
        """Move a processing message back to the front of the inbox (its routing failed; it
        waits there to be tried again). None when it is not in processing."""
        released: list[Message] = []
        with self.inbox_file.locked(), self.processing_file.locked():

            def operation() -> None:
                isnap, idoc, psnap, pdoc = self._both()
                found = [m for m in pdoc.entries() if m.id == message_id]
                released[:] = found[:1]
                if not found:
                    return
                idoc.items.insert(0, found[0])
                self.inbox_file.replace(isnap, render_messages(idoc))
                pdoc.items = [i for i in pdoc.items if i is not found[0]]
                self.processing_file.replace(psnap, render_messages(pdoc))

            retrying(operation, "releasing a message")
        return released[0] if released else None

    def archive(
        self,
        message_id: str,
        outcome: str,
        task_id: str | None = None,
        summary: str | None = None,
    ) -> Message:
        """Move a processing message to ``archive/TODAY.md`` with its outcome (idempotent)."""
        day = now().date()
        with self.processing_file.locked():

            def operation() -> Message:
                psnap, pdoc = self._load(self.processing_file, PROCESSING_PREAMBLE)
                found = [m for m in pdoc.entries() if m.id == message_id]
                if not found:
                    done = self.history.find(message_id)
                    if done is None:
                        raise KeyError(f"no message {message_id} in processing")
                    return done
                fields = found[0].model_dump()
                fields.update(outcome=outcome, task_id=task_id, archived_at=now(), result=summary)
                record = Message.model_validate(fields)
                record = self.history.add(day, record)
                pdoc.items = [
                    i for i in pdoc.items if not (isinstance(i, Message) and i.id == message_id)
                ]
                self.processing_file.replace(psnap, render_messages(pdoc))
                return record

            return retrying(operation, "archiving a message")
