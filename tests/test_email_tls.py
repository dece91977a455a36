"""The TLS path: dovecot with implicit TLS only and aiosmtpd requiring STARTTLS, both with
a self-signed certificate made now. With the certificate trusted (``tls_ca_file``) the
channel reads mail and replies; without it, both connections are refused."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import load_settings
from jarvis.gateway.channels.email.commands import imap_check, smtp_check
from tests.email_mail import ALICE, headers, mail, new_id
from tests.email_servers import PASSWORD, Dovecot, SmtpSink, self_signed
from tests.email_setup import email_values, write_whitelist
from tests.test_email_channel import running


@pytest.fixture
def tls_servers() -> Iterator[tuple[Dovecot, SmtpSink, Path]]:
    root = Path(tempfile.mkdtemp(prefix="jarvis-dovecot-tls-"))
    root.chmod(0o755)
    cert, key = self_signed(root / "tls")
    server = Dovecot(root / "dovecot", tls=(cert, key))
    server.start()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    sink = SmtpSink(tls=context)
    sink.start()
    try:
        yield server, sink, cert
    finally:
        sink.stop()
        server.kill()
        shutil.rmtree(root, ignore_errors=True)


async def test_mail_is_read_over_tls_and_the_reply_goes_out_over_starttls(
    tmp_path: Path,
    tls_servers: tuple[Dovecot, SmtpSink, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dovecot, smtp, cert = tls_servers
    monkeypatch.setenv("JARVIS_EMAIL_PASSWORD", PASSWORD)
    data = tmp_path / "data"
    write_whitelist(data, "confirm")
    tls = email_values(
        dovecot,
        smtp,
        imap_security="tls",
        smtp_security="starttls",
        allow_plaintext_loopback=False,
    )
    untrusted = load_settings(data, email=tls, long_term_memory=False)
    assert imap_check(untrusted).startswith("!") and "CERTIFICATE_VERIFY_FAILED" in imap_check(
        untrusted
    )
    assert (await asyncio.to_thread(smtp_check, untrusted)).startswith("!")
    settings = load_settings(data, email=tls | {"tls_ca_file": str(cert)}, long_term_memory=False)
    assert not imap_check(settings).startswith("!")
    line = await asyncio.to_thread(smtp_check, settings)
    assert not line.startswith("!") and "(starttls)" in line
    original = new_id()
    dovecot.deliver(mail(headers(Message_ID=original)))
    async with running(settings):
        [ask] = await asyncio.to_thread(smtp.wait_for, 1)
    assert (ask["To"], ask["In-Reply-To"]) == (ALICE, original)
