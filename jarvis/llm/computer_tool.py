"""Claude's native ``computer`` tool: its definition and its actions as our tool calls.

With ``native_computer_tool`` the Anthropic adapter offers Claude's own computer tool in
place of our mouse/keyboard tools, sized to the latest screenshot (the space the model's
coordinates live in). Each action Claude sends is mapped back onto our tool calls
(:func:`computer_action_to_calls`), so the same executors run; each mapped call keeps the
native call in ``origin`` so the history goes back to Claude as the tool_use it was.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from PIL import Image

from jarvis.llm.types import ImagePart, Message, ToolCall, ToolSpec

COMPUTER_TOOL_NAME = "computer"
COMPUTER_TOOL_TYPE = "computer_20250124"
BETA_HEADER = "computer-use-2025-01-24"
NEW_TOOL_TYPE = "computer_20251124"
# Anthropic computer-use docs (tool versions): computer_20251124 with the
# computer-use-2025-11-24 beta for Opus 4.5 and later and Sonnet 4.6 (it adds `zoom`
# behind enable_zoom); computer_20250124 with computer-use-2025-01-24 for Sonnet 4.5,
# Haiku 4.5, Opus 4.1, Opus 4 and Sonnet 4. The installed SDK's
# anthropic.types.beta.BetaToolComputerUse20251124Param has the fields.
BETA_HEADERS = {COMPUTER_TOOL_TYPE: BETA_HEADER, NEW_TOOL_TYPE: "computer-use-2025-11-24"}
_NEW_TOOL_MODELS = (
    "claude-opus-4-5",
    "claude-opus-4-6",
    "claude-opus-5",
    "claude-sonnet-4-6",
    "claude-sonnet-5",
    "claude-haiku-5",
)
# our tools that the computer tool stands in for
_POINTER_TOOLS = {
    "click",
    "double_click",
    "triple_click",
    "right_click",
    "mouse_move",
    "drag",
    "scroll",
}
COMPUTER_TOOL_NAMES = frozenset(
    _POINTER_TOOLS | {"type", "hotkey", "press_key", "wait", "screenshot", "zoom"}
)
GRAMMAR_TOOL_NAMES = frozenset({"key_down", "key_up", "middle_click", "scroll_here"})
"""Tools only the grammar profiles reach (:mod:`jarvis.tools.grammar_tools`): never
offered to a model as tools of their own."""
_POINT_ACTIONS = {
    "left_click": "click",
    "double_click": "double_click",
    "right_click": "right_click",
    "mouse_move": "mouse_move",
}


def tool_version(model: str, override: str | None = None) -> str:
    """The computer tool type for ``model`` (the table above), or ``override``."""
    if override:
        if override not in BETA_HEADERS:
            raise ValueError(f"unknown computer tool version {override!r}")
        return override
    name = model.strip().lower().rsplit("/", 1)[-1]
    return NEW_TOOL_TYPE if name.startswith(_NEW_TOOL_MODELS) else COMPUTER_TOOL_TYPE


def zoom_enabled(model: str, native: bool, override: str | None = None) -> bool:
    """Whether Claude's computer tool is in use in a version with ``zoom``."""
    return native and tool_version(model, override) == NEW_TOOL_TYPE


def computer_tool_definition(
    width: int, height: int, version: str = COMPUTER_TOOL_TYPE
) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "type": version,
        "name": COMPUTER_TOOL_NAME,
        "display_width_px": width,
        "display_height_px": height,
    }
    if version == NEW_TOOL_TYPE:
        tool["enable_zoom"] = True
    return tool


def display_size(messages: list[Message]) -> tuple[int, int] | None:
    """Pixel size of the most recent image: the space the model's coordinates live in."""
    for message in reversed(messages):
        for part in reversed(message.content):
            if isinstance(part, ImagePart):
                with Image.open(io.BytesIO(base64.b64decode(part.data_b64))) as image:
                    return image.size
    return None


class _Unmappable(ValueError):
    pass


def _point(value: Any, what: str) -> tuple[int, int]:
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return round(value[0]), round(value[1])
    raise _Unmappable(f"{what} must be [x, y], got {value!r}")


def _map_action(action: str, data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(tool name, arguments) pairs for one computer action; raises _Unmappable."""
    if action in _POINT_ACTIONS:
        if data.get("text"):
            raise _Unmappable(f"holding keys ({data['text']}) during {action} is not supported")
        x, y = _point(data.get("coordinate"), "coordinate")
        return [(_POINT_ACTIONS[action], {"x": x, "y": y})]
    if action == "left_click_drag":
        sx, sy = _point(data.get("start_coordinate"), "start_coordinate")
        ex, ey = _point(data.get("coordinate"), "coordinate")
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if action == "type":
        return [("type", {"text": str(data.get("text", ""))})]
    if action == "key":
        keys = str(data.get("text", "")).split()
        if not keys:
            raise _Unmappable("key needs text, e.g. 'ctrl+s' or 'Return'")
        return [
            ("hotkey", {"keys": k}) if "+" in k.strip("+") else ("press_key", {"key": k})
            for k in keys
        ]
    if action == "scroll":
        x, y = _point(data.get("coordinate"), "coordinate")
        args: dict[str, Any] = {"x": x, "y": y, "direction": data.get("scroll_direction", "down")}
        if data.get("scroll_amount") is not None:
            args["amount"] = int(data["scroll_amount"])
        return [("scroll", args)]
    if action == "wait":
        return [("wait", {"ms": round(float(data.get("duration", 1)) * 1000)})]
    if action == "screenshot":
        return [("screenshot", {})]
    if action == "zoom":
        region = data.get("region")
        if not isinstance(region, list | tuple) or len(region) != 4:
            raise _Unmappable(f"zoom needs region [x0, y0, x1, y1], got {region!r}")
        x0, y0 = _point(region[:2], "region")
        x1, y1 = _point(region[2:], "region")
        return [("zoom", {"x1": x0, "y1": y0, "x2": x1, "y2": y1})]
    raise _Unmappable(
        f"computer action {action!r} is not supported here; use left_click, double_click, "
        "right_click, mouse_move, left_click_drag, type, key, scroll, wait or screenshot"
    )


def computer_action_to_calls(input: dict[str, Any], call_id: str = "computer") -> list[ToolCall]:
    """Our tool calls for one action of Claude's computer tool (pure).

    Each call remembers the native call in ``origin`` so the history goes back to Claude
    as the computer tool_use it was. An action we cannot run becomes one call with
    ``parse_error`` set, which the agent reports back to the model.
    """
    origin = {"id": call_id, "name": COMPUTER_TOOL_NAME, "input": input}
    try:
        mapped = _map_action(str(input.get("action", "")), input)
    except (_Unmappable, TypeError, ValueError) as exc:
        return [
            ToolCall(
                id=call_id,
                name=COMPUTER_TOOL_NAME,
                arguments=input,
                parse_error=str(exc),
                origin=origin,
            )
        ]
    return [
        ToolCall(
            id=call_id if len(mapped) == 1 else f"{call_id}_{i + 1}",
            name=name,
            arguments=arguments,
            origin=origin,
        )
        for i, (name, arguments) in enumerate(mapped)
    ]


def computer_tools(
    tools: list[ToolSpec], messages: list[Message], native: bool, version: str = COMPUTER_TOOL_TYPE
) -> tuple[list[dict[str, Any]], bool]:
    """Anthropic ``tools`` for a request, and whether Claude's computer tool is among them.

    The computer tool replaces the tools it stands in for when ``native`` is on, one of
    those is offered and there is a screenshot to take the display size from.
    """
    size = display_size(messages) if native else None
    if size is not None and any(t.name in COMPUTER_TOOL_NAMES for t in tools):
        rest = [t.to_anthropic() for t in tools if t.name not in COMPUTER_TOOL_NAMES]
        return [computer_tool_definition(*size, version), *rest], True
    return [t.to_anthropic() for t in tools], False
