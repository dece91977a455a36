"""Thousands of random and malformed calls through ToolRegistry.execute: none may raise.

Three registries are fuzzed: small test tools (with a preset), the real 14 desktop
tools, and the tools beyond the desktop (workspace files, web_fetch, a skill and a real
MCP server over stdio, on an event loop of their own). The desktop tools run against
a fixed 1920x1080 screen seen as 1280x720 and an input device that records what it
is asked to do instead of moving anything, so valid calls run the real tool code.
Every accepted call is checked: its arguments validate, and every coordinate it sent
to the input device is on the real screen.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jarvis.config import Settings
from jarvis.desktop.input import TypedText
from jarvis.events import EventRecorder, ToolCallFinished, ToolCallStarted
from jarvis.tools.audit import audit_path
from jarvis.tools.context import ToolContext
from jarvis.tools.policy_settings import ToolLimit, ToolPolicy
from jarvis.tools.presets import SHIPPED_PRESETS, Preset, load_presets, register_presets
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import (
    INTERNAL,
    INVALID_PARAMS,
    NOT_ALLOWED,
    RATE_LIMITED,
    TIMEOUT,
    UNKNOWN_TOOL,
    ToolResult,
)

CODES = {UNKNOWN_TOOL, INVALID_PARAMS, NOT_ALLOWED, RATE_LIMITED, TIMEOUT, INTERNAL}
FUZZ = settings(
    max_examples=400,  # about 4,000 calls in all
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# --- strategies ------------------------------------------------------------------------
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["", " ", "0", "-1", "1e309", "null", "ctrl+", "+", "☃", "\x00", "a" * 20_000]),
)
junk = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYISH = [
    "enter",
    "ctrl+s",
    "ctrl+shift+s",
    "alt+f4",
    "f5",
    "a",
    "Enter",
    "ctrl++",
    "nokey",
    "ctrl+nokey",
]


def value_for(prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly plausible values for one schema property, with junk mixed in."""
    options: list[st.SearchStrategy[Any]] = [junk]
    if "enum" in prop:
        options.append(st.sampled_from([*prop["enum"], "bogus"]))
    elif prop.get("type") == "integer":
        low = prop.get("minimum", -50)
        high = prop.get("maximum", 2000)
        options += [st.integers(low, min(high, 700))] * 6
        options += [st.integers(low - 5, high + 5), st.integers(low, high).map(str)]
    elif prop.get("type") == "string":
        options += [st.text(min_size=1, max_size=40), st.sampled_from(KEYISH)] * 2
    return st.one_of(options)


def arguments_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    props: dict[str, Any] = schema.get("properties", {})
    fields = {name: value_for(prop) for name, prop in props.items()}
    plausible = st.fixed_dictionaries(
        {k: v for k, v in fields.items() if k in schema.get("required", [])},
        optional={k: v for k, v in fields.items() if k not in schema.get("required", [])},
    )
    with_extra = st.builds(lambda d, k, v: {**d, k: v}, plausible, st.text(max_size=10), junk)
    options = [plausible, plausible, plausible, plausible, with_extra, junk, st.none()]
    required = list(schema.get("required", []))
    if required:  # a plausible call with one required field left out
        missing = st.builds(
            lambda d, k: {key: v for key, v in d.items() if key != k},
            plausible,
            st.sampled_from(required),
        )
        options += [missing, missing]
    return st.one_of(options)


def calls_for(registry: ToolRegistry) -> st.SearchStrategy[tuple[str, Any, str | None]]:
    specs = registry.specs()
    known = st.sampled_from(specs).flatmap(
        lambda s: st.tuples(st.just(s.name), arguments_for(s.parameters))
    )
    unknown = st.tuples(
        st.one_of(
            st.text(max_size=20),
            st.sampled_from(["", "CLICK", "click ", "__init__"]),
            st.none(),  # not even a string: a caller's bug, still a result
            st.integers(),
            st.lists(st.text(max_size=3), max_size=2),
        ),
        junk,
    )
    parse_error = st.one_of(st.none(), st.none(), st.none(), st.text(min_size=1, max_size=30))
    return st.tuples(st.one_of(known, known, known, unknown), parse_error).map(
        lambda t: (t[0][0], t[0][1], t[1])
    )


# --- driver ---------------------------------------------------------------------------
def run_calls(
    registry: ToolRegistry, ctx: ToolContext, calls: list[tuple[str, Any, str | None]]
) -> list[ToolResult]:
    async def go() -> list[ToolResult]:
        out = []
        for i, (name, args, parse_error) in enumerate(calls):
            out.append(
                await registry.execute(name, args, ctx, call_id=f"f{i}", parse_error=parse_error)
            )
        return out

    return asyncio.run(go())


def check_results(
    registry: ToolRegistry,
    ctx: ToolContext,
    calls: list[tuple[str, Any, str | None]],
    results: list[ToolResult],
) -> None:
    for (name, args, parse_error), result in zip(calls, results, strict=True):
        assert isinstance(result, ToolResult)
        json.loads(result.to_content())
        if result.ok:
            assert result.error is None
            tool = registry.get(name)
            assert tool is not None and parse_error is None
            tool.validate(args or {}, ctx)
        else:
            assert result.error is not None and result.error.code in CODES, result
            assert result.error.message
            assert result.error.code != INTERNAL, result.error.message
            if name not in registry:  # a call that could not be read: its reason, -32602
                unread = parse_error is not None
                assert result.error.code == (INVALID_PARAMS if unread else UNKNOWN_TOOL)


# --- registry of small test tools -------------------------------------------------------
class PointArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int = Field(ge=0, le=1279)
    y: int = Field(ge=0, le=719)
    button: Literal["left", "right"] = "left"


class TextArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=100)


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


def small_registry(settings_: Settings) -> ToolRegistry:
    registry = ToolRegistry(settings_)

    def point(args: PointArgs, ctx: ToolContext) -> list[int]:
        """Point."""
        return [args.x, args.y]

    async def write(args: TextArgs, ctx: ToolContext) -> int:
        """Write."""
        return len(args.text)

    async def nothing(args: NoArgs, ctx: ToolContext) -> None:
        """Nothing."""

    registry.register("point", point, PointArgs)
    registry.register("write", write, TextArgs)
    registry.register("nothing", nothing, NoArgs)
    registry.register("denied", nothing, NoArgs, "never allowed")
    preset = Preset.model_validate(
        {
            "name": "point_and_write",
            "description": "Point, then write.",
            "parameters": {
                "x": {"type": "integer", "min": 0, "max": 1279},
                "text": {"type": "string", "max_length": 200},
            },
            "steps": [
                {"tool": "point", "args": {"x": "{{x}}", "y": 5}},
                {"tool": "write", "args": {"text": "{{text}}"}},
            ],
        }
    )
    register_presets(registry, [preset])
    return registry


SMALL_SETTINGS = Settings(
    data_dir=Path("unused"),
    tools=ToolPolicy(deny=["denied"], limits={"nothing": ToolLimit(max_calls=3, window_s=60)}),
)
SMALL = small_registry(SMALL_SETTINGS)
SMALL_CALLS = st.lists(
    st.one_of(*[calls_for(SMALL)] * 4, st.just(("denied", {}, None))), min_size=1, max_size=20
)


@FUZZ
@given(calls=SMALL_CALLS)
def test_small_registry_never_raises(tmp_path: Path, calls: list[Any]) -> None:
    registry = SMALL
    assert "denied" not in registry.offered()
    ctx = ToolContext(task_id="fuzz", settings=SMALL_SETTINGS, data_dir=tmp_path)
    recorder = EventRecorder(ctx.bus)
    results = run_calls(registry, ctx, calls)
    check_results(registry, ctx, calls, results)
    started = recorder.of(ToolCallStarted)
    assert len(started) == len(recorder.of(ToolCallFinished)) >= len(calls)
    assert len([e for e in started if "." not in e.call_id]) == len(calls)
    for (name, _, _), result in zip(calls, results, strict=True):
        if name == "denied":
            assert result.error is not None and result.error.code == NOT_ALLOWED


# --- the real desktop tools ---------------------------------------------------------------
@dataclass(frozen=True)
class FixedScreen:
    """A 1920x1080 screen shown to the model at 1280x720 (the default max_side)."""

    real: Any
    model: Any

    @property
    def model_size(self) -> Any:
        return self.model

    @property
    def monitor_note(self) -> str:
        return ""

    def reachable(self, x: int, y: int) -> bool:
        return 0 <= x < self.real.width and 0 <= y < self.real.height

    def to_screen(self, x: int, y: int) -> tuple[int, int]:
        from jarvis.desktop.screen import model_to_screen

        return model_to_screen(x, y, self.model, self.real)


@dataclass
class RecordingInput:
    """An input device that records requests instead of acting (fuzzing must not type junk)."""

    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))

    def click(self, x: int, y: int) -> None:
        self._record("click", x, y)

    def double_click(self, x: int, y: int) -> None:
        self._record("double_click", x, y)

    def triple_click(self, x: int, y: int) -> None:
        self._record("triple_click", x, y)

    def right_click(self, x: int, y: int) -> None:
        self._record("right_click", x, y)

    def move(self, x: int, y: int) -> None:
        self._record("move", x, y)

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        self._record("drag", x1, y1, x2, y2)

    def scroll(self, x: int, y: int, direction: str, amount: int = 3) -> None:
        self._record("scroll", x, y, direction, amount)

    def type_text(self, text: str) -> TypedText:
        self._record("type_text", text)
        return TypedText("xdotool", len(text))

    def hotkey(self, keys: str) -> None:
        self._record("hotkey", keys)

    def press_key(self, key: str) -> None:
        self._record("press_key", key)


@pytest.fixture(scope="module")
def desktop_registry() -> ToolRegistry:
    from jarvis.tools.computer import build_registry

    # the shipped presets, except those that wait for seconds (they would only slow the fuzz)
    quick = [p for p in load_presets(SHIPPED_PRESETS) if all(s.tool != "wait" for s in p.steps)]
    assert quick
    return build_registry(Settings(data_dir=Path("unused")), presets=quick)


@pytest.fixture(scope="module")
def desktop_calls(desktop_registry: ToolRegistry) -> st.SearchStrategy[list[Any]]:
    return st.lists(calls_for(desktop_registry), min_size=1, max_size=15)


@pytest.fixture
def desktop(
    desktop_registry: ToolRegistry, tmp_path: Path
) -> tuple[ToolRegistry, ToolContext, RecordingInput]:
    from jarvis.desktop.screen import Size

    recording = RecordingInput()
    ctx = ToolContext(
        task_id="fuzz",
        settings=Settings(data_dir=tmp_path),
        data_dir=tmp_path,
        screen=FixedScreen(Size(1920, 1080), Size(1280, 720)),
        input=recording,
    )
    return desktop_registry, ctx, recording


def shorten_waits(calls: list[tuple[str, Any, str | None]]) -> list[tuple[str, Any, str | None]]:
    """A valid wait of seconds would make the fuzz slow; keep it, but in milliseconds."""
    from jarvis.tools.computer import WaitArgs

    out = []
    for name, args, parse_error in calls:
        if name == "wait":
            try:
                ms = WaitArgs.model_validate(args).ms
            except ValidationError:
                pass
            else:
                args = {"ms": ms % 15}
        out.append((name, args, parse_error))
    return out


@FUZZ
@given(data=st.data())
def test_desktop_registry_never_raises(
    desktop: tuple[ToolRegistry, ToolContext, RecordingInput],
    desktop_calls: st.SearchStrategy[list[Any]],
    data: Any,
) -> None:
    registry, ctx, recording = desktop
    recording.calls.clear()
    calls = shorten_waits(data.draw(desktop_calls))
    results = run_calls(registry, ctx, calls)
    check_results(registry, ctx, calls, results)
    for name, args in recording.calls:
        if name in (
            "click",
            "double_click",
            "triple_click",
            "right_click",
            "move",
            "drag",
            "scroll",
        ):
            coords = [a for a in args if isinstance(a, int)][: 4 if name == "drag" else 2]
            xs, ys = coords[0::2], coords[1::2]
            assert all(0 <= x < 1920 for x in xs) and all(0 <= y < 1080 for y in ys), (name, args)
    ctx.take_control()
    ctx.take_screenshot_request()


def test_the_fuzz_log_holds_one_line_per_call(
    desktop: tuple[ToolRegistry, ToolContext, RecordingInput], tmp_path: Path
) -> None:
    registry, ctx, _ = desktop
    calls: list[tuple[str, Any, str | None]] = [
        ("click", {"x": 1, "y": 1}, None),
        ("click", {"x": "one"}, None),
        ("fly", None, None),
        ("click", {}, "Unterminated string"),
    ]
    results = run_calls(registry, ctx, calls)
    assert [r.ok for r in results] == [True, False, False, False]
    assert len(audit_path(tmp_path).read_text().splitlines()) == 4


# --- the tools beyond the desktop ----------------------------------------------------------
FUZZ_SKILL = """
from pydantic import BaseModel, ConfigDict, Field
from jarvis.tools.skills import skill_tool


class CountArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    word: str = Field(min_length=1, max_length=30)
    times: int = Field(1, ge=1, le=5)


@skill_tool()
def count_letters(args: CountArgs, ctx) -> dict:
    \"\"\"Count the letters of a word.\"\"\"
    return {"letters": len(args.word) * args.times}
"""


@dataclass
class Toolbox:
    registry: ToolRegistry
    ctx: ToolContext
    loop: asyncio.AbstractEventLoop
    root: Path

    def run(self, calls: list[tuple[str, Any, str | None]]) -> list[ToolResult]:
        async def go() -> list[ToolResult]:
            return [
                await self.registry.execute(n, a, self.ctx, call_id=f"x{i}", parse_error=p)
                for i, (n, a, p) in enumerate(calls)
            ]

        return asyncio.run_coroutine_threadsafe(go(), self.loop).result(timeout=120)


@pytest.fixture(scope="module")
def toolbox(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Files, web_fetch (it can reach nothing: the channel allows only 127.0.0.1, which is
    not on the private allowlist), a skill and the demo MCP server, minus the tools that
    crash, hang or fail on purpose (denied: the fuzz sees the policy refuse them)."""
    import threading

    from jarvis.tools.files import register_file_tools
    from jarvis.tools.mcp_bridge import McpManager
    from jarvis.tools.skills import SkillManager
    from jarvis.tools.toolbox_settings import ChannelPolicy
    from jarvis.tools.web import register_web_tools
    from tests.mcp_fixtures import mcp_settings, stdio_entry, write_mcp_json

    root = tmp_path_factory.mktemp("toolbox")
    data = root / "data"
    write_mcp_json(data, {"demo": stdio_entry(root / "starts.txt")})
    (data / "skills").mkdir(parents=True)
    (data / "skills" / "count_skill.py").write_text(FUZZ_SKILL)
    settings_ = mcp_settings(data).model_copy(
        update={
            "tools": ToolPolicy(
                deny=["demo__crash", "demo__hang", "demo__fail", "demo__env_names"],
                per_channel={"fuzz": ChannelPolicy(web_hosts=["127.0.0.1"])},
            )
        }
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    registry = ToolRegistry(settings_)  # no desktop tools: they need a screen
    register_file_tools(registry)
    register_web_tools(registry, settings_.toolbox.web)
    SkillManager(settings_, registry).scan()
    manager = McpManager(settings_)
    manager.attach(registry)

    async def start() -> dict[str, bool]:
        manager.start()
        return await manager.wait_ready(20)

    assert asyncio.run_coroutine_threadsafe(start(), loop).result(30) == {"demo": True}
    ctx = ToolContext.for_task(settings_, "fuzz", channels=("fuzz",))
    yield Toolbox(registry, ctx, loop, root)
    asyncio.run_coroutine_threadsafe(manager.stop(), loop).result(30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


@pytest.fixture(scope="module")
def toolbox_calls(toolbox: Toolbox) -> st.SearchStrategy[list[Any]]:
    return st.lists(
        st.one_of(calls_for(toolbox.registry), st.just(("demo__crash", {}, None))),
        min_size=1,
        max_size=12,
    )


@settings(
    max_examples=100,  # about 650 calls, a third of them to the MCP server
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_toolbox_registry_never_raises(
    toolbox: Toolbox, toolbox_calls: st.SearchStrategy[list[Any]], data: Any
) -> None:
    names = [s.name for s in toolbox.registry.specs()]
    assert {"read_file", "write_file", "list_dir", "web_fetch", "count_letters"} <= set(names)
    assert {"demo__echo", "demo__schedule", "demo__picture"} <= set(names)
    assert "demo__crash" not in names
    outside = sorted(p.name for p in toolbox.root.iterdir())
    calls = data.draw(toolbox_calls)
    results = toolbox.run(calls)
    check_results(toolbox.registry, toolbox.ctx, calls, results)
    for (name, _, _), result in zip(calls, results, strict=True):
        if name == "demo__crash":
            assert result.error is not None and result.error.code == NOT_ALLOWED
        if name == "web_fetch" and result.error is not None:
            assert result.error.code in (NOT_ALLOWED, INVALID_PARAMS), result.error
    assert sorted(p.name for p in toolbox.root.iterdir()) == outside
    assert {p.name for p in (toolbox.root / "data").iterdir()} <= {
        "config",
        "skills",
        "workspace",
        "logs",
    }
    assert toolbox.registry.get("demo__echo") is not None  # the server never went away
