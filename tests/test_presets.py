"""Semantic presets: loaded and checked from JSON, registered as typed tools, run step by step."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from jarvis.config import Settings
from jarvis.events import EventRecorder, ToolCallFinished, ToolCallStarted
from jarvis.tools.audit import audit_path, read_audit
from jarvis.tools.context import ToolContext
from jarvis.tools.policy_settings import ToolPolicy
from jarvis.tools.presets import (
    SHIPPED_PRESETS,
    PresetError,
    load_default_presets,
    load_presets,
    register_presets,
)
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INVALID_PARAMS, NOT_ALLOWED, ToolResult


class KeyArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: Literal["super", "enter", "tab", "ctrl+l"]


class TextArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1)


class PointArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int = Field(ge=0, le=1000)
    y: int = Field(ge=0, le=1000)


def make_registry(settings: Settings) -> tuple[ToolRegistry, list[tuple[str, Any]]]:
    """Recording test tools; ``fail`` rejects its input the way a real tool would."""
    done: list[tuple[str, Any]] = []
    registry = ToolRegistry(settings)

    async def key(args: KeyArgs, ctx: ToolContext) -> None:
        """Press a key."""
        done.append(("key", args.key))

    def write(args: TextArgs, ctx: ToolContext) -> int:
        """Write text."""
        done.append(("write", args.text))
        return len(args.text)

    async def point(args: PointArgs, ctx: ToolContext) -> ToolResult | None:
        """Point somewhere; refuses the right half of the screen at run time."""
        if args.x > 500:
            return ToolResult.failure(INVALID_PARAMS, f"x: {args.x} is outside 0..500")
        done.append(("point", (args.x, args.y)))
        return None

    registry.register("key", key, KeyArgs)
    registry.register("write", write, TextArgs)
    registry.register("point", point, PointArgs)
    return registry, done


OPEN_APP = {
    "name": "open_app",
    "description": "Open an application by name.",
    "parameters": {
        "name": {
            "type": "enum",
            "description": "which application",
            "values": {"terminal": "xterm", "browser": "Firefox Web Browser"},
        }
    },
    "steps": [
        {"tool": "key", "args": {"key": "super"}},
        {"tool": "write", "args": {"text": "{{name}}"}},
        {"tool": "key", "args": {"key": "enter"}},
    ],
}
FILL = {
    "name": "fill",
    "description": "Point at a field and write text into it.",
    "parameters": {
        "x": {"type": "integer", "min": 0, "max": 1000},
        "y": {"type": "integer", "min": 0, "max": 1000},
        "text": {"type": "string", "description": "what to write", "max_length": 30},
        "then": {"type": "enum", "values": ["enter", "tab"], "default": "enter"},
    },
    "steps": [
        {"tool": "point", "args": {"x": "{{x}}", "y": "{{ y }}"}},
        {"tool": "write", "args": {"text": "value: {{text}}"}},
        {"tool": "key", "args": {"key": "{{then}}"}},
    ],
}


def write_file(tmp_path: Path, *presets: dict[str, Any]) -> Path:
    path = tmp_path / "presets.json"
    path.write_text(json.dumps({"presets": list(presets)}))
    return path


def run(registry: ToolRegistry, ctx: ToolContext, name: str, args: Any) -> ToolResult:
    return asyncio.run(registry.execute(name, args, ctx, call_id="p1"))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path)


def test_preset_schema_is_generated_from_its_parameters(tmp_path: Path, settings: Settings) -> None:
    registry, _ = make_registry(settings)
    register_presets(registry, load_presets(write_file(tmp_path, OPEN_APP, FILL)))
    specs = {s.name: s for s in registry.specs()}
    schema = specs["open_app"].parameters
    assert specs["open_app"].description == "Open an application by name."
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name"]
    assert schema["properties"]["name"]["enum"] == ["terminal", "browser"]
    assert schema["properties"]["name"]["description"] == "which application"
    fill = specs["fill"].parameters
    assert fill["required"] == ["x", "y", "text"]
    assert (fill["properties"]["x"]["minimum"], fill["properties"]["x"]["maximum"]) == (0, 1000)
    assert fill["properties"]["text"]["maxLength"] == 30
    assert fill["properties"]["then"]["default"] == "enter"


def test_preset_runs_its_steps_through_the_registry(tmp_path: Path, settings: Settings) -> None:
    registry, done = make_registry(settings)
    register_presets(registry, load_presets(write_file(tmp_path, OPEN_APP)))
    ctx = ToolContext.for_task(settings, "t1")
    recorder = EventRecorder(ctx.bus)
    result = run(registry, ctx, "open_app", {"name": "browser"})
    assert result.ok, result.error
    assert done == [("key", "super"), ("write", "Firefox Web Browser"), ("key", "enter")]
    assert [s["tool"] for s in result.data["steps"]] == ["key", "write", "key"]
    started = [(e.call_id, e.tool_name) for e in recorder.of(ToolCallStarted)]
    assert started == [("p1", "open_app"), ("p1.1", "key"), ("p1.2", "write"), ("p1.3", "key")]
    assert all(e.ok for e in recorder.of(ToolCallFinished))
    lines = read_audit(audit_path(tmp_path))
    assert [(x["call_id"], x["parent_call_id"]) for x in lines] == [
        ("p1.1", "p1"),
        ("p1.2", "p1"),
        ("p1.3", "p1"),
        ("p1", None),
    ]
    assert lines[-1]["args"] == {"name": "browser"}  # a closed set is logged verbatim


def test_substitution_keeps_types_and_interpolates_text(tmp_path: Path, settings: Settings) -> None:
    registry, done = make_registry(settings)
    register_presets(registry, load_presets(write_file(tmp_path, FILL)))
    ctx = ToolContext.for_task(settings, "t1")
    result = run(registry, ctx, "fill", {"x": 10, "y": 20, "text": "abc", "then": "tab"})
    assert result.ok, result.error
    assert done == [("point", (10, 20)), ("write", "value: abc"), ("key", "tab")]


def test_invalid_preset_arguments_are_invalid_params(tmp_path: Path, settings: Settings) -> None:
    registry, done = make_registry(settings)
    register_presets(registry, load_presets(write_file(tmp_path, OPEN_APP)))
    ctx = ToolContext.for_task(settings, "t1")
    result = run(registry, ctx, "open_app", {"name": "emacs"})
    assert result.error is not None and result.error.code == INVALID_PARAMS
    assert "name: Input should be 'terminal' or 'browser'" in result.error.message
    extra = run(registry, ctx, "open_app", {"name": "browser", "steps": []})
    assert (
        extra.error is not None and "steps: Extra inputs are not permitted" in extra.error.message
    )
    assert done == []


def test_the_first_failed_step_stops_the_preset(tmp_path: Path, settings: Settings) -> None:
    registry, done = make_registry(settings)
    register_presets(registry, load_presets(write_file(tmp_path, FILL)))
    ctx = ToolContext.for_task(settings, "t1")
    result = run(registry, ctx, "fill", {"x": 900, "y": 20, "text": "abc"})
    assert result.error is not None and result.error.code == INVALID_PARAMS
    assert result.error.message == "step 1 of 3 (point) failed: x: 900 is outside 0..500"
    assert done == []


def test_policy_applies_to_presets_and_their_steps(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, tools=ToolPolicy(deny=["write"]))
    registry, done = make_registry(settings)
    register_presets(registry, load_presets(write_file(tmp_path, OPEN_APP)))
    assert "open_app" not in {s.name for s in registry.specs()}
    result = run(registry, ToolContext.for_task(settings, "t1"), "open_app", {"name": "terminal"})
    assert result.error is not None and result.error.code == NOT_ALLOWED
    assert "'write'" in result.error.message
    assert done == []


def broken(**changes: Any) -> dict[str, Any]:
    preset = json.loads(json.dumps(OPEN_APP))
    preset.update(changes)
    return preset


@pytest.mark.parametrize(
    ("preset", "expected"),
    [
        (
            broken(parameters={}, steps=[{"tool": "teleport", "args": {}}]),
            "step 1 uses unknown tool 'teleport'",
        ),
        (
            broken(
                parameters={"name": {"type": "enum", "values": {"terminal": "xterm"}}},
                steps=[{"tool": "key", "args": {"key": "{{name}}"}}],
            ),
            "step 1 (key) with name='terminal': key: Input should be",
        ),
        (
            broken(steps=[{"tool": "write", "args": {"text": "{{nam}}"}}]),
            "undeclared parameter(s): nam",
        ),
        (broken(steps=[{"tool": "key", "args": {"key": "enter"}}]), "never used: name"),
        (broken(parameters={"name": {"type": "enum", "values": []}}), "non-empty 'values'"),
        (broken(steps=[]), "steps: List should have at least 1 item"),
        (
            broken(parameters={}, steps=[{"tool": "key", "args": {"key": "enter", "speed": 2}}]),
            "step 1 (key): speed: Extra inputs are not permitted",
        ),
        (broken(name="open app"), "name: String should match pattern"),
        (broken(shortcut="ctrl+o"), "preset 'open_app': shortcut: Extra inputs"),
        (broken(name="key"), "preset 'key': the name is already taken by a tool"),
    ],
)
def test_bad_presets_name_the_file_and_the_preset(
    tmp_path: Path, settings: Settings, preset: dict[str, Any], expected: str
) -> None:
    registry, _ = make_registry(settings)
    path = write_file(tmp_path, preset)
    with pytest.raises(PresetError) as info:
        register_presets(registry, load_presets(path))
    message = str(info.value)
    assert message.startswith(f"presets file {path}")
    assert expected in message
    assert "open_app" in message or "'key'" in message or "open app" in message


def test_bad_files(tmp_path: Path, settings: Settings) -> None:
    registry, _ = make_registry(settings)
    path = tmp_path / "presets.json"
    path.write_text('{"presets": [')
    with pytest.raises(PresetError, match=r"presets\.json: not valid JSON \(line 1"):
        load_presets(path)
    path.write_text(json.dumps({"presets": [OPEN_APP, OPEN_APP]}))
    with pytest.raises(PresetError, match="preset 'open_app': defined twice"):
        load_presets(path)
    with pytest.raises(PresetError, match="cannot be read"):
        load_presets(tmp_path / "missing.json")
    nested = broken(name="twice", steps=[{"tool": "open_app", "args": {"name": "browser"}}])
    nested["parameters"] = {}
    register_presets(registry, load_presets(write_file(tmp_path, OPEN_APP)))
    with pytest.raises(PresetError, match="uses 'open_app', which is itself a preset"):
        register_presets(registry, load_presets(write_file(tmp_path, nested)))


def test_which_presets_file_is_used(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shipped = load_default_presets(Settings(data_dir=data))
    assert SHIPPED_PRESETS.is_file()
    assert [p.name for p in shipped] == [p.name for p in load_presets(SHIPPED_PRESETS)]
    own = data / "config" / "presets.json"
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps({"presets": [FILL]}))
    assert [p.name for p in load_default_presets(Settings(data_dir=data))] == ["fill"]
    chosen = write_file(tmp_path, OPEN_APP)
    picked = load_default_presets(Settings(data_dir=data, presets_file=chosen))
    assert [p.name for p in picked] == ["open_app"]
    with pytest.raises(PresetError, match="cannot be read"):
        load_default_presets(Settings(data_dir=data, presets_file=tmp_path / "nope.json"))


def test_shipped_presets_register_on_the_real_desktop_tools(tmp_path: Path) -> None:
    from jarvis.tools.computer import build_registry

    registry = build_registry(Settings(data_dir=tmp_path / "empty"))
    shipped = {p.name for p in load_presets(SHIPPED_PRESETS)}
    assert {"open_app", "open_url", "replace_field_text", "find_in_page"} <= shipped
    assert shipped <= set(registry.offered())
    open_app = registry.get("open_app")
    assert open_app is not None
    assert set(open_app.requires) == {"hotkey", "wait", "type", "press_key"}
    assert open_app.parameters["properties"]["app"]["enum"][:2] == ["terminal", "browser"]
    bare = build_registry(Settings(data_dir=tmp_path), presets=[])
    assert len(bare.names) == 14  # the desktop tools (triple_click is the 14th)
    from_file = build_registry(Settings(data_dir=tmp_path), presets=write_file(tmp_path, FILL2))
    assert from_file.names[14:] == ["fill2"]


FILL2 = {
    "name": "fill2",
    "description": "Click a field and type.",
    "parameters": {"x": {"type": "integer"}, "y": {"type": "integer"}, "text": {"type": "string"}},
    "steps": [
        {"tool": "click", "args": {"x": "{{x}}", "y": "{{y}}"}},
        {"tool": "type", "args": {"text": "{{text}}"}},
    ],
}
