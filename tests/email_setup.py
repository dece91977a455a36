"""Fixtures of the email tests: dovecot and aiosmtpd on loopback, settings pointing at
them (plaintext allowed for loopback only, by the explicit test flag), a whitelist."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from imapclient import IMAPClient

from jarvis.config import Settings, load_settings
from tests.email_mail import ALICE, AUTHSERV, JARVIS
from tests.email_servers import PASSWORD, USER, Dovecot, SmtpSink


@pytest.fixture
def dovecot() -> Iterator[Dovecot]:
    # not under pytest's tmp_path: that is 0700 root, and dovecot's own users must get in
    root = Path(tempfile.mkdtemp(prefix="jarvis-dovecot-"))
    root.chmod(0o755)
    server = Dovecot(root)
    server.start()
    try:
        yield server
    finally:
        server.kill()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def smtp() -> Iterator[SmtpSink]:
    sink = SmtpSink()
    sink.start()
    try:
        yield sink
    finally:
        sink.stop()


def write_whitelist(data_dir: Path, factor: str = "confirm") -> None:
    path = data_dir / "config" / "whitelist.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    senders = [{"address": ALICE, "second_factor": factor}]
    path.write_text(json.dumps({"senders": senders, "authserv_id": AUTHSERV}))


def email_values(dovecot: Dovecot, smtp: SmtpSink, **extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "enabled": True,
        "address": JARVIS,
        "imap_host": "127.0.0.1",
        "imap_port": dovecot.port,
        "imap_security": "plain",
        "username": USER,
        "smtp_host": "127.0.0.1",
        "smtp_port": smtp.port,
        "smtp_security": "plain",
        "smtp_username": "",
        "allow_plaintext_loopback": True,
        "timeout_s": 10.0,
    }
    values.update(extra)
    return values


def channel_settings(
    tmp_path: Path,
    dovecot: Dovecot,
    smtp: SmtpSink,
    monkeypatch: pytest.MonkeyPatch,
    factor: str = "confirm",
    **extra: Any,
) -> Settings:
    monkeypatch.setenv("JARVIS_EMAIL_PASSWORD", PASSWORD)
    data = tmp_path / "data"
    write_whitelist(data, factor)
    return load_settings(data, email=email_values(dovecot, smtp, **extra), long_term_memory=False)


def flags_by_message_id(dovecot: Dovecot) -> dict[str, set[bytes]]:
    """What the server holds: each mail's Message-ID and its flags."""
    with IMAPClient("127.0.0.1", port=dovecot.port, ssl=False) as client:
        client.login(USER, PASSWORD)
        client.select_folder("INBOX", readonly=True)
        uids = client.search(["ALL"])
        out: dict[str, set[bytes]] = {}
        for info in client.fetch(uids, ["FLAGS", "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]).values():
            header = info[b"BODY[HEADER.FIELDS (MESSAGE-ID)]"].decode().split(":", 1)[-1].strip()
            out[header] = set(info[b"FLAGS"])
        return out
