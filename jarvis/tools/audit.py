"""The tool-call audit log: one JSON line per call in ``DATA/logs/tools-DATE.jsonl``.

A line says who called what and how it went (trace_id, task_id, call_id,
tool_name, ok, error code, latency). Arguments are summarised, not logged:
numbers, booleans and closed-set values are kept; free text is reduced to its
length. Every string of the line passes :func:`jarvis.redaction.redact_value` (known secrets
and secret-shaped text become ``[REDACTED]``), as a last line of defence.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Collection, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from jarvis.redaction import known_secrets, redact_value

log = logging.getLogger(__name__)

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
