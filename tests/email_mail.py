"""Mail for the email tests: raw RFC 5322 bytes built header by header (duplicates and
malformed headers included), and the settings and whitelist the tests use."""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from jarvis.gateway.channels.email.settings import EmailSettings, Sender, Whitelist

AUTHSERV = "mx.example.net"
ALICE = "alice@example.com"
JARVIS = "jarvis@example.net"
GOOD_AR = (
    f"{AUTHSERV}; dkim=pass header.d=example.com header.s=s1; "
    "spf=pass smtp.mailfrom=alice@example.com; dmarc=pass (p=reject) header.from=example.com"
)
Header = tuple[str, str]


def new_id(domain: str = "example.com") -> str:
    return f"<{secrets.token_hex(8)}@{domain}>"


def headers(**changes: str | None) -> list[Header]:
    """The usual headers of an authenticated mail from Alice; ``changes`` replace them
    (``None`` removes one; underscores in names are dashes)."""
    base: dict[str, str] = {
        "Authentication-Results": GOOD_AR,
        "From": f"Alice <{ALICE}>",
        "To": JARVIS,
        "Subject": "Open the report",
        "Date": "Mon, 23 Nov 2026 10:00:00 +0000",
        "Message-ID": new_id(),
        "Content-Type": "text/plain; charset=utf-8",
    }
    for key, value in changes.items():
        name = key.replace("_", "-")
        if value is None:
            base.pop(name, None)
        else:
            base[name] = value
    return list(base.items())


def mail(
    hdrs: Sequence[Header] | None = None,
    body: str = "Please open the quarterly report and print page 3.\n",
    *,
    prepend: Sequence[Header] = (),
) -> bytes:
    lines = [f"{k}: {v}" for k, v in [*prepend, *(hdrs if hdrs is not None else headers())]]
    return ("\r\n".join(lines) + "\r\n\r\n" + body.replace("\n", "\r\n")).encode("utf-8")


def whitelist(factor: str = "none", totp_env: str | None = None) -> Whitelist:
    return Whitelist(
        senders=[Sender(address=ALICE, second_factor=factor, totp_secret_env=totp_env)],  # type: ignore[arg-type]
        authserv_id=AUTHSERV,
    )


def email_settings(**values: object) -> EmailSettings:
    base: dict[str, object] = {"enabled": True, "address": JARVIS}
    base.update(values)
    return EmailSettings.model_validate(base)
