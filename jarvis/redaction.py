"""Secrets out of every text that leaves the process: one place, at the bottom layer.

Two kinds of secret are replaced with ``[REDACTED]``:

- known values: the values of secret-looking environment variables (API keys, tokens,
  passwords: :func:`is_secret_env`), ``SecretStr`` fields of a settings object, and what
  the process registered at run time (:func:`register`: the API token, an OAuth2 access
  token);
- shapes that are secrets whatever their value (:data:`PATTERNS`): provider API keys
  (``sk-...``), bearer tokens, the password of a ``scheme://user:password@host`` URL,
  ``api_key=...`` style assignments.

Logs, journals, step records, reports, ``todos.md``, the message archive, API answers and
the console all pass their text through :func:`redact` / :func:`redact_value` (or a
:class:`Redactor`, which adds the user's own ``runs.secret_patterns``). This module
imports nothing from ``jarvis`` so that any layer may use it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, SecretBytes, SecretStr

REDACTED = "[REDACTED]"
SECRET_ENV_NAMES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
MIN_SECRET_LEN = 6

PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # provider API keys: OpenAI sk-..., sk-proj-..., Anthropic sk-ant-api03-...
    (re.compile(r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{15,}"), REDACTED),
    # Authorization: Bearer TOKEN (the scheme word stays, the token goes)
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*"), rf"\g<1>{REDACTED}"),
    # scheme://user:password@host (redis://:password@host too)
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/:@\"'<>]*):[^\s/@\"'<>]+@"),
        rf"\g<1>:{REDACTED}@",
    ),
    # api_key=..., "x-api-key": "...", access_token=..., client_secret=...
    (
        re.compile(
            r"(?i)\b((?:x-)?api[_\-]?key|access[_\-]?token|client[_\-]?secret)"
            r"([\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED\])[^\s\"',;&}]{8,}"
        ),
        rf"\g<1>\g<2>{REDACTED}",
    ),
)

_registered: set[str] = set()
_lock = threading.Lock()


def is_secret_env(name: str) -> bool:
    """Whether an environment variable of this name holds a secret (API keys, tokens,
    passwords): it never reaches a log, nor a program the model can look into."""
    return name in SECRET_ENV_NAMES or bool(SECRET_NAME.search(name))


def register(*values: str) -> None:
    """Secrets the process learned at run time (the API token, an OAuth2 access token):
    from now on :func:`known_secrets` includes them. Short values are ignored."""
    with _lock:
        _registered.update(v for v in values if v and len(v) >= MIN_SECRET_LEN)


def register_settings(settings: BaseModel) -> None:
    """Every ``SecretStr`` of a settings object, for code that has no settings at hand."""
    register(*_model_secrets(settings))


_env_seen: tuple[dict[Any, Any] | None, frozenset[str]] = (None, frozenset())
"""The environment's raw mapping as last read, and the secret values found in it."""


def env_secrets() -> frozenset[str]:
    """The values of the secret-looking environment variables. Read again only when the
    environment changed: comparing its raw mapping (bytes, in C) costs a small part of
    decoding and matching every variable, which every :func:`redact` would do otherwise
    (the books redact each field of each task they parse)."""
    global _env_seen
    raw: dict[Any, Any] | None = getattr(os.environ, "_data", None)  # (CPython's mapping)
    seen, found = _env_seen
    if raw is not None and raw == seen:
        return found
    found = frozenset(
        value
        for name, value in os.environ.items()
        if is_secret_env(name) and len(value) >= MIN_SECRET_LEN
    )
    _env_seen = (dict(raw) if raw is not None else None, found)
    return found


def known_secrets(settings: BaseModel | None = None) -> set[str]:
    """Secret values that must never be written: env keys, registered values and (when
    given) the ``SecretStr`` fields of ``settings``."""
    found: set[str] = set(env_secrets())
    with _lock:
        found.update(_registered)
    if settings is not None:
        found.update(_model_secrets(settings))
    return found


def _model_secrets(model: BaseModel) -> Iterable[str]:
    for name in type(model).model_fields:
        value = getattr(model, name, None)
        if isinstance(value, SecretStr | SecretBytes):
            raw = value.get_secret_value()
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            if len(text) >= MIN_SECRET_LEN:
                yield text
        elif isinstance(value, BaseModel):
            yield from _model_secrets(value)


def redact(text: str, secrets: Collection[str] | None = None) -> str:
    """``text`` with every known secret (``secrets``, default :func:`known_secrets`;
    longest first) and every secret-shaped string replaced."""
    if secrets is None:
        secrets = known_secrets()
    for secret in sorted(secrets, key=len, reverse=True):
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_value(value: Any, secrets: Collection[str] | None = None) -> Any:
    """A copy of a JSON-like value with secrets replaced in every string (keys too)."""
    if secrets is None:
        secrets = known_secrets()
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {redact(str(k), secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, secrets) for v in value]
    return value


class Redactor:
    """Known secrets plus the user's own patterns (``runs.secret_patterns``)."""

    def __init__(self, secrets: Collection[str], patterns: Iterable[str] = ()) -> None:
        self.secrets = set(secrets)
        self.patterns = [re.compile(p) for p in patterns]

    def text(self, text: str) -> str:
        text = redact(text, self.secrets)
        for pattern in self.patterns:
            text = pattern.sub(REDACTED, text)
        return text

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value
