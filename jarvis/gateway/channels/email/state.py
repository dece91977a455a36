"""What the channel remembers on disk, each file written atomically.

``email/state.json``: per mailbox ``{"uidvalidity": N, "last_uid": N}``, the IMAP
high-water mark. ``email/ledger.json``: the Message-IDs Jarvis sent (loops, threads),
pending confirmations (the code's hash only), used TOTP time steps, each sender's recent
tasks (the hourly limit), threads of queued mail (for the reply) and questions asked by
mail (an answer goes back into that task). Old entries are pruned on every write.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from jarvis.fsutil import atomic_write_text

log = logging.getLogger(__name__)

KEEP_S = 30 * 24 * 3600.0


class MailboxMark(BaseModel):
    uidvalidity: int
    last_uid: int = 0


class MailboxState:
    """``email/state.json``: ``{mailbox: {uidvalidity, last_uid}}``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, MailboxMark]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return {k: MailboxMark.model_validate(v) for k, v in data.items()}
        except FileNotFoundError:
            return {}
        except (ValueError, AttributeError) as exc:
            log.warning("%s unreadable (%s); starting from the mailbox as it is", self.path, exc)
            return {}

    def get(self, mailbox: str) -> MailboxMark | None:
        return self.read().get(mailbox)

    def put(self, mailbox: str, mark: MailboxMark) -> None:
        data = {k: v.model_dump() for k, v in self.read().items()}
        data[mailbox] = mark.model_dump()
        atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n")


class Thread(BaseModel):
    """A mail Jarvis took in: who to answer, on which thread."""

    address: str
    message_id: str
    subject: str = ""
    references: list[str] = Field(default_factory=list)
    at: float = Field(default_factory=time.time)


class Confirmation(BaseModel):
    """A task waiting for the sender's code."""

    code_hash: str
    address: str
    thread: Thread
    text: str
    sent_id: str
    expires: float
    used: bool = False


class LedgerData(BaseModel):
    sent: dict[str, float] = Field(default_factory=dict)
    confirmations: list[Confirmation] = Field(default_factory=list)
    totp_used: dict[str, int] = Field(default_factory=dict)
    tasks: dict[str, list[float]] = Field(default_factory=dict)
    threads: dict[str, Thread] = Field(default_factory=dict)
    """queue message id -> the mail it came from."""
    questions: dict[str, str] = Field(default_factory=dict)
    """Message-ID of a question Jarvis sent -> the task id that asked."""
    handled: dict[str, float] = Field(default_factory=dict)
    """Message-IDs of mail already decided (a replay after a crash is not decided again)."""
    queued: dict[str, float] = Field(default_factory=dict)
    """Those of them that queued a task or an answer (flagged ``$JarvisQueued``)."""


class Ledger:
    """``email/ledger.json``, read and written whole (one daemon per data dir)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = self._read()

    def _read(self) -> LedgerData:
        try:
            return LedgerData.model_validate_json(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return LedgerData()
        except ValueError as exc:
            # fail closed: a lost ledger forgets codes (they cannot be used) and sent ids
            log.error("%s unreadable (%s); starting a new one", self.path, exc)
            return LedgerData()

    def save(self) -> None:
        self._prune(time.time())
        atomic_write_text(self.path, self.data.model_dump_json(indent=1) + "\n")

    def _prune(self, now: float) -> None:
        d = self.data
        d.sent = {k: v for k, v in d.sent.items() if now - v < KEEP_S}
        d.handled = {k: v for k, v in d.handled.items() if now - v < KEEP_S}
        d.queued = {k: v for k, v in d.queued.items() if now - v < KEEP_S}
        d.confirmations = [c for c in d.confirmations if now - c.expires < KEEP_S]
        d.tasks = {a: [t for t in ts if now - t < 3600] for a, ts in d.tasks.items()}
        d.tasks = {a: ts for a, ts in d.tasks.items() if ts}
        d.threads = {k: v for k, v in d.threads.items() if now - v.at < KEEP_S}

    def to_json(self) -> dict[str, Any]:
        return self.data.model_dump()
