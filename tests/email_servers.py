"""Real mail servers for the email tests: Debian's dovecot (IMAP) from a temporary config
on a free loopback port, with a passwd-file and a Maildir in a temp dir, and aiosmtpd on
loopback collecting what Jarvis sends. Mail is delivered by writing into the Maildir (as
an MTA's local delivery does), so IDLE sees it."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import threading
import time
from email import message_from_bytes
from email import policy as email_policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any, cast

from aiosmtpd.controller import Controller

DOVECOT = "/usr/sbin/dovecot"
USER, PASSWORD = "jarvis", "imap-test-password"
NOBODY = 65534


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listens on 127.0.0.1:{port}") from None
            time.sleep(0.02)


CONFIG = """\
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = dovecot
default_internal_group = dovecot
default_login_user = dovenull
mail_location = maildir:~/Maildir
passdb {{
  driver = passwd-file
  args = {root}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={uid} home={root}/home/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
"""


class Dovecot:
    """One dovecot in the foreground as a child process; :meth:`deliver` drops mail in."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.maildir = root / "home" / USER / "Maildir"
        self.proc: subprocess.Popen[bytes] | None = None
        for sub in ("run", "state"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        for sub in ("new", "cur", "tmp"):
            (self.maildir / sub).mkdir(parents=True, exist_ok=True)
        for path in (root / "home", root / "home" / USER, self.maildir, *self.maildir.iterdir()):
            os.chown(path, NOBODY, NOBODY)
        (root / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::::\n")
        (root / "dovecot.conf").write_text(CONFIG.format(root=root, port=self.port, uid=NOBODY))

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [DOVECOT, "-c", str(self.root / "dovecot.conf"), "-F"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.proc = None
        deadline = time.monotonic() + 10
        while _listening(self.port) and time.monotonic() < deadline:
            time.sleep(0.02)

    def restart(self) -> None:
        self.stop()
        self.start()

    def new_uidvalidity(self) -> None:
        """Recreate the mailbox's UID list and indexes (as a restore or a migration does):
        the server gives the mailbox a new UIDVALIDITY. Call while stopped."""
        for path in self.maildir.iterdir():
            if path.name.startswith("dovecot") and path.name != "dovecot-keywords":
                path.unlink()

    def deliver(self, raw: bytes) -> Path:
        """A Maildir delivery: write in tmp/, rename into new/."""
        name = f"{time.time():.6f}.{secrets.token_hex(6)}.test"
        tmp = self.maildir / "tmp" / name
        tmp.write_bytes(raw)
        os.chown(tmp, NOBODY, NOBODY)
        target = self.maildir / "new" / name
        os.rename(tmp, target)
        return target

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def bytes_sent_to_clients(self) -> list[int]:
        """``out=`` of every finished IMAP session in the log (bytes dovecot sent)."""
        return [
            int(n)
            for n in re.findall(r"imap\(.*?(?:Logged out|Disconnected).*? out=(\d+)", self.log())
        ]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class _Collect:
    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        msg = cast(EmailMessage, message_from_bytes(envelope.content, policy=email_policy.default))
        with self.sink.changed:
            self.sink.messages.append(msg)
            self.sink.recipients.append(list(envelope.rcpt_tos))
            self.sink.changed.notify_all()
        return "250 OK"


class SmtpSink:
    """aiosmtpd on a free loopback port; collects every message it is given."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.recipients: list[list[str]] = []
        self.changed = threading.Condition()
        self.port = free_port()
        self.controller = Controller(_Collect(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()

    def wait_for(self, count: int, timeout: float = 20.0) -> list[EmailMessage]:
        with self.changed:
            if not self.changed.wait_for(lambda: len(self.messages) >= count, timeout):
                raise AssertionError(f"{len(self.messages)} mail(s) sent, expected {count}")
            return list(self.messages)


def dovecot_available() -> bool:
    return Path(DOVECOT).exists() and shutil.which("doveadm") is not None
