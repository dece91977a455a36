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


def _offline_data(tmp_path: Path) -> Path:
    """A data dir with only the whitelist: no IMAP or SMTP settings at all."""
    data = tmp_path / "offline"
    write_whitelist(data, "none")
    (data / "config" / "settings.json").write_text(
        json.dumps({"email": {"enabled": True, "address": "jarvis@example.net"}})
    )
    return data


def test_offline_json_checks_the_mail_without_logging_in(tmp_path: Path) -> None:
    """--offline needs no server (none is configured); --json is one document. A mail whose
    receiver split its results and quoted their values is accepted."""
    data = _offline_data(tmp_path)
    eml = tmp_path / "split.eml"
    received = "from mail.example.com by mx.example.net (Postfix) with ESMTPS id 4Xy"
    eml.write_bytes(
        mail(
            [
                ("Received", received),
                ("Authentication-Results", 'mx.example.net; dkim=pass header.d="example.com"'),
                ("Authentication-Results", 'mx.example.net; dmarc=pass header.from="example.com"'),
                *headers(Authentication_Results=None),
            ]
        )
    )
    done = _jarvis(data, str(eml), "--offline", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["checks"] is None
    assert report["verdict"]["kind"] == "task" and report["verdict"]["accepted"] is True
    assert report["verdict"]["text"] == "accepted as a task"


def test_every_mail_that_starts_no_task_says_rejected(tmp_path: Path) -> None:
    """Dropped (automated), rejected (forged) and refused (too big, told): one word."""
    data = _offline_data(tmp_path)
    cases = {
        "bulk.eml": (mail(headers(Precedence="bulk")), "drop", False),
        "forged.eml": (mail(headers(Authentication_Results=None)), "reject", False),
        "big.eml": (mail(body="x" * 1_100_000), "refuse", True),
    }
    for name, (raw, kind, told) in cases.items():
        (tmp_path / name).write_bytes(raw)
        lines = _jarvis(data, str(tmp_path / name), "--offline")
        assert lines.returncode == 1
        prefix = "verdict: rejected (the sender is told): " if told else "verdict: rejected: "
        assert lines.stdout.startswith(prefix), lines.stdout
        done = _jarvis(data, str(tmp_path / name), "--offline", "--json")
        verdict = json.loads(done.stdout)["verdict"]
        assert done.returncode == 1 and verdict["kind"] == kind and verdict["reply"] is told
        assert verdict["accepted"] is False and verdict["text"] == lines.stdout[9:].strip()


def test_an_unreadable_file_with_json_is_one_json_error(tmp_path: Path) -> None:
    done = _jarvis(_offline_data(tmp_path), str(tmp_path / "nope.eml"), "--offline", "--json")
    assert done.returncode == 2 and "cannot read" in json.loads(done.stdout)["error"]
