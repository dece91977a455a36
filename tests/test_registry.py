"""ToolRegistry: generated schemas, every error code, policy, limits, timeout, serialisation."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from jarvis.config import Settings
from jarvis.events import EventRecorder, ToolCallFinished, ToolCallStarted
from jarvis.llm.types import ToolCall
from jarvis.tools.context import ToolContext
from jarvis.tools.policy_settings import ToolLimit, ToolPolicy, ToolPolicyOverride
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import (
    INTERNAL,
    INVALID_PARAMS,
    NOT_ALLOWED,
    RATE_LIMITED,
    TIMEOUT,
    UNKNOWN_TOOL,
    ToolFailure,
    ToolResult,
)


class MoveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int = Field(description="x in pixels")
    y: int = Field(description="y in pixels")
    button: Literal["left", "right"] = Field("left", description="which button")


class TextArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(max_length=50)


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FakeClock:
    """A clock the test advances by hand, so limits are checked without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_settings(tmp_path: Path, **tools: Any) -> Settings:
    return Settings(data_dir=tmp_path, tools=ToolPolicy(**tools))


def make_registry(settings: Settings, clock: FakeClock | None = None) -> ToolRegistry:
    registry = ToolRegistry(settings, clock=clock or FakeClock())
    threads: list[str] = []

    def move(args: MoveArgs, ctx: ToolContext) -> dict[str, Any]:
        """Move to a point."""
        threads.append(threading.current_thread().name)
        return {"x": args.x, "y": args.y, "button": args.button}

    async def echo(args: TextArgs, ctx: ToolContext) -> str:
        """Echo the text back."""
        threads.append(threading.current_thread().name)
        return args.text

    def boom(args: NoArgs, ctx: ToolContext) -> None:
        """Always fails."""
        raise RuntimeError("kaboom")

    async def refuse(args: NoArgs, ctx: ToolContext) -> None:
        """Fails with a code of its own."""
        raise ToolFailure(INVALID_PARAMS, "that field is not on screen")

    async def inner_timeout(args: NoArgs, ctx: ToolContext) -> None:
        """Raises a TimeoutError of its own, well before the registry's timeout."""
        raise TimeoutError("socket read")

    registry.register("move", move, MoveArgs)
    registry.register("echo", echo, TextArgs)
    registry.register("boom", boom, NoArgs)
    registry.register("refuse", refuse, NoArgs)
    registry.register("inner_timeout", inner_timeout, NoArgs)
    registry.threads = threads  # type: ignore[attr-defined]
    return registry


def make_context(settings: Settings, task_id: str = "t1", **kw: Any) -> ToolContext:
    return ToolContext.for_task(settings, task_id, trace_id="trace-1", **kw)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


# --- schemas -------------------------------------------------------------------
def test_schema_is_generated_strict_and_clean(settings: Settings) -> None:
    registry = make_registry(settings)
    spec = {s.name: s for s in registry.specs()}["move"]
    params = spec.parameters
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert params["required"] == ["x", "y"]
    assert params["properties"]["x"] == {"type": "integer", "description": "x in pixels"}
    assert params["properties"]["button"]["enum"] == ["left", "right"]
    assert params["properties"]["button"]["default"] == "left"
    assert "title" not in str(params)
    assert spec.description == "Move to a point."
    empty = {s.name: s for s in registry.specs()}["boom"].parameters
    assert empty == {"type": "object", "properties": {}, "additionalProperties": False}


def test_renders_for_both_providers(settings: Settings) -> None:
    registry = make_registry(settings)
    anthropic = {t["name"]: t for t in registry.anthropic_tools()}
    openai = {t["function"]["name"]: t for t in registry.openai_tools()}
    assert set(anthropic) == set(openai) == set(registry.names)
    assert anthropic["echo"]["input_schema"]["properties"]["text"]["maxLength"] == 50
    assert openai["echo"]["type"] == "function"
    assert openai["echo"]["function"]["parameters"] == anthropic["echo"]["input_schema"]


def test_registration_rejects_lenient_models_and_duplicates(settings: Settings) -> None:
    registry = make_registry(settings)

    class Loose(BaseModel):
        x: int

    with pytest.raises(ValueError, match="extra='forbid'"):
        registry.register("loose", lambda a, c: None, Loose, "loose")
    with pytest.raises(ValueError, match="already registered"):
        registry.register("move", lambda a, c: None, MoveArgs, "again")


# --- success paths ------------------------------------------------------------------
def test_sync_tools_run_in_a_worker_thread_async_tools_on_the_loop(settings: Settings) -> None:
    registry = make_registry(settings)
    ctx = make_context(settings)

    async def go() -> tuple[ToolResult, ToolResult]:
        moved = await registry.execute("move", {"x": "12", "y": 7}, ctx, call_id="c1")
        echoed = await registry.execute("echo", {"text": "hi"}, ctx, call_id="c2")
        return moved, echoed

    moved, echoed = asyncio.run(go())
    assert moved == ToolResult.success({"x": 12, "y": 7, "button": "left"})
    assert echoed.ok and echoed.data == "hi"
    main = threading.main_thread().name
    assert registry.threads[0] != main  # type: ignore[attr-defined]
    assert registry.threads[1] == main  # type: ignore[attr-defined]


def test_result_serialises_for_the_model(settings: Settings) -> None:
    part = ToolResult.failure(UNKNOWN_TOOL, "unknown tool 'x'").to_part("c9", "x")
    assert part.ok is False and part.call_id == "c9"
    assert json.loads(part.content) == {
        "ok": False,
        "error": {"code": -32601, "message": "unknown tool 'x'"},
    }
    assert ToolResult.success([1]).to_content() == '{"ok": true, "data": [1]}'


# --- error codes ------------------------------------------------------------------
def run_one(
    registry: ToolRegistry, ctx: ToolContext, name: str, args: Any, **kw: Any
) -> ToolResult:
    return asyncio.run(registry.execute(name, args, ctx, **kw))


def test_unknown_tool(settings: Settings) -> None:
    registry = make_registry(settings)
    result = run_one(registry, make_context(settings), "teleport", {})
    assert result.error is not None and result.error.code == UNKNOWN_TOOL
    assert "teleport" in result.error.message and "move" in result.error.message


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"x": "abc", "y": 1}, "x: Input should be a valid integer"),
        ({"x": 1}, "y: Field required"),
        ({"x": 1, "y": 2, "button": "middle"}, "button: Input should be 'left' or 'right'"),
        ({"x": 1, "y": 2, "task_id": "other"}, "task_id: Extra inputs are not permitted"),
        ([1, 2], "arguments must be a JSON object, got list"),
        ("x=1", "arguments must be a JSON object, got str"),
    ],
)
def test_invalid_params_say_which_field_and_why(
    settings: Settings, args: Any, expected: str
) -> None:
    result = run_one(make_registry(settings), make_context(settings), "move", args)
    assert result.error is not None and result.error.code == INVALID_PARAMS
    assert expected in result.error.message


def test_invalid_params_echo_the_bad_value(settings: Settings) -> None:
    result = run_one(make_registry(settings), make_context(settings), "move", {"x": "abc", "y": 1})
    assert result.error is not None
    assert result.error.message.startswith("x: Input should be a valid integer")
    assert result.error.message.endswith("(got 'abc')")


def test_none_arguments_mean_no_arguments(settings: Settings) -> None:
    registry = make_registry(settings)
    ctx = make_context(settings)
    assert run_one(registry, ctx, "boom", None).error.code == INTERNAL  # type: ignore[union-attr]
    missing = run_one(registry, ctx, "move", None)
    assert missing.error is not None and "x: Field required" in missing.error.message


def test_broken_json_from_the_model_is_invalid_params(settings: Settings) -> None:
    registry = make_registry(settings)
    call = ToolCall(id="c1", name="move", arguments={}, parse_error="Expecting ',' at char 9")
    result = asyncio.run(registry.execute_call(call, make_context(settings)))
    assert result.error is not None and result.error.code == INVALID_PARAMS
    assert "Expecting ',' at char 9" in result.error.message


def test_internal_error_is_a_result_and_logs_the_traceback(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="jarvis.tools.registry"):
        result = run_one(make_registry(settings), make_context(settings), "boom", {})
    assert result.error is not None and result.error.code == INTERNAL
    assert "RuntimeError: kaboom" in result.error.message
    record = next(r for r in caplog.records if "boom" in r.getMessage())
    assert record.exc_info is not None and "kaboom" in str(record.exc_info[1])


def test_a_tool_can_fail_with_its_own_code(settings: Settings) -> None:
    result = run_one(make_registry(settings), make_context(settings), "refuse", {})
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        INVALID_PARAMS,
        "that field is not on screen",
    )


def test_a_tools_own_timeout_error_is_internal_not_timeout(settings: Settings) -> None:
    result = run_one(make_registry(settings), make_context(settings), "inner_timeout", {})
    assert result.error is not None and result.error.code == INTERNAL


def test_timeout(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, timeout_s=0.05)
    registry = make_registry(settings)
    never = threading.Event()

    async def hang(args: NoArgs, ctx: ToolContext) -> None:
        """Waits forever."""
        await asyncio.Event().wait()

    def block(args: NoArgs, ctx: ToolContext) -> None:
        """Blocks a worker thread until released."""
        never.wait(5)

    registry.register("hang", hang, NoArgs)
    registry.register("block", block, NoArgs)
    registry.register("slow_ok", hang, NoArgs, "per-tool override", timeout_s=0.2)
    ctx = make_context(settings)

    async def go() -> list[ToolResult]:
        try:
            return [await registry.execute(n, {}, ctx) for n in ("hang", "block", "slow_ok")]
        finally:
            never.set()  # let the abandoned worker thread end before the loop closes

    results = asyncio.run(go())
    for result, limit in zip(results, ("0.05s", "0.05s", "0.2s"), strict=True):
        assert result.error is not None and result.error.code == TIMEOUT
        assert f"within {limit}" in result.error.message


def test_cancellation_propagates_and_is_still_recorded(settings: Settings) -> None:
    registry = make_registry(settings)
    entered = asyncio.Event()

    async def hang(args: NoArgs, ctx: ToolContext) -> None:
        """Waits until cancelled."""
        entered.set()
        await asyncio.Event().wait()

    registry.register("hang", hang, NoArgs)
    ctx = make_context(settings)
    recorder = EventRecorder(ctx.bus)

    async def go() -> None:
        task = asyncio.create_task(registry.execute("hang", {}, ctx, call_id="c1"))
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    finished = recorder.of(ToolCallFinished)
    assert [(e.call_id, e.ok, e.error_code) for e in finished] == [("c1", False, None)]


# --- policy ----------------------------------------------------------------------
def test_policy_allow_deny_per_provider(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path,
        deny=["boom"],
        per_provider={
            "openai": ToolPolicyOverride(allow=["move", "echo", "boom"], deny=["echo"]),
            "anthropic": ToolPolicyOverride(deny=["refuse"]),
        },
    )
    registry = make_registry(settings)
    anthropic = {s.name for s in registry.specs("anthropic")}
    openai = {s.name for s in registry.specs("openai")}
    other = {s.name for s in registry.specs("local")}
    assert anthropic == {"move", "echo", "inner_timeout"}
    assert openai == {"move"}
    assert other == {"move", "echo", "refuse", "inner_timeout"}
    assert {t["function"]["name"] for t in registry.openai_tools()} == openai

    openai_ctx = make_context(settings, provider="openai")
    denied = run_one(registry, openai_ctx, "echo", {"text": "x"})
    assert denied.error is not None and denied.error.code == NOT_ALLOWED
    assert "echo" in denied.error.message and "openai" in denied.error.message
    outside = run_one(registry, openai_ctx, "refuse", {})
    assert outside.error is not None and outside.error.code == NOT_ALLOWED
    assert run_one(registry, make_context(settings, provider="anthropic"), "echo", {"text": "x"}).ok
    globally = run_one(registry, make_context(settings, provider="local"), "boom", {})
    assert globally.error is not None and globally.error.code == NOT_ALLOWED


def test_global_allow_list(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, allow=["echo"])
    registry = make_registry(settings)
    assert [s.name for s in registry.specs()] == ["echo"]
    result = run_one(registry, make_context(settings), "move", {"x": 1, "y": 1})
    assert result.error is not None and result.error.code == NOT_ALLOWED


# --- limits ------------------------------------------------------------------------
def test_rate_limit_window(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = make_settings(tmp_path, limits={"echo": ToolLimit(max_calls=2, window_s=10)})
    registry = make_registry(settings, clock)
    ctx = make_context(settings)

    def echo() -> ToolResult:
        return run_one(registry, ctx, "echo", {"text": "a"})

    assert echo().ok
    clock.now += 4
    assert echo().ok
    clock.now += 1
    limited = echo()
    assert limited.error is not None and limited.error.code == RATE_LIMITED
    assert "2 call(s) per 10s" in limited.error.message
    assert "again in 5.0s" in limited.error.message
    assert run_one(registry, ctx, "move", {"x": 1, "y": 1}).ok  # other tools are not limited
    bad = run_one(registry, ctx, "echo", {"text": 5})  # invalid calls are not counted either
    assert bad.error is not None and bad.error.code == INVALID_PARAMS
    clock.now += 5
    assert echo().ok
    again = echo()
    assert again.error is not None and "again in 4.0s" in again.error.message


def test_cooldown(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = make_settings(tmp_path, limits={"echo": ToolLimit(cooldown_s=3)})
    registry = make_registry(settings, clock)
    ctx = make_context(settings)
    assert run_one(registry, ctx, "echo", {"text": "a"}).ok
    clock.now += 1
    limited = run_one(registry, ctx, "echo", {"text": "a"})
    assert limited.error is not None and limited.error.code == RATE_LIMITED
    assert "cooldown of 3s" in limited.error.message and "again in 2.0s" in limited.error.message
    clock.now += 2
    assert run_one(registry, ctx, "echo", {"text": "a"}).ok


# --- serialisation and events ---------------------------------------------------------
def test_calls_of_one_task_run_one_at_a_time_other_tasks_do_not_wait(settings: Settings) -> None:
    registry = make_registry(settings)
    inside: dict[str, int] = {}
    peak: dict[str, int] = {}

    async def occupy(args: TextArgs, ctx: ToolContext) -> None:
        """Stays inside until every call has started."""
        inside[ctx.task_id] = inside.get(ctx.task_id, 0) + 1
        peak[ctx.task_id] = max(peak.get(ctx.task_id, 0), inside[ctx.task_id])
        peak["all"] = max(peak.get("all", 0), sum(inside.values()))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        inside[ctx.task_id] -= 1

    registry.register("occupy", occupy, TextArgs)
    a, b = make_context(settings, "A"), make_context(settings, "B")

    async def go() -> None:
        calls = [registry.execute("occupy", {"text": str(i)}, c) for i in range(4) for c in (a, b)]
        results = await asyncio.gather(*calls)
        assert all(r.ok for r in results)

    asyncio.run(go())
    assert peak["A"] == 1 and peak["B"] == 1
    assert peak["all"] == 2


def test_events_for_every_call(settings: Settings) -> None:
    registry = make_registry(settings)
    ctx = make_context(settings)
    recorder = EventRecorder(ctx.bus)

    async def go() -> None:
        await registry.execute("move", {"x": 1, "y": 2}, ctx, call_id="c1")
        await registry.execute("nope", {"a": 1}, ctx, call_id="c2")
        await registry.execute("echo", {"text": "hi"}, ctx)

    asyncio.run(go())
    started = recorder.of(ToolCallStarted)
    finished = recorder.of(ToolCallFinished)
    assert [(e.call_id, e.tool_name) for e in started][:2] == [("c1", "move"), ("c2", "nope")]
    assert started[0].arguments == {"x": 1, "y": 2} and started[0].task_id == "t1"
    assert [e.call_id for e in finished] == [e.call_id for e in started]
    assert started[2].call_id.startswith("call-")
    assert finished[0].ok and finished[0].data == {"x": 1, "y": 2, "button": "left"}
    assert (finished[1].ok, finished[1].error_code) == (False, UNKNOWN_TOOL)
    assert finished[1].error_message is not None and "nope" in finished[1].error_message


def test_timeout_from_settings_beats_the_tools_own(tmp_path: Path) -> None:
    from jarvis.tools.policy_settings import ToolLimit

    settings = make_settings(tmp_path, timeout_s=5, limits={"slow": ToolLimit(timeout_s=0.05)})
    registry = make_registry(settings)

    async def hang(args: NoArgs, ctx: ToolContext) -> None:
        """Waits forever."""
        await asyncio.Event().wait()

    registry.register("slow", hang, NoArgs, timeout_s=3)
    result = run_one(registry, make_context(settings), "slow", {})
    assert result.error is not None and result.error.code == TIMEOUT
    assert "0.05s" in result.error.message
