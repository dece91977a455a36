"""The tool-call audit log: one JSON line per call, no arguments in full, no secrets ever."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from jarvis.config import Settings
from jarvis.events import EventRecorder
from jarvis.redaction import REDACTED, known_secrets, redact
from jarvis.tools.audit import audit_path, read_audit, summarize_arguments
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INVALID_PARAMS, UNKNOWN_TOOL, ToolResult


class TypeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(max_length=200)
    mode: Literal["fast", "slow"] = "fast"
    count: int = 1


def registry_for(settings: Settings) -> ToolRegistry:
    registry = ToolRegistry(settings)

    async def type_text(args: TypeArgs, ctx: ToolContext) -> dict[str, Any]:
        """Pretends to type; echoes the text back as its data."""
        return {"typed": args.text}

    registry.register("type", type_text, TypeArgs)
    return registry


def run_calls(settings: Settings, calls: list[tuple[str, Any]]) -> tuple[list[ToolResult], Any]:
    registry = registry_for(settings)
    ctx = ToolContext.for_task(settings, "task-7", trace_id="trace-xyz")
    recorder = EventRecorder(ctx.bus)

    async def go() -> list[ToolResult]:
        return [
            await registry.execute(name, args, ctx, call_id=f"c{i}")
            for i, (name, args) in enumerate(calls)
        ]

    return asyncio.run(go()), recorder


def test_one_line_per_call_with_the_documented_fields(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    results, _ = run_calls(
        settings,
        [
            ("type", {"text": "hello world", "mode": "slow", "count": 2}),
            ("type", {"text": 5}),
            ("fly", {}),
        ],
    )
    assert [r.ok for r in results] == [True, False, False]
    path = audit_path(tmp_path)
    assert path.parent == tmp_path / "logs"
    assert path.name.startswith("tools-") and path.name.endswith(".jsonl")
    lines = read_audit(path)
    assert len(lines) == 3
    first = lines[0]
    for key in ("ts", "trace_id", "task_id", "call_id", "tool_name", "ok", "error_code"):
        assert key in first
    assert (first["trace_id"], first["task_id"], first["call_id"]) == ("trace-xyz", "task-7", "c0")
    assert (first["tool_name"], first["ok"], first["error_code"]) == ("type", True, None)
    assert isinstance(first["latency_ms"], float) and first["latency_ms"] >= 0
    # closed sets and numbers are kept; free text only by its length
    assert first["args"] == {"text": "<11 chars>", "mode": "slow", "count": 2}
    assert "hello world" not in path.read_text()
    assert (lines[1]["ok"], lines[1]["error_code"]) == (False, INVALID_PARAMS)
    assert (lines[2]["tool_name"], lines[2]["error_code"]) == ("fly", UNKNOWN_TOOL)


def test_env_secrets_never_reach_the_log_results_or_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    anthropic = f"sk-ant-{uuid.uuid4().hex}"
    openai = f"sk-proj-{uuid.uuid4().hex}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", anthropic)
    monkeypatch.setenv("OPENAI_API_KEY", openai)
    settings = Settings(data_dir=tmp_path)
    results, recorder = run_calls(
        settings,
        [
            ("type", {"text": anthropic, "mode": "fast"}),  # valid: the secret is the text
            ("type", {"text": "x", "mode": openai}),  # invalid: the error echoes the value
            ("type", {"text": "x", openai: 1}),  # the secret as a field name
            (anthropic, {"text": openai}),  # the secret as a tool name
            ("type", [anthropic]),  # not an object at all
        ],
    )
    log_text = audit_path(tmp_path).read_text()
    assert len(log_text.splitlines()) == 5
    events_text = json.dumps([e.model_dump(mode="json") for e in recorder.events])
    results_text = json.dumps([r.model_dump(mode="json") for r in results])
    for secret in (anthropic, openai):
        assert secret not in log_text
        assert secret not in events_text
        assert secret not in results_text
    assert REDACTED in log_text and REDACTED in events_text
    assert results[1].error is not None and results[1].error.code == INVALID_PARAMS
    assert REDACTED in results[1].error.message


def test_secret_settings_values_are_known_secrets(tmp_path: Path) -> None:
    class Mail(BaseModel):
        password: SecretStr

    class Holder(BaseModel):
        mail: Mail
        plain: str = "not-a-secret-value"

    secrets = known_secrets(Holder(mail=Mail(password=SecretStr("hunter22-imap"))))
    assert "hunter22-imap" in secrets
    assert "not-a-secret-value" not in secrets


@pytest.mark.parametrize(
    ("args", "verbatim", "expected"),
    [
        (None, (), {}),
        ({"x": 3, "y": 4.5, "ok": True, "n": None}, (), {"x": 3, "y": 4.5, "ok": True, "n": None}),
        ({"text": "secret plans"}, (), {"text": "<12 chars>"}),
        ({"keys": "ctrl+s"}, ("keys",), {"keys": "ctrl+s"}),
        ({"keys": "k" * 41}, ("keys",), {"keys": "<41 chars>"}),
        ({"l": [1, 2], "d": {"a": 1}}, (), {"l": "<list of 2>", "d": "<dict of 1>"}),
        ([1, 2], (), "<list>"),
        (
            {f"k{i}": i for i in range(14)},
            (),
            {**{f"k{i}": i for i in range(12)}, "...": "<2 more>"},
        ),
    ],
)
def test_summarize_arguments(args: Any, verbatim: tuple[str, ...], expected: Any) -> None:
    assert summarize_arguments(args, verbatim) == expected


def test_redact_prefers_the_longest_secret() -> None:
    assert redact("key=abcdef123 and abcdef", {"abcdef", "abcdef123"}) == (
        f"key={REDACTED} and {REDACTED}"
    )


def test_an_unwritable_log_does_not_fail_the_call(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "logs").write_text("a file where the logs directory should be")
    results, _ = run_calls(Settings(data_dir=data_dir), [("type", {"text": "hi"})])
    assert results[0].ok
