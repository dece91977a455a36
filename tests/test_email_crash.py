"""kill -9 between enqueue and flag, then a restart: one task, and the mail ends flagged.

The channel runs in a child process that hangs at the chosen point (after the task is made:
before the queue write; after the queue write: before the ledger; or before the IMAP flag);
the parent kills it with SIGKILL there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jarvis.gateway.channels.email.channel import queue_id
from jarvis.gateway.channels.email.fetch import QUEUED, SEEN
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from tests.email_mail import headers, mail, new_id
from tests.email_servers import PASSWORD, Dovecot, SmtpSink
from tests.email_setup import dovecot, email_values, flags_by_message_id, smtp, write_whitelist
from tests.test_serve import wait_until

__all__ = ["dovecot", "smtp"]
ROOT = Path(__file__).resolve().parent.parent


def _child(data: Path, pause: str | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ, JARVIS_EMAIL_PASSWORD=PASSWORD)
    env.pop("JARVIS_TEST_PAUSE", None)
    if pause:
        env["JARVIS_TEST_PAUSE"] = pause
    return subprocess.Popen(
        [sys.executable, "-m", "tests.email_child", str(data)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("point", ["task", "ledger", "flag"])
def test_kill_9_between_enqueue_and_flag_gives_one_task(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, point: str
) -> None:
    data = tmp_path / "data"
    write_whitelist(data, "none")
    (data / "config" / "settings.json").write_text(
        json.dumps({"email": email_values(dovecot, smtp), "long_term_memory": False})
    )
    mid = new_id()
    dovecot.deliver(mail(headers(Message_ID=mid)))
    marker = tmp_path / "paused"
    child = _child(data, f"{point}:{marker}")
    try:
        wait_until(marker.exists, timeout=30)
        queued = [m.id for m in MessageQueue(data).pending()]
        assert queued == ([] if point == "task" else [queue_id(mid)])
        assert [t.message_ids for t in TodoList(data).all()] == [[queue_id(mid)]]
        assert QUEUED not in flags_by_message_id(dovecot)[mid]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    again = _child(data, None)
    try:
        wait_until(lambda: QUEUED in flags_by_message_id(dovecot)[mid], timeout=30)
    finally:
        again.terminate()
        again.wait(10)
    assert [m.id for m in MessageQueue(data).pending()] == [queue_id(mid)]
    [task] = TodoList(data).all()
    assert (task.message_ids, task.source) == ([queue_id(mid)], "email")
    assert {SEEN, QUEUED} <= flags_by_message_id(dovecot)[mid]
    assert smtp.messages == []
