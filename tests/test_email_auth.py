"""The verdict on one mail, from its bytes: the attack table, each case starting no task
and getting no reply, and the cases that must pass."""

from __future__ import annotations

import random

import pyotp
import pytest

from jarvis.gateway.channels.email.authenticate import authres_reason, clean_parse
from jarvis.gateway.channels.email.decide import decide
from jarvis.gateway.channels.email.second_factor import hash_code
from jarvis.gateway.channels.email.state import Confirmation, LedgerData, Thread
from tests.email_mail import ALICE, AUTHSERV, GOOD_AR, email_settings, headers, mail, whitelist

NOW = 1_800_000_000.0
RECEIVED = (
    "from mail.example.com (mail.example.com [192.0.2.7]) by mx.example.net (Postfix) "
    "with ESMTPS id 4Xy; Mon, 23 Nov 2026 10:00:01 +0000"
)


def split(*results: str) -> bytes:
    """A mail whose receiver wrote ``results`` in one header each, directly below its own
    Received header (the sender's headers, with no Authentication-Results, follow)."""
    ars = [("Authentication-Results", f"{AUTHSERV}; {r}") for r in results]
    return mail([("Received", RECEIVED), *ars, *headers(Authentication_Results=None)])


def verdict(raw: bytes, ledger: LedgerData | None = None, factor: str = "none", **kw: object):
    return decide(raw, whitelist(factor), ledger or LedgerData(), email_settings(), NOW, **kw)  # type: ignore[arg-type]


def test_an_authenticated_allowlisted_mail_is_a_task() -> None:
    d = verdict(mail())
    assert (d.kind, d.reason) == ("task", "")
    assert d.identity is not None and d.identity.address == ALICE
    assert d.text == "Please open the quarterly report and print page 3."


def test_with_confirm_it_asks_first() -> None:
    assert verdict(mail(), factor="confirm").kind == "confirm"


ATTACKS: list[tuple[str, bytes, str]] = [
    ("from not on the list", mail(headers(From="Mallory <mallory@example.com>")), "whitelist"),
    (
        "two From headers",
        mail(headers(), prepend=[("From", "Mallory <mallory@evil.test>")]),
        "2 from headers",
    ),
    ("From with two mailboxes", mail(headers(From=f"{ALICE}, mallory@evil.test")), "2 mailboxes"),
    (
        "group in From",
        mail(headers(From=f"Friends: {ALICE};")),
        "group",
    ),
    (
        "display name shows the allowlisted address",
        mail(headers(From=f'"{ALICE}" <mallory@evil.test>')),
        "whitelist",
    ),
    (
        "encoded word shows the allowlisted address",
        mail(headers(From="=?utf-8?q?alice=40example=2Ecom?= <mallory@evil.test>")),
        "whitelist",
    ),
    (
        "unquoted address as display name",
        mail(headers(From=f"{ALICE} <mallory@evil.test>")),
        "parse",
    ),
    (
        "encoded word in the address",
        mail(headers(From="=?utf-8?q?alice@example.com?=")),
        "parse",
    ),
    ("address with a trailing domain", mail(headers(From=f"<{ALICE}>@evil.test")), "parse"),
    ("missing bracket", mail(headers(From=f"Alice <{ALICE}")), "parse"),
    ("quoted local part", mail(headers(From=f'<"{ALICE}"@evil.test>')), "plain address"),
    ("a Sender that differs", mail(headers(Sender="mallory@example.com")), "sender"),
    ("no Authentication-Results", mail(headers(Authentication_Results=None)), "no authentication"),
    (
        "only another authserv-id",
        mail(headers(Authentication_Results=GOOD_AR.replace(AUTHSERV, "mx.evil.test"))),
        "no authentication",
    ),
    (
        "a forged pass below a failing trusted one",
        mail(
            [
                *headers(
                    Authentication_Results=f"{AUTHSERV}; dkim=fail header.d=example.com; "
                    "spf=fail smtp.mailfrom=example.com; dmarc=fail header.from=example.com"
                ),
                ("Authentication-Results", GOOD_AR),
            ]
        ),
        "dmarc=pass",
    ),
    (
        "dkim=pass for the attacker's own domain",
        mail(
            headers(
                Authentication_Results=f"{AUTHSERV}; dkim=pass header.d=evil.test; "
                "dmarc=none header.from=example.com"
            )
        ),
        "aligned",
    ),
    (
        "dmarc=pass for another domain",
        mail(headers(Authentication_Results=f"{AUTHSERV}; dmarc=pass header.from=evil.test")),
        "aligned",
    ),
    (
        "SPF-only pass",
        mail(headers(Authentication_Results=f"{AUTHSERV}; spf=pass smtp.mailfrom=example.com")),
        "aligned",
    ),
    (
        "a trusted header that does not parse",
        mail(
            headers(Authentication_Results=f"{AUTHSERV}; dmarc=pass header.from=example.com !!junk")
        ),
        "does not parse",
    ),
    (
        "a trusted header without results",
        mail(headers(Authentication_Results=f"{AUTHSERV}; none")),
        "aligned",
    ),
    (
        "a forged dmarc=pass joining the receiver's run below a failing one",
        split(
            "dkim=fail header.d=example.com; dmarc=fail header.from=example.com",
            GOOD_AR.split("; ", 1)[1],
        ),
        "disagree",
    ),
    (
        "a forged dkim=pass joining a run that found no signature",
        split("dkim=none; spf=pass smtp.mailfrom=example.com", "dkim=pass header.d=example.com"),
        "disagree",
    ),
    (
        "a forged dkim=pass beside the receiver's dkim=fail of the same domain",
        split('dkim=fail header.d="example.com"', "dkim=pass header.d=example.com"),
        "disagree",
    ),
    (
        "a forged aligned dkim=pass beside the receiver's pass for the sender's own domain",
        split("dkim=pass header.d=evil.test; dmarc=none", "dkim=pass header.d=example.com"),
        "disagree",
    ),
    (
        "a forged dmarc=pass beside the receiver's pass for another domain",
        split("dmarc=pass header.from=evil.test", "dmarc=pass header.from=example.com"),
        "disagree",
    ),
    (
        "a forged pass of the trusted id further down, after another header",
        mail(
            [
                ("Received", RECEIVED),
                ("Authentication-Results", f"{AUTHSERV}; dmarc=fail header.from=example.com"),
                ("X-Spam-Score", "0.1"),
                *headers(),
            ]
        ),
        "dmarc=pass",
    ),
    (
        "a receiver's second header without its Received header above",
        mail(
            [
                ("Authentication-Results", f"{AUTHSERV}; spf=pass smtp.mailfrom=example.com"),
                *headers(),
            ]
        ),
        "aligned",
    ),
    (
        "a quoted header.from with more after its quote",
        mail(headers(Authentication_Results=f'{AUTHSERV}; dmarc=pass header.from="example.com" x')),
        "does not parse",
    ),
    (
        "a quoted value hiding a second result",
        mail(
            headers(
                Authentication_Results=f'{AUTHSERV}; dmarc=pass header.from="evil.test; '
                'dmarc=pass header.from=example.com"'
            )
        ),
        "aligned",
    ),
    (
        "a quoted value with an escaped quote",
        mail(
            headers(Authentication_Results=f'{AUTHSERV}; dmarc=pass header.from="example.com\\" x"')
        ),
        "aligned",
    ),
    (
        "an unclosed quoted value",
        mail(headers(Authentication_Results=f'{AUTHSERV}; dmarc=pass header.from="example.com')),
        "does not parse",
    ),
    (
        "header.from said twice",
        mail(
            headers(
                Authentication_Results=f"{AUTHSERV}; dmarc=pass header.from=evil.test "
                'header.from="example.com"'
            )
        ),
        "does not parse",
    ),
    ("two Subject headers", mail([*headers(), ("Subject", "Another")]), "2 subject headers"),
    ("two Message-IDs", mail([*headers(), ("Message-ID", "<x@y>")]), "message-id"),
    ("automated (Auto-Submitted)", mail(headers(Auto_Submitted="auto-generated")), "automated"),
    ("a mailing list", mail(headers(List_Unsubscribe="<mailto:u@list.test>")), "automated"),
    ("bulk", mail(headers(Precedence="bulk")), "automated"),
    ("a bounce", mail(headers(From="MAILER-DAEMON@example.com")), "bounce"),
    ("out of office", mail(headers(Subject="Out of office: back Monday")), "out-of-office"),
    ("Jarvis's own Message-ID", mail(headers(Message_ID="<jarvis.abc@example.net>")), "loop"),
    ("no Message-ID", mail(headers(Message_ID=None)), "message-id"),
    ("a Message-ID the email package chokes on", mail(headers(Message_ID="<@x>")), "message-id"),
]


@pytest.mark.parametrize(("name", "raw", "why"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_the_attack_table_starts_no_task_and_gets_no_reply(name: str, raw: bytes, why: str) -> None:
    d = verdict(raw)
    assert d.kind in ("drop", "reject"), (name, d)
    assert not d.reply
    assert why.lower() in d.reason.lower(), (name, d.reason)


def test_a_message_id_jarvis_sent_is_a_loop() -> None:
    sent = "<4f2a@example.net>"
    d = verdict(mail(headers(Message_ID=sent)), LedgerData(sent={sent: NOW}))
    assert (d.kind, d.reason) == ("drop", "Jarvis's own message (a loop)")


def _pending(code: str, *, expires: float, used: bool = False) -> LedgerData:
    thread = Thread(address=ALICE, message_id="<orig@example.com>", subject="Open the report")
    return LedgerData(
        confirmations=[
            Confirmation(
                code_hash=hash_code(code),
                address=ALICE,
                thread=thread,
                text="the framed task",
                sent_id="<jarvis.c1@example.net>",
                expires=expires,
                used=used,
            )
        ]
    )


def _confirmation_reply(code: str) -> bytes:
    hdrs = headers(Subject="Re: Open the report", In_Reply_To="<jarvis.c1@example.net>")
    return mail(hdrs, body=f"{code}\n")


def test_a_fresh_code_confirms_the_task() -> None:
    d = verdict(_confirmation_reply("ABCD-EF23"), _pending("ABCD-EF23", expires=NOW + 60))
    assert d.kind == "task" and d.text == "the framed task"
    assert d.thread is not None and d.thread.message_id == "<orig@example.com>"


@pytest.mark.parametrize(
    ("ledger", "code", "why"),
    [
        (_pending("ABCD-EF23", expires=NOW + 60, used=True), "ABCD-EF23", "already used"),
        (_pending("ABCD-EF23", expires=NOW - 1), "ABCD-EF23", "expired"),
        (_pending("ABCD-EF23", expires=NOW + 60), "ABCD-EF24", "matches no pending"),
        (_pending("ABCD-EF23", expires=NOW + 60), "no code here", "no confirmation code"),
    ],
    ids=["replayed", "expired", "wrong", "missing"],
)
def test_a_replayed_expired_or_wrong_code_starts_nothing(
    ledger: LedgerData, code: str, why: str
) -> None:
    d = verdict(_confirmation_reply(code), ledger)
    assert d.kind == "refuse" and why in d.reason


def test_a_confirmation_from_another_sender_is_rejected() -> None:
    raw = mail(
        headers(From="Mallory <mallory@evil.test>", In_Reply_To="<jarvis.c1@example.net>"),
        body="ABCD-EF23\n",
    )
    assert verdict(raw, _pending("ABCD-EF23", expires=NOW + 60)).kind == "reject"


def test_totp_codes_work_once_and_not_when_stale() -> None:
    secret = pyotp.random_base32()
    env = {"ALICE_TOTP_SECRET": secret}
    code = pyotp.TOTP(secret).at(NOW)
    wl = whitelist("token", "ALICE_TOTP_SECRET")
    raw = mail(headers(Subject=f"Open the report {code}"))
    d = decide(raw, wl, LedgerData(), email_settings(), NOW, secrets_env=env)
    assert d.kind == "task" and d.totp_step == int(NOW // 30)
    assert d.thread is not None and d.thread.subject == "Open the report"
    used = LedgerData(totp_used={ALICE: int(NOW // 30)})
    again = decide(raw, wl, used, email_settings(), NOW, secrets_env=env)
    assert (again.kind, again.reason) == ("reject", "the TOTP code was already used")
    stale = decide(raw, wl, LedgerData(), email_settings(), NOW + 600, secrets_env=env)
    assert stale.kind == "reject" and "wrong or expired" in stale.reason
    none = decide(mail(), wl, LedgerData(), email_settings(), NOW, secrets_env=env)
    assert none.kind == "reject" and "no TOTP code" in none.reason


def test_limits_refuse_with_a_reply() -> None:
    busy = LedgerData(tasks={ALICE: [NOW - 10 * i for i in range(10)]})
    d = verdict(mail(), busy)
    assert d.kind == "refuse" and d.reply and "limit is 10" in d.reason
    d = verdict(mail(), LedgerData(tasks={ALICE: [NOW - 3700] * 20}))
    assert d.kind == "task"
    three = [
        _pending(c, expires=NOW + 60).confirmations[0]
        for c in ("AAAA-AAAA", "BBBB-BBBB", "CCCC-CCCC")
    ]
    d = verdict(mail(), LedgerData(confirmations=three), factor="confirm")
    assert d.kind == "refuse" and "wait for confirmation" in d.reason
    big = verdict(mail(), size=2_000_000, headers_only=True)
    assert big.kind == "refuse" and "above the limit" in big.reason


@pytest.mark.parametrize(
    "value",
    [
        "mx.google.com; dkim=pass header.i=@example.com header.s=20230601 header.b=AbCd+/9; "
        "spf=pass (google.com: domain of x@example.com designates 1.2.3.4 as permitted sender) "
        "smtp.mailfrom=x@example.com; dmarc=pass (p=NONE sp=NONE dis=NONE) header.from=example.com",
        "mx.messagingengine.com; dkim=pass (2048-bit rsa key sha256) header.d=example.com "
        "header.i=@example.com header.b=Xy12 header.a=rsa-sha256 header.s=fm1 x-bits=2048; "
        "dmarc=pass policy.published-domain-policy=none (p=none,has-list-id=no,d=none) "
        "header.from=example.com; iprev=pass smtp.remote-ip=1.2.3.4 (mail.example.com); "
        "spf=pass smtp.mailfrom=x@example.com smtp.helo=mail.example.com",
        'mail.self.test 1; dkim=pass header.d=example.com header.b="abc"; dmarc=pass '
        "header.from=example.com",
    ],
    ids=["gmail", "fastmail", "rspamd"],
)
def test_real_world_headers_parse_and_pass(value: str) -> None:
    assert clean_parse(value) is not None
    assert authres_reason(value, "example.com") is None
    assert authres_reason(value, "evil.test") is not None


QUOTED = [
    f'{AUTHSERV}; dkim=pass header.d="example.com" header.s=s1; dmarc=none',
    f'{AUTHSERV}; dkim=pass header.s="s1" header.d="Example.COM" header.b="a;b(c)"',
    f'{AUTHSERV}; dmarc=pass header.from="example.com" policy.dmarc="reject"',
    f'{AUTHSERV}; dkim=pass header.i="@example.com" (signed "by" them); spf=pass '
    'smtp.mailfrom="alice@example.com"',
    f'{AUTHSERV}; dmarc=pass (p=reject; "quoted" (nested) comment) header.from="example.com"',
]


@pytest.mark.parametrize("value", QUOTED)
def test_quoted_property_values_are_read(value: str) -> None:
    """RFC 8601 allows a quoted string wherever a property value goes."""
    assert authres_reason(value, "example.com") is None
    assert authres_reason(value, "evil.test") is not None
    assert verdict(mail(headers(Authentication_Results=value))).kind == "task"


@pytest.mark.parametrize(
    "results",
    [
        (
            "spf=pass smtp.mailfrom=example.com",
            "dkim=pass header.d=example.com",
            'dmarc=pass header.from="example.com"',
        ),
        ("dkim=pass header.d=example.com", "dmarc=pass header.from=example.com"),
        ("dmarc=pass header.from=example.com", "dmarc=pass header.from=example.com"),
        ("spf=pass smtp.mailfrom=example.com", "dkim=pass header.d=example.com"),
    ],
    ids=["three", "dmarc-second", "repeated", "dkim-second"],
)
def test_a_receivers_split_headers_are_read_together(results: tuple[str, ...]) -> None:
    """The receiver's headers directly below its Received header count as one; the pass
    in the second or third is read."""
    d = verdict(split(*results))
    assert (d.kind, d.reason) == ("task", "")


def test_split_headers_stop_at_the_first_other_header() -> None:
    """Only the run right below the Received header is the receiver's."""
    raw = mail(
        [
            ("Received", RECEIVED),
            ("Authentication-Results", f"{AUTHSERV}; spf=pass smtp.mailfrom=example.com"),
            ("Authentication-Results", "mx.other.test; dmarc=pass header.from=example.com"),
            ("Authentication-Results", f"{AUTHSERV}; dmarc=pass header.from=example.com"),
            *headers(Authentication_Results=None),
        ]
    )
    d = verdict(raw)
    assert d.kind == "reject" and "aligned" in d.reason


def test_dkim_alone_passes_only_without_dmarc() -> None:
    assert authres_reason(f"{AUTHSERV}; dkim=pass header.d=example.com", "example.com") is None
    failing = f"{AUTHSERV}; dkim=pass header.d=example.com; dmarc=fail header.from=example.com"
    assert authres_reason(failing, "example.com") is not None


def test_several_authserv_ids_may_be_trusted_and_others_still_count_for_nothing() -> None:
    wl = whitelist()
    wl.authserv_id = ["mx1.example.net", "mx2.example.net"]
    ar = GOOD_AR.replace(AUTHSERV, "MX2.example.net")
    ok = decide(mail(headers(Authentication_Results=ar)), wl, LedgerData(), email_settings(), NOW)
    assert ok.kind == "task"
    other = GOOD_AR.replace(AUTHSERV, "mx3.example.net")
    no = decide(
        mail(headers(Authentication_Results=other)), wl, LedgerData(), email_settings(), NOW
    )
    assert no.kind == "reject" and "mx1.example.net or mx2.example.net" in no.reason


def test_mangled_mail_never_raises_and_never_passes_unless_intact() -> None:
    """Seeded fuzz: bytes of a multipart mail flipped, inserted, deleted. The verdict never
    raises (a raise would jam the mailbox) and is always one of the kinds."""
    rng = random.Random(14)
    body = (
        "--b\nContent-Type: text/html; charset=utf-8\n\n<p>open <b>x</b></p>\n--b\n"
        'Content-Type: application/pdf\nContent-Disposition: attachment; filename="a.pdf"\n'
        "Content-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--b--\n"
    )
    base = mail(headers(Content_Type='multipart/mixed; boundary="b"'), body=body)
    kinds = set()
    for _ in range(200):
        b = bytearray(base)
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(len(b))
            roll = rng.random()
            if roll < 0.4:
                b[pos] = rng.randrange(256)
            elif roll < 0.7:
                b.insert(pos, rng.choice(b'<>@,;:"()=?\r\n\\\x00 \t'))
            else:
                del b[pos]
        d = decide(bytes(b), whitelist(), LedgerData(), email_settings(), NOW)
        kinds.add(d.kind)
        if d.kind == "task":  # passing needs the From, the trusted header and its domain
            assert d.identity is not None and d.identity.address == ALICE
    assert {"reject", "drop", "task"} <= kinds
