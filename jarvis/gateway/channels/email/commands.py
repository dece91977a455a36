"""``jarvis email test FILE.eml``: check the IMAP and SMTP settings and say what a mail
would get, without sending or marking anything.

IMAP: log in, select the mailbox read-only, report UIDVALIDITY and IDLE. SMTP: connect
with the configured TLS, log in, quit (no MAIL command). Then the verdict for the file,
decided as the channel would (whitelist, ledger, settings) but with nothing written.
``--offline`` skips both (no login, no network): only the verdict. ``--json`` prints one
JSON document instead of lines. Exit codes: 0 the checks pass and the mail would be
accepted, 1 otherwise, 2 usage (the file cannot be read).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.config import Settings

if TYPE_CHECKING:
    from jarvis.gateway.channels.email.decide import Decision

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
ACCEPTED = ("task", "confirm", "answer")


def register(subparsers: Any) -> None:
    email = subparsers.add_parser(
        "email",
        help="the email channel: check settings and see what a mail would get",
        description="Tools for the email channel (DESIGN.md section 6).",
    )
    sub = email.add_subparsers(dest="email_command", metavar="ACTION", required=True)
    test = sub.add_parser(
        "test",
        help="check IMAP and SMTP settings and print the verdict for FILE.eml (sends nothing)",
    )
    test.add_argument("file", type=Path, help="a mail in RFC 5322 form (.eml)")
    test.add_argument(
        "--offline",
        action="store_true",
        help="check the mail only: no IMAP or SMTP login, no network",
    )
    test.add_argument("--json", action="store_true", help="print one JSON document")
    test.set_defaults(handler=cmd_test)


def cmd_test(args: argparse.Namespace, settings: Settings) -> int:
    try:
        raw = args.file.read_bytes()
    except OSError as exc:
        error = f"cannot read {args.file}: {exc.strerror or exc}"
        print(json.dumps({"error": error}) if args.json else f"jarvis email test: {error}")
        return EXIT_USAGE
    checks: dict[str, dict[str, Any]] = {}
    if not args.offline:
        for name, problem in (("IMAP", imap_check(settings)), ("SMTP", smtp_check(settings))):
            checks[name.lower()] = {
                "ok": not problem.startswith("!"),
                "detail": problem.lstrip("!"),
            }
            if not args.json:
                mark = "PASS" if checks[name.lower()]["ok"] else "FAIL"
                print(f"{mark}  {name}  {problem.lstrip('!')}")
    decision = verdict_for(raw, settings)
    accepted = decision.kind in ACCEPTED
    ok = accepted and all(c["ok"] for c in checks.values())
    if args.json:
        verdict = {
            "accepted": accepted,
            "kind": decision.kind,
            "reason": decision.reason,
            "reply": decision.reply,
            "text": decision.describe(),
        }
        print(json.dumps({"ok": ok, "checks": checks or None, "verdict": verdict}, indent=2))
    else:
        print(f"verdict: {decision.describe()}")
    return EXIT_OK if ok else EXIT_FAILED


def verdict_for(raw: bytes, settings: Settings) -> Decision:
    from jarvis.gateway.channels.email.decide import Decision, decide
    from jarvis.gateway.channels.email.settings import EmailError, load_whitelist
    from jarvis.gateway.channels.email.state import Ledger

    try:
        whitelist = load_whitelist(settings.data_dir)
    except EmailError as exc:
        return Decision("reject", str(exc))
    ledger = Ledger(Path(settings.data_dir) / "email" / "ledger.json")
    return decide(
        raw, whitelist, ledger.data, settings.email, time.time(), secrets_env=dict(os.environ)
    )


def imap_check(settings: Settings) -> str:
    """A line about the IMAP account; starting with ``!`` when it fails."""
    from jarvis.gateway.channels.email.fetch import NETWORK_ERRORS, connect
    from jarvis.gateway.channels.email.settings import EmailError

    email = settings.email
    problems = email.problems()
    if problems:
        return "!" + "; ".join(problems)
    try:
        client = connect(email)
    except (EmailError, *NETWORK_ERRORS) as exc:
        return f"!{email.imap_host}:{email.imap_port}: {exc}"
    try:
        selected = client.select_folder(email.mailbox, readonly=True)
        idle = "IDLE" if client.has_capability("IDLE") else "no IDLE (polling)"
        validity = int(selected[b"UIDVALIDITY"])
    except NETWORK_ERRORS as exc:
        return f"!{email.mailbox}: {exc}"
    finally:
        with contextlib.suppress(*NETWORK_ERRORS):
            client.logout()
    return (
        f"{email.imap_host}:{email.imap_port} ({email.imap_security}) logged in as "
        f"{email.username}; {email.mailbox} UIDVALIDITY {validity}, {idle}"
    )


def smtp_check(settings: Settings) -> str:
    """Connect, TLS, log in, quit: nothing is sent."""
    import aiosmtplib

    from jarvis.gateway.channels.email.settings import EmailError

    email = settings.email
    problem = email.transport_problem(email.smtp_host, email.smtp_security)
    if not email.smtp_host or problem:
        return "!" + (problem or "email.smtp_host is not set")

    async def check() -> str:
        kind, secret = email.secret()
        user = email.username if email.smtp_username is None else email.smtp_username
        client = aiosmtplib.SMTP(
            hostname=email.smtp_host,
            port=email.smtp_port,
            use_tls=email.smtp_security == "tls",
            start_tls=email.smtp_security == "starttls",
            tls_context=email.ssl_context() if email.smtp_security != "plain" else None,
            timeout=email.timeout_s,
        )
        async with client:
            if user:
                if kind == "oauth2":
                    await client.auth_xoauth2(user, secret)
                else:
                    await client.login(user, secret)
        login = f"logged in as {user}" if user else "no login configured"
        return f"{email.smtp_host}:{email.smtp_port} ({email.smtp_security}) {login}; nothing sent"

    try:
        return asyncio.run(check())
    except (EmailError, aiosmtplib.SMTPException, OSError) as exc:
        return f"!{email.smtp_host}:{email.smtp_port}: {exc}"
