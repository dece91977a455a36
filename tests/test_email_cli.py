"""`jarvis email test FILE.eml` against the real servers: both checks pass, the verdict is
printed, nothing is sent or marked, and no secret reaches the output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.email_mail import headers, mail
from tests.email_servers import PASSWORD, Dovecot, SmtpSink
from tests.email_setup import dovecot, email_values, flags_by_message_id, smtp, write_whitelist

__all__ = ["dovecot", "smtp"]


def _jarvis(data: Path, *args: str, password: str = PASSWORD) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, JARVIS_EMAIL_PASSWORD=password)
    return subprocess.run(
        [sys.executable, "-m", "jarvis", "email", "test", *args, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.fixture
def data(tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink) -> Path:
    data = tmp_path / "data"
    write_whitelist(data, "confirm")
    (data / "config" / "settings.json").write_text(
        json.dumps({"email": email_values(dovecot, smtp)})
    )
    return data


def test_checks_pass_and_an_authenticated_mail_would_be_confirmed_first(
    tmp_path: Path, data: Path, dovecot: Dovecot, smtp: SmtpSink
) -> None:
    eml = tmp_path / "good.eml"
    eml.write_bytes(mail())
    dovecot.deliver(mail(headers(Message_ID="<already@example.com>")))
    done = _jarvis(data, str(eml))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PASS  IMAP  127.0.0.1:") and "UIDVALIDITY" in lines[0]
    assert "IDLE" in lines[0]
    assert lines[1].startswith("PASS  SMTP  127.0.0.1:") and "nothing sent" in lines[1]
    assert lines[2] == "verdict: authenticated; a confirmation code would be sent first"
    assert PASSWORD not in done.stdout + done.stderr
    assert smtp.messages == []
    assert not flags_by_message_id(dovecot)["<already@example.com>"] - {b"\\Recent"}
    assert not (data / "email" / "ledger.json").exists()


def test_a_forged_mail_is_rejected_and_a_wrong_password_fails_the_imap_check(
    tmp_path: Path, data: Path
) -> None:
    eml = tmp_path / "forged.eml"
    eml.write_bytes(mail(headers(Authentication_Results=None)))
    done = _jarvis(data, str(eml), password="wrong-password-123")
    assert done.returncode == 1
    assert done.stdout.splitlines()[0].startswith("FAIL  IMAP")
    assert "verdict: rejected: no Authentication-Results from mx.example.net" in done.stdout
    assert "wrong-password-123" not in done.stdout + done.stderr


def test_an_unreadable_file_is_a_usage_error(tmp_path: Path, data: Path) -> None:
    done = _jarvis(data, str(tmp_path / "missing.eml"), "--offline")
    assert done.returncode == 2 and "cannot read" in done.stdout
