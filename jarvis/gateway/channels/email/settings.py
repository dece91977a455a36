"""Settings of the email channel (``email`` in settings.json) and the sender whitelist
(``data/config/whitelist.json``, the contract of DESIGN.md section 6)."""

from __future__ import annotations

import ipaddress
import json
import os
import ssl
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from jarvis.redaction import SECRET_NAME, register

Security = Literal["tls", "starttls", "plain"]
SecondFactor = Literal["confirm", "token", "none"]
WHITELIST_FILE = Path("config") / "whitelist.json"


class EmailError(Exception):
    """The email channel cannot work as configured; the message says what to fix."""


class EmailSettings(BaseModel):
    """Where Jarvis reads and sends mail, and the channel's limits."""

    enabled: bool = False
    address: str = Field("", description="Jarvis's own address (From of its replies)")
    imap_host: str = ""
    imap_port: int = Field(993, ge=1, le=65535)
    imap_security: Security = "tls"
    username: str = ""
    password_env: str = Field("JARVIS_EMAIL_PASSWORD", description="env var with the password")
    oauth2_token_command: list[str] | None = Field(
        None, description="prints an OAuth2 access token (XOAUTH2) instead of a password"
    )
    mailbox: str = "INBOX"
    smtp_host: str = ""
    smtp_port: int = Field(465, ge=1, le=65535)
    smtp_security: Security = "tls"
    smtp_username: str | None = Field(None, description="default: username")
    allow_plaintext_loopback: bool = Field(
        False, description="tests only: plain IMAP/SMTP to 127.0.0.1 without TLS"
    )
    tls_ca_file: Path | None = Field(None, description="CA bundle to trust (own servers)")
    idle_renew_s: float = Field(540.0, gt=0, description="IDLE is renewed this often (9 min)")
    poll_interval_s: float = Field(60.0, gt=0, description="without IDLE: poll this often")
    max_size_bytes: int = Field(1_000_000, ge=1024)
    tasks_per_hour: int = Field(10, ge=1, description="tasks per sender per hour")
    max_pending_confirmations: int = Field(3, ge=1)
    confirm_ttl_s: float = Field(900.0, gt=0)
    body_cap_bytes: int = Field(16_384, ge=256)
    dkim_local: bool = Field(False, description="verify the aligned DKIM signature locally too")
    timeout_s: float = Field(30.0, gt=0)

    @field_validator("address", "username")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @field_validator("password_env")
    @classmethod
    def _secret_name(cls, value: str) -> str:
        return secret_env_name(value)

    def ssl_context(self) -> ssl.SSLContext:
        """Certificate and host name checked; the system's CAs, or ``tls_ca_file``."""
        context = ssl.create_default_context(
            cafile=str(self.tls_ca_file) if self.tls_ca_file else None
        )
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    def transport_problem(self, host: str, security: Security) -> str | None:
        """Why a connection would not be safe enough; None when it is."""
        if security != "plain":
            return None
        if not self.allow_plaintext_loopback:
            return f"{host}: plaintext is refused (set tls or starttls)"
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        return None if loopback else f"{host}: plaintext is allowed for loopback only"

    def problems(self) -> list[str]:
        """What is missing or unsafe in these settings (empty when usable)."""
        out = []
        for name in ("address", "imap_host", "username", "smtp_host"):
            if not getattr(self, name):
                out.append(f"email.{name} is not set")
        for host, security in (
            (self.imap_host, self.imap_security),
            (self.smtp_host, self.smtp_security),
        ):
            problem = self.transport_problem(host, security)
            if host and problem:
                out.append(problem)
        if not self.oauth2_token_command and not os.environ.get(self.password_env):
            out.append(f"no password: ${self.password_env} is empty and no oauth2_token_command")
        return out

    def secret(self) -> tuple[Literal["password", "oauth2"], str]:
        """The password, or a fresh OAuth2 access token from the token command."""
        if self.oauth2_token_command:
            try:
                done = subprocess.run(
                    self.oauth2_token_command,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout_s,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise EmailError(f"the OAuth2 token command failed: {exc}") from None
            token = done.stdout.strip()
            if done.returncode != 0 or not token:
                raise EmailError(f"the OAuth2 token command exited {done.returncode}, no token")
            register(token)  # an access token that shows up in an error is redacted too
            return "oauth2", token
        password = os.environ.get(self.password_env, "")
        if not password:
            raise EmailError(f"no password in ${self.password_env}")
        return "password", password


def secret_env_name(name: str) -> str:
    """Env vars holding secrets must be named so that the log filter redacts their values
    (jarvis.redaction: KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL in the name)."""
    if not SECRET_NAME.search(name):
        raise ValueError(
            f"{name!r}: name the variable with PASSWORD, TOKEN, SECRET or KEY in it, so that "
            "logs redact its value"
        )
    return name


class Sender(BaseModel):
    """One person who may give Jarvis tasks by email."""

    address: str
    second_factor: SecondFactor = "confirm"
    totp_secret_env: str | None = Field(None, description="env var with the base32 TOTP secret")

    @field_validator("totp_secret_env")
    @classmethod
    def _secret_name(cls, value: str | None) -> str | None:
        return None if value is None else secret_env_name(value)

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        value = value.strip().lower()
        local, at, domain = value.rpartition("@")
        if not at or not local or not domain or any(c.isspace() or c in '<>,;"' for c in value):
            raise ValueError(f"not a plain address: {value!r}")
        return value


class Whitelist(BaseModel):
    senders: list[Sender] = Field(default_factory=list)
    authserv_id: str | list[str] = Field(
        "", description="the receiving server's authserv-id; a list when it has several"
    )

    @field_validator("authserv_id")
    @classmethod
    def _id(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, str):
            return value.strip().lower()
        return [v.strip().lower() for v in value if v.strip()]

    @property
    def authserv_ids(self) -> tuple[str, ...]:
        ids = [self.authserv_id] if isinstance(self.authserv_id, str) else self.authserv_id
        return tuple(i for i in ids if i)

    def find(self, address: str) -> Sender | None:
        wanted = address.strip().lower()
        return next((s for s in self.senders if s.address == wanted), None)


def load_whitelist(data_dir: Path) -> Whitelist:
    """``data/config/whitelist.json``; a missing file allows nobody."""
    path = Path(data_dir) / WHITELIST_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Whitelist()
    except (OSError, json.JSONDecodeError) as exc:
        raise EmailError(f"{path}: cannot be read: {exc}") from None
    try:
        return Whitelist.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise EmailError(f"{path}: {where}: {first['msg']}") from None
