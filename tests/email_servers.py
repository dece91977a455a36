"""Real mail servers for the email tests: Debian's dovecot (IMAP) from a temporary config
on a free loopback port, with a passwd-file and a Maildir in a temp dir, and aiosmtpd on
loopback collecting what Jarvis sends. Mail is delivered by writing into the Maildir (as
an MTA's local delivery does), so IDLE sees it."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
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
service anvil {{
  chroot =
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps_port}
  }}
}}
"""
PLAIN = "ssl = no\ndisable_plaintext_auth = no\n"
TLS = "ssl = required\nssl_cert = <{cert}\nssl_key = <{key}\n"


class Dovecot:
    """One dovecot in the foreground as a child process; :meth:`deliver` drops mail in.
    With ``tls=(cert, key)`` it speaks implicit TLS only (IMAPS) on its port."""

    def __init__(self, root: Path, tls: tuple[Path, Path] | None = None) -> None:
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
        ports = (0, self.port) if tls else (self.port, 0)  # TLS: implicit (IMAPS) only
        config = CONFIG.format(root=root, uid=NOBODY, imap_port=ports[0], imaps_port=ports[1])
        config += TLS.format(cert=tls[0], key=tls[1]) if tls else PLAIN
        (root / "dovecot.conf").write_text(config)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [DOVECOT, "-c", str(self.root / "dovecot.conf"), "-F"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: dovecot and its children
        )
        wait_port(self.port)

    def kill(self) -> None:
        """End dovecot and every process it started at once (a test's teardown; a clean
        shutdown waits about a second for its children)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.proc = None

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

    def deliver(self, raw: bytes, *, seen: bool = False) -> Path:
        """A Maildir delivery: write in tmp/, rename into new/ (or into cur/ as read)."""
        name = f"{time.time():.6f}.{secrets.token_hex(6)}.test"
        tmp = self.maildir / "tmp" / name
        tmp.write_bytes(raw)
        os.chown(tmp, NOBODY, NOBODY)
        target = self.maildir / "cur" / f"{name}:2,S" if seen else self.maildir / "new" / name
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
    """aiosmtpd on a free loopback port; collects every message it is given. With a TLS
    context it requires STARTTLS before any mail."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.messages: list[EmailMessage] = []
        self.recipients: list[list[str]] = []
        self.changed = threading.Condition()
        self.port = free_port()
        extra: dict[str, Any] = {}
        if tls is not None:
            extra = {"tls_context": tls, "require_starttls": True}
        self.controller = Controller(_Collect(self), hostname="127.0.0.1", port=self.port, **extra)

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


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, made now; (cert.pem, key.pem)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jarvis test mail")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path
