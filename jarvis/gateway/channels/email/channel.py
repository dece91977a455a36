"""The email channel: the fetcher hands over mail, :func:`decide` says what it is, this
module does it (reply, enqueue, record) and answers finished tasks on their thread.

Enqueue, then mark: a task's message goes into the inbox with an id derived from the
mail's Message-ID (the queue's own atomic write, idempotent per id), then the ledger, then
the fetcher flags the mail. A crash anywhere in between replays the mail and the id dedupe
absorbs it: one task, never two. Each accepted mail is a task of its own, made before its
message is queued (the router finds it routed and never merges mail into another channel's
task); tasks carry channel ``email``, so they run under that channel's tool policy, and the
mail's text is framed as the task's data. An answer to a question goes into the task that
asked.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from jarvis import prompts
from jarvis.config import Settings
from jarvis.events import AgentWarning, EventBus, ReplyReady
from jarvis.gateway.channels.email.authenticate import DnsFunc
from jarvis.gateway.channels.email.decide import Decision, decide
from jarvis.gateway.channels.email.fetch import Fetched, Fetcher, Outcome, backoff_delay
from jarvis.gateway.channels.email.filter import header_value, message_id
from jarvis.gateway.channels.email.parse import Attachment, quarantine
from jarvis.gateway.channels.email.reply import compose, send
from jarvis.gateway.channels.email.second_factor import hash_code, new_code
from jarvis.gateway.channels.email.settings import EmailError, load_whitelist
from jarvis.gateway.channels.email.state import Confirmation, Ledger, MailboxState, Thread
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.router import derive_title
from jarvis.gateway.todos import TodoList, TodoState

if TYPE_CHECKING:
    from jarvis.gateway.channels.base import ChannelHost

log = logging.getLogger(__name__)

CHANNEL = "email"
SEND_ATTEMPTS = 3
OPEN, CLOSE = "<<<EMAIL", "EMAIL>>>"
STATUS_WORDS = {
    "completed": "Done",
    "failed": "The task failed",
    "cancelled": "The task was cancelled",
    "needs_user": "Jarvis needs your answer",
}


def queue_id(mail_id: str) -> str:
    """The queue message id of a mail: the same mail always gets the same id."""
    return "e-" + hashlib.sha256(mail_id.encode()).hexdigest()[:20]


def frame(address: str, subject: str, body: str, attachments: list[Attachment]) -> str:
    """The mail as the task's data, clearly delimited (markers inside it are defused)."""
    body = body.replace(OPEN, "<<< EMAIL").replace(CLOSE, "EMAIL >>>")
    subject = subject.replace(OPEN, "").replace(CLOSE, "")
    lines = [
        prompts.render_text("email_task", address=address, subject=subject),
        OPEN,
        body,
        CLOSE,
    ]
    if attachments:
        lines.append("Attachments (quarantined, not opened; open one only if the user asks):")
        lines += [f"- {a.describe()}" for a in attachments]
    return "\n".join(lines)


class EmailChannel:
    """Owns the fetcher thread and the reply subscription for one data dir."""

    name = CHANNEL

    def __init__(
        self,
        settings: Settings,
        queue: MessageQueue,
        todos: TodoList,
        bus: EventBus,
        *,
        on_queued: Callable[[], None] | None = None,
        dnsfunc: DnsFunc | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.email = settings.email
        self.queue = queue
        self.todos = todos
        self.bus = bus
        self.on_queued = on_queued
        self.dnsfunc = dnsfunc
        self.env = env if env is not None else os.environ
        root = Path(settings.data_dir) / "email"
        self.quarantine_dir = root / "quarantine"
        self.ledger = Ledger(root / "ledger.json")
        self.fetcher = Fetcher(self.email, MailboxState(root / "state.json"), self.handle)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sends: set[asyncio.Task[None]] = set()

    # -- lifecycle --
    async def start(self, host: ChannelHost | None = None) -> None:
        """Start fetching; with unusable settings say why (a warning event) and stay off.
        Replies come through :meth:`deliver` (the gateway's channel registry)."""
        problems = self.email.problems()
        if problems:
            message = "email channel off: " + "; ".join(problems)
            log.error("%s", message)
            self.bus.emit(AgentWarning(message=message))
            return
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self.fetcher.run, name="email-fetch", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        self.fetcher.stop()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, self.email.timeout_s)
        if self._sends:
            await asyncio.wait(set(self._sends), timeout=self.email.timeout_s)

    # -- incoming (called in the fetcher's thread) --
    def handle(self, fetched: Fetched) -> Outcome:
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self.process(fetched), self._loop)
        return future.result()

    async def process(self, fetched: Fetched) -> Outcome:
        """Decide about one mail and do it; returns how the mail is to be flagged."""
        whitelist = await asyncio.to_thread(load_whitelist, self.settings.data_dir)
        decision = await asyncio.to_thread(  # parsing, HTML and DKIM's DNS: off the loop
            decide,
            fetched.data,
            whitelist,
            self.ledger.data.model_copy(deep=True),
            self.email,
            time.time(),
            secrets_env=dict(self.env),
            dnsfunc=self.dnsfunc,
            headers_only=fetched.headers_only,
            size=fetched.size,
        )
        mail_id = _mail_id(decision)
        if mail_id and mail_id in self.ledger.data.handled and decision.kind != "drop":
            log.info("email %s was handled before (a replay); not again", mail_id)
            return "queued" if mail_id in self.ledger.data.queued else "handled"
        log.info("email UID %d from %s: %s", fetched.uid, _who(decision), decision.describe())
        if decision.kind in ("drop", "reject"):
            if decision.kind == "reject":
                self.bus.emit(AgentWarning(message=f"email rejected: {decision.reason}"))
            return await self._done(mail_id)
        if decision.kind == "refuse":
            await self._send(decision.thread, f"Jarvis did not take this task: {decision.reason}.")
            return await self._done(mail_id)
        if decision.kind == "confirm":
            await self._ask_confirmation(decision)
            return await self._done(mail_id)
        if decision.kind == "answer":
            return await self._answer(decision, mail_id)
        return await self._enqueue(decision, mail_id)

    async def _done(self, mail_id: str | None, queued: bool = False) -> Outcome:
        if mail_id:
            self.ledger.data.handled[mail_id] = time.time()
            if queued:
                self.ledger.data.queued[mail_id] = time.time()
        await asyncio.to_thread(self.ledger.save)
        return "queued" if queued else "handled"

    def _task_text(self, decision: Decision) -> str:
        assert decision.thread is not None and decision.msg is not None
        files = quarantine(decision.msg, self.quarantine_dir, decision.thread.message_id)
        return frame(decision.thread.address, decision.thread.subject, decision.text, files)

    async def _ask_confirmation(self, decision: Decision) -> None:
        assert decision.thread is not None and decision.identity is not None
        text = await asyncio.to_thread(self._task_text, decision)
        code = new_code()
        ttl_min = round(self.email.confirm_ttl_s / 60)
        body = (
            f"Jarvis understood this task:\n\n{decision.text}\n\n"
            f"To run it, reply to this mail within {ttl_min} minutes, keeping the code "
            f"{code} in the subject or writing it in your answer. Without the code nothing "
            "happens; the code works once."
        )
        msg = compose(self.email.address, decision.thread, body, tag=f"[confirm {code}]")
        confirmation = Confirmation(
            code_hash=hash_code(code),
            address=decision.identity.address,
            thread=decision.thread,
            text=text,
            sent_id=str(msg["Message-ID"]),
            expires=time.time() + self.email.confirm_ttl_s,
        )
        self.ledger.data.confirmations.append(confirmation)
        self.ledger.data.sent[confirmation.sent_id] = time.time()
        await asyncio.to_thread(self.ledger.save)
        try:
            await send(self.email, msg)
        except BaseException:  # not sent: the code must not count as pending
            self.ledger.data.confirmations.remove(confirmation)
            await asyncio.to_thread(self.ledger.save)
            raise

    async def _enqueue(self, decision: Decision, mail_id: str | None) -> Outcome:
        assert decision.thread is not None and decision.identity is not None
        thread = decision.thread
        if decision.confirmation is not None:
            text = decision.confirmation.text
        else:
            text = await asyncio.to_thread(self._task_text, decision)
        qid = queue_id(thread.message_id)
        await asyncio.to_thread(self._own_task, qid, thread, text)
        await asyncio.to_thread(
            self.queue.append,
            text,
            sender=thread.address,
            channel=CHANNEL,
            reply_to=thread.address,
            source=f"email {thread.message_id}",
            message_id=qid,
        )
        data = self.ledger.data
        data.threads[qid] = thread
        data.tasks.setdefault(thread.address, []).append(time.time())
        if decision.confirmation is not None:
            for c in data.confirmations:
                if c.code_hash == decision.confirmation.code_hash:
                    c.used = True
        if decision.totp_step is not None:
            data.totp_used[thread.address] = decision.totp_step
        log.info("email %s queued as message %s", thread.message_id, qid)
        outcome = await self._done(mail_id, queued=True)
        if self.on_queued is not None:
            self.on_queued()
        return outcome

    async def _answer(self, decision: Decision, mail_id: str | None) -> Outcome:
        assert decision.thread is not None and decision.task_id is not None
        thread = decision.thread
        qid = queue_id(thread.message_id)
        text = await asyncio.to_thread(self._task_text, decision)
        try:
            await asyncio.to_thread(self._merge_answer, decision.task_id, text, qid)
        except (KeyError, TodoState) as exc:
            await self._send(thread, f"Jarvis could not pass on this answer: {exc}.")
            return await self._done(mail_id)
        await asyncio.to_thread(
            self.queue.append,
            text,
            sender=thread.address,
            channel=CHANNEL,
            reply_to=thread.address,
            source=f"email {thread.message_id}",
            message_id=qid,
        )
        self.ledger.data.threads[qid] = thread
        log.info("email %s is the answer to task %s", thread.message_id, decision.task_id)
        outcome = await self._done(mail_id, queued=True)
        if self.on_queued is not None:
            self.on_queued()
        return outcome

    def _own_task(self, qid: str, thread: Thread, text: str) -> None:
        """An email task is always a task of its own, made here before its message is
        queued (the router then finds it routed): the model never merges mail into a task
        of another channel, where it would run under that channel's tool policy. Repeated
        after a crash, it finds the task already made."""
        if self.todos.find_by_message(qid) is not None:
            return
        title = derive_title(thread.subject or text)
        self.todos.add(
            f"Email: {title}",
            description=text,
            source=CHANNEL,
            message_ids=[qid],
            reply_to=thread.address,
        )

    def _merge_answer(self, task_id: str, text: str, qid: str) -> None:
        """The answer goes into the task that asked (before the queue sees the message,
        so the router finds it already routed); repeated after a crash, it is a no-op."""
        todo = self.todos.get(task_id)
        if todo is None:
            raise KeyError(f"task {task_id} is gone")
        if qid in todo.message_ids:
            return
        self.todos.append_update(task_id, text, qid)

    # -- outgoing --
    async def _send(
        self, thread: Thread | None, body: str, question_of: str | None = None
    ) -> str | None:
        """Reply on ``thread``; its Message-ID is recorded first (ours: a loop if it comes
        back; with ``question_of``, a reply to it is the answer for that task)."""
        if thread is None:
            return None
        msg = compose(self.email.address, thread, body)
        sent_id = str(msg["Message-ID"])
        self.ledger.data.sent[sent_id] = time.time()
        if question_of:
            self.ledger.data.questions[sent_id] = question_of
        await asyncio.to_thread(self.ledger.save)
        for attempt in range(SEND_ATTEMPTS):
            try:
                await send(self.email, msg)
                return sent_id
            except EmailError:
                if attempt + 1 == SEND_ATTEMPTS:
                    raise
                log.warning("email: sending to %s failed; trying again", thread.address)
                await asyncio.sleep(backoff_delay(attempt))
        return sent_id

    async def deliver(self, reply: ReplyReady) -> None:
        """Answer on the mail threads of the task's messages (nothing when the channel is
        off: its settings were unusable at start, which it said then)."""
        if self._loop is None:
            log.warning("email channel off: the reply of task %s is not sent", reply.task_id)
            return
        task = self._loop.create_task(self._reply(reply))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)
        await asyncio.shield(task)

    async def _reply(self, event: ReplyReady) -> None:
        threads: dict[str, Thread] = {}
        for mid in event.message_ids:
            thread = self.ledger.data.threads.get(mid)
            if thread is not None:
                threads.setdefault(thread.message_id, thread)
        word = STATUS_WORDS.get(event.status, event.status)
        body = f"{word} (task {event.task_id}): {event.text}".strip()
        if event.status == "needs_user":
            body += "\n\nReply to this mail to answer; the task goes on with your answer."
        asking = event.task_id if event.status == "needs_user" else None
        for thread in threads.values():
            try:
                await self._send(thread, body, question_of=asking)
            except Exception:  # the boundary: a reply that cannot be sent is logged
                log.exception("email: the reply for task %s could not be sent", event.task_id)


def _mail_id(decision: Decision) -> str | None:
    return None if decision.msg is None else message_id(decision.msg)


def _who(decision: Decision) -> str:
    if decision.identity is not None:
        return decision.identity.address
    if decision.msg is not None:
        return repr(header_value(decision.msg, "from") or "?")[:80]
    return "?"
