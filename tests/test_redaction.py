"""One redaction module at the bottom layer: what it hides, that every writer uses it, and
that a secret registered late (the API token) is hidden from then on everywhere."""

from __future__ import annotations

import ast
import io
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import jarvis
from jarvis.console import ConsoleReporter
from jarvis.events import AgentWarning, EventBus, TaskStarted
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from jarvis.logfile import RedactSecrets
from jarvis.redaction import REDACTED, Redactor, known_secrets, redact, redact_value, register

JARVIS = Path(jarvis.__file__).parent
KEY = "sk-proj-Zq3v9w8x7y6u5t4s3r2q1p0o"

CASES = [
    (f"Incorrect API key provided: {KEY}.", KEY),
    ("anthropic: x-api-key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz-0123", "sk-ant-api03"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abcdefgh", "eyJhbGciOiJIUzI1NiJ9"),
    ("cannot reach http://proxy:hunter22@10.0.0.1:8080/v1", "hunter22"),
    ("redis://:s3cret-redis-pw@127.0.0.1:6379/0 refused", "s3cret-redis-pw"),
    ('{"api_key": "abcd1234efgh5678"}', "abcd1234efgh5678"),
    ("GET /v1/models?access_token=ya29.A0ARrdaM-xyz123 401", "ya29.A0ARrdaM"),
]


@pytest.mark.parametrize(("text", "secret"), CASES)
def test_secret_shapes_are_hidden_whatever_their_value(text: str, secret: str) -> None:
    clean = redact(text, set())
    assert secret not in clean and REDACTED in clean
    assert redact(clean, set()) == clean  # idempotent: a second pass changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "Open http://example.com:8080/path and click Save",
        "no password: $JARVIS_EMAIL_PASSWORD is empty",
        "the task-list has 12 items; ask-me later",
        "mailto:ada@example.com",
        "Bearer of bad news",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text, set()) == text


def test_known_values_registry_and_user_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-looking-value-42")
    monkeypatch.setenv("JARVIS_HOME_DIR", "/home/ada")  # not a secret name
    late = "late-registered-api-token-value"
    assert late not in known_secrets()
    register(late)
    found = known_secrets()
    assert {"plain-looking-value-42", late} <= found and "/home/ada" not in found
    value: Any = {"note": f"token {late} and plain-looking-value-42", "n": 3, "l": ["hunter77"]}
    assert redact_value(value) == {
        "note": f"token {REDACTED} and {REDACTED}",
        "n": 3,
        "l": ["hunter77"],
    }
    assert Redactor(set(), [r"hunter\d+"]).value(value)["l"] == [REDACTED]


def test_the_environment_is_read_again_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's secrets are kept between calls (every redact asks for them), and
    a variable set, changed or removed since is seen at the next call."""
    monkeypatch.delenv("BENCH_SERVICE_TOKEN", raising=False)
    before = known_secrets()
    assert known_secrets() == before
    monkeypatch.setenv("BENCH_SERVICE_TOKEN", "first-value-123")
    assert "first-value-123" in known_secrets()
    assert redact("the token first-value-123") == f"the token {REDACTED}"
    monkeypatch.setenv("BENCH_SERVICE_TOKEN", "second-value-456")
    found = known_secrets()
    assert "second-value-456" in found and "first-value-123" not in found
    monkeypatch.delenv("BENCH_SERVICE_TOKEN")
    assert "second-value-456" not in known_secrets()
    assert known_secrets() == before


def test_the_module_sits_at_the_bottom_and_is_the_only_one() -> None:
    tree = ast.parse((JARVIS / "redaction.py").read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    ]
    assert not [m for m in imported if m.split(".")[0] == "jarvis"]
    defining = []
    for path in JARVIS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in (
                "redact",
                "redact_value",
                "known_secrets",
                "Redactor",
            ):
                defining.append(path.relative_to(JARVIS).as_posix())
    assert sorted(set(defining)) == ["redaction.py"]


def test_todos_and_the_archive_never_hold_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-key-value-0987654321")
    todos = TodoList(tmp_path)
    todo = todos.add("Check http://bob:pw-in-url@host/x", message_ids=[], source="api")
    todos.append_update(todo.id, "key is anthropic-key-value-0987654321")
    todos.finish(todo.id, "failed", f"provider said: invalid key {KEY}")
    queue = MessageQueue(tmp_path)
    message = queue.append("use anthropic-key-value-0987654321 please", "user", "api")
    queue.claim_all()
    queue.archive(message.id, "failed", todo.id, f"401 for {KEY}")
    written = "".join(p.read_text() for p in tmp_path.rglob("*.md"))
    for secret in ("anthropic-key-value-0987654321", KEY, "pw-in-url"):
        assert secret not in written
    assert written.count(REDACTED) >= 5
    clean = Message(id="m-1", timestamp=datetime(2026, 1, 1), text=f"x {KEY}")
    assert clean.text == f"x {REDACTED}"


def test_the_console_and_the_log_hide_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    from jarvis.config import Settings

    out = io.StringIO()
    bus = EventBus()
    ConsoleReporter(bus, Settings(), Console(file=out, width=200, color_system=None))
    bus.emit(TaskStarted(task_id="t-1", task=f"use {KEY}"))
    bus.emit(AgentWarning(task_id="t-1", message="retrying http://u:pass-word-1@h/"))
    shown = out.getvalue()
    assert KEY not in shown and "pass-word-1" not in shown and REDACTED in shown

    token = "token-registered-after-logging-started"
    handler_out = io.StringIO()
    handler = logging.StreamHandler(handler_out)
    handler.addFilter(RedactSecrets())
    logger = logging.getLogger("test.redaction.late")
    logger.addHandler(handler)
    try:
        register(token)  # after the filter was made, as serve registers the API token
        logger.warning("request with %s failed", token)
        try:
            raise RuntimeError(f"boom {KEY}")
        except RuntimeError:
            logger.exception("crashed")
    finally:
        logger.removeHandler(handler)
    logged = handler_out.getvalue()
    assert token not in logged and KEY not in logged and "RuntimeError" in logged
