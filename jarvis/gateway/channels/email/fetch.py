"""The IMAP side: fetch new mail and hand it over; it decides nothing.

On every (re)connect it selects the mailbox, compares UIDVALIDITY with
``email/state.json`` and fetches ``UID last+1:*``. A changed UIDVALIDITY (or no state yet)
takes a new baseline, logged: unread messages not yet handled by Jarvis (no
``$JarvisQueued`` or ``$JarvisHandled`` keyword) are handed over, then the mark moves to the
top UID (mail already read is the user's); the channel's Message-ID ledger and the queue's
dedupe absorb any repeat. For each message the size comes first
(``RFC822.SIZE``); above the cap only the header is fetched. Bodies are fetched with
``BODY.PEEK[]``, so reading marks nothing. After the handler says what it did, the message
gets ``\\Seen`` + ``$JarvisQueued`` (a task or an answer was queued) or ``$JarvisHandled``
(anything else), then the high-water mark moves. Waiting is IDLE, renewed every
``idle_renew_s`` (the first IDLE after activity is short: a mail that lands just before
IDLE starts is not announced by every server), or a poll when the server has no IDLE.
Failures reconnect with exponential backoff and jitter, 1 s to 5 min.
"""

from __future__ import annotations

import contextlib
import logging
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError

from jarvis.gateway.channels.email.settings import EmailError, EmailSettings
from jarvis.gateway.channels.email.state import MailboxMark, MailboxState

log = logging.getLogger(__name__)

QUEUED, HANDLED = b"$JarvisQueued", b"$JarvisHandled"
SEEN = b"\\Seen"
BACKOFF_MIN_S, BACKOFF_MAX_S = 1.0, 300.0
WAKE_S = 0.25
SETTLE_IDLE_S = 2.0
"""The first IDLE after mail was handled (or after connecting) lasts at most this long."""
"""How often a wait checks whether it should stop."""
Outcome = Literal["queued", "handled"]


class HandlerFailed(Exception):
    """The handler could not take a message; it stays unflagged and is tried again."""


NETWORK_ERRORS = (OSError, IMAPClientError, socket.timeout, ssl.SSLError, EOFError, HandlerFailed)


@dataclass(frozen=True)
class Fetched:
    uid: int
    size: int
    data: bytes
    """The whole message, or only its header when ``headers_only``."""
    headers_only: bool


Handler = Callable[[Fetched], Outcome]


def backoff_delay(attempt: int, rng: random.Random | None = None) -> float:
    """Seconds before reconnect number ``attempt`` (0-based): 1, 2, 4 ... 300, +-20 %."""
    base = min(BACKOFF_MAX_S, BACKOFF_MIN_S * (2**attempt))
    jitter = (rng or random).uniform(0.8, 1.2)
    return max(BACKOFF_MIN_S, min(BACKOFF_MAX_S, base * jitter))


def connect(settings: EmailSettings) -> IMAPClient:
    """A logged-in client: implicit TLS, STARTTLS, or (tests, loopback) plaintext."""
    problem = settings.transport_problem(settings.imap_host, settings.imap_security)
    if problem:
        raise EmailError(problem)
    tls = settings.imap_security == "tls"
    client = IMAPClient(
        settings.imap_host,
        port=settings.imap_port,
        ssl=tls,
        ssl_context=settings.ssl_context() if tls else None,
        timeout=settings.timeout_s,
    )
    try:
        if settings.imap_security == "starttls":
            client.starttls(settings.ssl_context())
        kind, secret = settings.secret()
        if kind == "oauth2":
            client.oauth2_login(settings.username, secret)
        else:
            client.login(settings.username, secret)
    except BaseException:
        _close(client)
        raise
    return client


def _close(client: IMAPClient) -> None:
    try:
        client.logout()
    except Exception:  # the connection may be gone already; closing is best effort
        with contextlib.suppress(Exception):  # nothing more to do
            client.shutdown()


class Fetcher:
    """Runs in its own thread: :meth:`run` until :meth:`stop`."""

    def __init__(self, settings: EmailSettings, state: MailboxState, handler: Handler) -> None:
        self.settings = settings
        self.state = state
        self.handler = handler
        self.connected = threading.Event()
        """Set while logged in and watching (tests and the bench wait on it)."""
        self.baselines = 0
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        problem = self.settings.transport_problem(
            self.settings.imap_host, self.settings.imap_security
        )
        if problem:
            log.error("email: %s; not reading mail", problem)
            return
        attempt = 0
        while not self._stop.is_set():
            try:
                client = connect(self.settings)
            except (EmailError, *NETWORK_ERRORS) as exc:  # a token command can fail too
                delay = backoff_delay(attempt)
                attempt += 1
                log.warning("email: cannot connect (%s); again in %.1fs", exc, delay)
                self._stop.wait(delay)
                continue
            try:
                self._watch(client)
            except NETWORK_ERRORS as exc:
                if self.connected.is_set():  # it was working: the backoff starts over
                    attempt = 0
                delay = backoff_delay(attempt)
                attempt += 1
                log.warning("email: connection lost (%s); reconnecting in %.1fs", exc, delay)
                self._stop.wait(delay)
            finally:
                self.connected.clear()
                _close(client)

    # -- one connection --
    def _watch(self, client: IMAPClient) -> None:
        box = self.settings.mailbox
        selected = client.select_folder(box)
        validity = int(selected[b"UIDVALIDITY"])
        mark = self.state.get(box)
        fresh = mark is None or mark.uidvalidity != validity
        if fresh:
            self.baselines += 1
            if mark is None:
                log.info(
                    "email: first look at %s (UIDVALIDITY %d); unhandled mail is read",
                    box,
                    validity,
                )
            else:
                log.warning(
                    "email: UIDVALIDITY of %s changed (%d -> %d): new baseline; mail not yet "
                    "handled is read again, the Message-ID ledger drops repeats",
                    box,
                    mark.uidvalidity,
                    validity,
                )
            mark = MailboxMark(uidvalidity=validity, last_uid=0)
            self.state.put(box, mark)
        assert mark is not None
        can_idle = client.has_capability("IDLE")
        if fresh:
            mark = self._baseline(client, mark)
        self.connected.set()
        self._catch_up(client, mark)
        busy = True  # just connected: mail may be arriving
        while not self._stop.is_set():
            if can_idle:
                # Mail that lands between the last command and the start of IDLE is not
                # announced in IDLE by some servers (dovecot waits for its periodic check,
                # 30 s by default). After activity, when more mail is likely, the first
                # IDLE is short, so such mail waits seconds, not until that check.
                renew = self.settings.idle_renew_s
                self._idle(client, min(SETTLE_IDLE_S, renew) if busy else renew)
            else:
                self._stop.wait(self.settings.poll_interval_s)
                client.noop()
            if self._stop.is_set():
                break
            mark = self.state.get(box) or mark
            busy = self._catch_up(client, mark) > 0

    def _idle(self, client: IMAPClient, seconds: float) -> None:
        """IDLE until the server reports a change, ``seconds`` pass, or a stop."""
        client.idle()
        ends = time.monotonic() + seconds
        try:
            while not self._stop.is_set() and time.monotonic() < ends:
                responses = client.idle_check(timeout=WAKE_S)
                if any(_is_change(r) for r in responses):
                    break
        finally:
            client.idle_done()

    def _baseline(self, client: IMAPClient, mark: MailboxMark) -> MailboxMark:
        """A new baseline: hand over the unread mail not handled yet, then mark the top UID
        (mail read before Jarvis looked is the user's, not a task)."""
        top = max(client.search(["ALL"]), default=0)
        for uid in sorted(client.search(["UNSEEN"])):
            if self._stop.is_set():
                return mark
            self._one(client, uid)
            mark = MailboxMark(uidvalidity=mark.uidvalidity, last_uid=uid)
            self.state.put(self.settings.mailbox, mark)
        mark = MailboxMark(uidvalidity=mark.uidvalidity, last_uid=max(top, mark.last_uid))
        self.state.put(self.settings.mailbox, mark)
        return mark

    def _catch_up(self, client: IMAPClient, mark: MailboxMark) -> int:
        """Hand over every message above the mark, oldest first; returns how many.

        Searches again until nothing new turns up and a NOOP announces nothing: mail that
        arrived meanwhile was announced after some command's result, which the client does
        not keep, and IDLE would not mention it again."""
        done = 0
        while not self._stop.is_set():
            uids = sorted(
                u for u in client.search(["UID", f"{mark.last_uid + 1}:*"]) if u > mark.last_uid
            )
            if not uids:
                # the server announces new mail after a command's result: ask once more
                _, responses = client.noop()
                if any(_is_change(r) for r in responses):
                    continue
                break
            for uid in uids:
                if self._stop.is_set():
                    break
                done += self._one(client, uid)
                mark = MailboxMark(uidvalidity=mark.uidvalidity, last_uid=uid)
                self.state.put(self.settings.mailbox, mark)
        return done

    def _one(self, client: IMAPClient, uid: int) -> int:
        info = client.fetch([uid], ["RFC822.SIZE", "FLAGS"]).get(uid)
        if info is None:  # expunged meanwhile
            return 0
        if {QUEUED, HANDLED} & set(info.get(b"FLAGS", ())):
            return 0
        self._hand_over(client, uid, int(info[b"RFC822.SIZE"]))
        return 1

    def _hand_over(self, client: IMAPClient, uid: int, size: int) -> None:
        big = size > self.settings.max_size_bytes
        part = b"BODY[HEADER]" if big else b"BODY[]"
        request = "BODY.PEEK[HEADER]" if big else "BODY.PEEK[]"
        data = client.fetch([uid], [request]).get(uid, {}).get(part)
        if data is None:
            return
        try:
            outcome = self.handler(Fetched(uid, size, bytes(data), big))
        except Exception as exc:  # the boundary: the mail stays unflagged, tried again later
            log.exception("email: handling UID %d failed; it will be tried again", uid)
            raise HandlerFailed(str(exc)) from exc
        flags = [SEEN, QUEUED] if outcome == "queued" else [HANDLED]
        client.add_flags([uid], flags, silent=True)


def _is_change(response: Any) -> bool:
    return (
        isinstance(response, tuple)
        and len(response) >= 2
        and response[1] in (b"EXISTS", b"RECENT", b"FETCH")
    )
