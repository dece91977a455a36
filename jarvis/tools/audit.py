"""The tool-call audit log: one JSON line per call in ``DATA/logs/tools-DATE.jsonl``.

A line says who called what and how it went (trace_id, task_id, call_id,
tool_name, ok, error code, latency). Arguments are summarised, not logged:
numbers, booleans and closed-set values are kept; free text is reduced to its
length. Any value equal to a known secret (API keys and other secret-looking
environment variables, ``SecretStr`` settings) is replaced by ``[REDACTED]``
everywhere in the line, as a last line of defence.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SecretBytes, SecretStr

log = logging.getLogger(__name__)

REDACTED = "[REDACTED]"
SECRET_ENV_NAMES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
_MIN_SECRET_LEN = 6
_MAX_KEYS = 12
_MAX_VERBATIM = 40


class AuditRecord(BaseModel):
    """One line of the audit log."""

    ts: str = Field(default_factory=lambda: _now_iso())
    trace_id: str
    task_id: str
    call_id: str
    parent_call_id: str | None = None
    tool_name: str
    ok: bool
    error_code: int | None = None
    latency_ms: float
    provider: str | None = None
    channel: str | None = None
    args: dict[str, Any] | str = Field(default_factory=dict)


def _now_iso() -> str:
    return datetime.now().astimezone().isoformat("T", "milliseconds")


def is_secret_env(name: str) -> bool:
    """Whether an environment variable of this name holds a secret (API keys, tokens,
    passwords): it never reaches a log, nor a program the model can look into."""
    return name in SECRET_ENV_NAMES or bool(_SECRET_NAME.search(name))


def known_secrets(settings: BaseModel | None = None) -> set[str]:
    """Secret values that must never be written: env keys and SecretStr settings."""
    found: set[str] = set()
    for name, value in os.environ.items():
        if is_secret_env(name) and len(value) >= _MIN_SECRET_LEN:
            found.add(value)
    if settings is not None:
        found.update(_model_secrets(settings))
    return found


def _model_secrets(model: BaseModel) -> Iterable[str]:
    for name in type(model).model_fields:
        value = getattr(model, name, None)
        if isinstance(value, SecretStr | SecretBytes):
            raw = value.get_secret_value()
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            if len(text) >= _MIN_SECRET_LEN:
                yield text
        elif isinstance(value, BaseModel):
            yield from _model_secrets(value)


def redact(text: str, secrets: Collection[str]) -> str:
    """``text`` with every occurrence of a secret replaced (longest secrets first)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_value(value: Any, secrets: Collection[str]) -> Any:
    """A copy of a JSON-like value with secrets replaced in every string (keys too)."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {redact(str(k), secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, secrets) for v in value]
    return value


def summarize_arguments(arguments: Any, verbatim: Collection[str] = ()) -> dict[str, Any] | str:
    """A short, non-sensitive picture of a call's arguments.

    Numbers, booleans and ``None`` are kept; a string is kept only for a field named
    in ``verbatim`` (closed sets such as a scroll direction) and when short; any
    other value becomes its type and size.
    """
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        return f"<{type(arguments).__name__}>"
    summary: dict[str, Any] = {}
    for index, (key, value) in enumerate(arguments.items()):
        if index == _MAX_KEYS:
            summary["..."] = f"<{len(arguments) - _MAX_KEYS} more>"
            break
        summary[str(key)[:_MAX_VERBATIM]] = _summarize_value(str(key), value, verbatim)
    return summary


def _summarize_value(key: str, value: Any, verbatim: Collection[str]) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        if key in verbatim and len(value) <= _MAX_VERBATIM:
            return value
        return f"<{len(value)} chars>"
    if isinstance(value, list | tuple | dict):
        return f"<{type(value).__name__} of {len(value)}>"
    return f"<{type(value).__name__}>"


def audit_path(data_dir: Path, when: float | None = None) -> Path:
    """``DATA/logs/tools-YYYY-MM-DD.jsonl`` for the local date of ``when`` (default now)."""
    day = time.strftime("%Y-%m-%d", time.localtime(when))
    return data_dir / "logs" / f"tools-{day}.jsonl"


class AuditLog:
    """Appends audit records; a write failure is logged and never fails the call."""

    def __init__(self, settings: BaseModel | None = None) -> None:
        self._settings = settings

    def write(self, data_dir: Path, record: AuditRecord) -> None:
        clean = redact_value(record.model_dump(mode="json"), known_secrets(self._settings))
        line = json.dumps(clean, ensure_ascii=False)
        path = audit_path(data_dir)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:
            log.warning("could not write the tool audit log %s: %s", path, exc)


def read_audit(path: Path) -> list[dict[str, Any]]:
    """All records of one audit file (for reports and tests)."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
