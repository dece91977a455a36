"""Semantic presets: named, typed tools defined in a JSON file, not in code.

A preset expands to a short sequence of atomic tool calls with ``{{param}}``
placeholders, e.g. ``open_app(name)`` presses the launcher key, types the
application's name (looked up from an enum map) and presses Enter::

    {"presets": [{
      "name": "open_app",
      "description": "Open an application by name with the desktop's launcher.",
      "parameters": {"name": {"type": "enum", "description": "the application",
                              "values": {"terminal": "Terminal", "browser": "Firefox"}}},
      "steps": [{"tool": "hotkey", "args": {"keys": "super"}},
                {"tool": "type", "args": {"text": "{{name}}"}},
                {"tool": "press_key", "args": {"key": "enter"}}]}]}

Parameter types: ``enum`` (``values`` is a list of choices, or a map from the
choice the model sees to the value substituted), ``string`` and ``integer``. A
value that is exactly ``"{{p}}"`` is replaced by the typed value (an integer
stays an integer); elsewhere placeholders are interpolated as text.

Presets are checked when loaded: every step names an existing atomic tool, its
arguments validate against that tool's model for sample values of every
parameter, every placeholder is a declared parameter and every parameter is
used. A bad file raises :class:`PresetError` naming the file and the preset.
Registered presets run their steps through the registry, so policy, limits,
audit and events apply to each step; the first failed step stops the preset. A preset
moves input, needs the screen to settle or ends the step when one of its steps does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    create_model,
    model_validator,
)

from jarvis.config import Settings
from jarvis.shipped import shipped
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import Tool, ToolRegistry, current_call_id
from jarvis.tools.results import ToolResult
from jarvis.tools.schema import describe_validation_error

SHIPPED_PRESETS = shipped("data/config/presets.json")
DEFAULT_PRESETS = Path("config") / "presets.json"
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NAME = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"


class PresetError(Exception):
    """A presets file or one of its presets is invalid; the message names both."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Param(_Strict):
    type: Literal["enum", "string", "integer"]
    description: str = ""
    values: list[str] | dict[str, str | int] | None = None
    default: str | int | None = None
    min: int | None = None
    max: int | None = None
    max_length: int = Field(200, ge=1, le=10_000)

    @model_validator(mode="after")
    def _consistent(self) -> Param:
        if self.type == "enum":
            if not self.values:
                raise ValueError("an enum parameter needs a non-empty 'values' list or map")
            if self.default is not None and self.default not in self.choices:
                raise ValueError(f"default {self.default!r} is not one of {self.choices}")
        elif self.values is not None:
            raise ValueError("'values' is only for enum parameters")
        if self.type == "integer":
            if self.min is not None and self.max is not None and self.min > self.max:
                raise ValueError(f"min {self.min} is greater than max {self.max}")
            if self.default is not None and not isinstance(self.default, int):
                raise ValueError("the default of an integer parameter must be an integer")
        if self.type == "string" and self.default is not None and not isinstance(self.default, str):
            raise ValueError("the default of a string parameter must be a string")
        return self

    @property
    def choices(self) -> list[str]:
        return list(self.values) if self.values else []

    def substitute(self, value: Any) -> Any:
        """The value put into steps for the value the model chose."""
        if self.type == "enum" and isinstance(self.values, dict):
            return self.values[value]
        return value

    def samples(self) -> list[Any]:
        """Values (as the model would send them) that loading validates the steps with."""
        if self.type == "enum":
            return self.choices
        if self.type == "integer":
            low = self.min if self.min is not None else 0
            return [low] if self.max is None or self.max == low else [low, self.max]
        return [self.default if isinstance(self.default, str) and self.default else "a"]

    def annotation(self) -> Any:
        if self.type == "enum":
            return Literal[tuple(self.choices)]
        if self.type == "integer":
            return Annotated[int, Field(ge=self.min, le=self.max)]
        return Annotated[str, Field(min_length=1, max_length=self.max_length)]


class Step(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Preset(_Strict):
    name: str = Field(pattern=_NAME)
    description: str = Field(min_length=1)
    parameters: dict[str, Param] = Field(default_factory=dict)
    steps: list[Step] = Field(min_length=1, max_length=20)
    _source: str = PrivateAttr(default="")

    @model_validator(mode="after")
    def _placeholders(self) -> Preset:
        for name in self.parameters:
            if not re.match(_NAME, name):
                raise ValueError(f"parameter name {name!r} must be an identifier")
        used = {p for step in self.steps for p in _placeholders_in(step.args)}
        missing = sorted(used - set(self.parameters))
        if missing:
            raise ValueError(f"steps use undeclared parameter(s): {', '.join(missing)}")
        unused = sorted(set(self.parameters) - used)
        if unused:
            raise ValueError(f"parameter(s) declared but never used: {', '.join(unused)}")
        return self

    @property
    def where(self) -> str:
        return f"presets file {self._source or '(in code)'}: preset '{self.name}'"

    def args_model(self) -> type[BaseModel]:
        fields: dict[str, Any] = {}
        for name, param in self.parameters.items():
            default = ... if param.default is None else param.default
            fields[name] = (param.annotation(), Field(default, description=param.description))
        return create_model(f"{self.name}_args", __config__=ConfigDict(extra="forbid"), **fields)

    def expand(self, values: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The (tool, arguments) calls for the model's parameter values."""
        mapped = {k: self.parameters[k].substitute(v) for k, v in values.items()}
        return [(step.tool, _substitute(step.args, mapped)) for step in self.steps]


class PresetFile(_Strict):
    presets: list[Preset] = Field(default_factory=list)


def _placeholders_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield from _PLACEHOLDER.findall(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _placeholders_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _placeholders_in(item)


def _substitute(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), value)
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    return value


# --- loading -------------------------------------------------------------------------
def load_presets(path: Path) -> list[Preset]:
    """Parse and check the structure of a presets file (tools are checked on registration)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PresetError(f"presets file {path}: cannot be read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise PresetError(
            f"presets file {path}: not valid JSON (line {exc.lineno}, column {exc.colno}): "
            f"{exc.msg}"
        ) from exc
    try:
        parsed = PresetFile.model_validate(raw)
    except ValidationError as exc:
        raise PresetError(f"presets file {path}: {_describe_file_error(raw, exc)}") from exc
    seen: set[str] = set()
    for preset in parsed.presets:
        preset._source = str(path)
        if preset.name in seen:
            raise PresetError(f"{preset.where}: defined twice")
        seen.add(preset.name)
    return parsed.presets


def _describe_file_error(raw: Any, exc: ValidationError) -> str:
    """Name the preset an error is in (by its name when it has one)."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = list(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if len(loc) >= 2 and loc[0] == "presets" and isinstance(loc[1], int):
            entries = raw.get("presets") if isinstance(raw, dict) else None
            entry = entries[loc[1]] if isinstance(entries, list) else None
            name = entry.get("name") if isinstance(entry, dict) else None
            label = f"preset '{name}'" if isinstance(name, str) else f"preset #{loc[1] + 1}"
            field = ".".join(str(p) for p in loc[2:]) or "(preset)"
            problems.append(f"{label}: {field}: {msg}")
        else:
            problems.append(f"{'.'.join(str(p) for p in loc) or '(top level)'}: {msg}")
    return "; ".join(problems)


def load_default_presets(settings: Settings) -> list[Preset]:
    """``settings.presets_file`` if set (it must exist), else ``DATA/config/presets.json``,
    else the presets shipped with the repository, else none."""
    if settings.presets_file is not None:
        return load_presets(settings.presets_file)
    for candidate in (settings.data_dir / DEFAULT_PRESETS, SHIPPED_PRESETS):
        if candidate.is_file():
            return load_presets(candidate)
    return []


# --- checking and registering -------------------------------------------------------
def check_preset(preset: Preset, registry: ToolRegistry) -> None:
    """Raise PresetError unless every step is an atomic tool whose arguments validate."""
    for index, step in enumerate(preset.steps, 1):
        tool = registry.get(step.tool)
        if tool is None:
            raise PresetError(f"{preset.where}: step {index} uses unknown tool '{step.tool}'")
        if tool.requires:
            raise PresetError(
                f"{preset.where}: step {index} uses '{step.tool}', which is itself a preset"
            )
    for values in _sample_sets(preset):
        for index, (name, args) in enumerate(preset.expand(values), 1):
            tool = registry.get(name)
            assert tool is not None
            if tool.args_model is None:  # a JSON-schema tool: checked when the step runs
                continue
            try:
                tool.args_model.model_validate(args)
            except ValidationError as exc:
                shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
                with_values = f" with {shown}" if shown else ""
                raise PresetError(
                    f"{preset.where}: step {index} ({name}){with_values}: "
                    f"{describe_validation_error(exc)}"
                ) from exc


def _sample_sets(preset: Preset) -> list[dict[str, Any]]:
    """Every sample of each parameter, the others held at their first sample."""
    base = {name: param.samples()[0] for name, param in preset.parameters.items()}
    sets = [base]
    for name, param in preset.parameters.items():
        sets.extend(base | {name: sample} for sample in param.samples()[1:])
    return sets


def register_presets(registry: ToolRegistry, presets: Sequence[Preset]) -> list[Tool]:
    """Check each preset against ``registry`` and register it as a tool."""
    tools = []
    for preset in presets:
        if preset.name in registry:
            raise PresetError(f"{preset.where}: the name is already taken by a tool")
        check_preset(preset, registry)
        steps = [t for s in preset.steps if (t := registry.get(s.tool)) is not None]
        timeout = sum(registry.timeout_for(t) for t in steps)
        tools.append(
            registry.register(
                preset.name,
                _runner(preset, registry),
                preset.args_model(),
                preset.description,
                timeout_s=timeout,
                requires=tuple(dict.fromkeys(s.tool for s in preset.steps)),
                moves_input=any(t.moves_input for t in steps),
                settles=any(t.settles for t in steps),
                control=any(t.control for t in steps),
            )
        )
    return tools


def _runner(preset: Preset, registry: ToolRegistry) -> Any:
    async def run(args: BaseModel, ctx: ToolContext) -> ToolResult:
        parent = current_call_id.get() or preset.name
        calls = preset.expand(args.model_dump())
        done: list[dict[str, Any]] = []
        for index, (name, step_args) in enumerate(calls, 1):
            result = await registry.execute(name, step_args, ctx, call_id=f"{parent}.{index}")
            if result.error is not None:
                return ToolResult.failure(
                    result.error.code,
                    f"step {index} of {len(calls)} ({name}) failed: {result.error.message}",
                )
            done.append({"tool": name, "data": result.data})
        return ToolResult.success({"preset": preset.name, "steps": done})

    run.__doc__ = preset.description
    return run
