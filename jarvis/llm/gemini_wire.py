"""Our conversation as Gemini ``contents``, and a Gemini answer as our tool calls.

The request (google-genai ``types``): the system prompt as ``system_instruction``; user
turns of text and ``inline_data`` images; our tools as ``function_declarations`` and, for
a computer-use profile, ``Tool(computer_use=ComputerUse(environment=BROWSER,
excluded_predefined_functions=...))`` in place of the mouse and keyboard tools.

Each model turn comes back as it was sent: every call mapped from it keeps the turn's
parts in ``origin`` (thought signatures included), and its results go back as one
``function_response`` per function call, named like it, with ``{"output": ...}`` or
``{"error": ...}``, the screenshot taken after it as ``inline_data`` in the response's
``parts``, and ``safety_acknowledgement: "true"`` when a person confirmed a
``safety_decision`` (github google/computer-use-preview, ``agent.py``).
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from google.genai import types

from jarvis.geometry import CoordSpace, Size
from jarvis.llm.base import NOT_RUN
from jarvis.llm.computer_tool import COMPUTER_TOOL_NAMES
from jarvis.llm.gemini_actions import EXCLUDED, PREDEFINED, map_action
from jarvis.llm.openai_actions import SafetyCheck
from jarvis.llm.placer import Placer
from jarvis.llm.types import ImagePart, Message, TextPart, ToolCall, ToolResultPart, ToolSpec

log = logging.getLogger(__name__)
GEMINI = "gemini"
"""``origin["name"]`` of calls mapped from a Gemini function call."""
ALLOWED = ("", "allowed", "regular")

Approver = Callable[[SafetyCheck], Awaitable[bool | str]]


# --- request --------------------------------------------------------------------------


def _first_image(message: Message | None) -> ImagePart | None:
    if message is None:
        return None
    return next((p for p in message.content if isinstance(p, ImagePart)), None)


def _blob(image: ImagePart) -> bytes:
    return base64.b64decode(image.data_b64)


Calls = dict[str, str]
"""Our call id -> the key of the function call it was mapped from."""
Natives = dict[str, dict[str, Any]]
"""The key of a function call -> what its response needs (name, id, acknowledgement)."""


def _model_turn(message: Message, calls: Calls, natives: Natives) -> types.Content:
    """The model's turn as it sent it (from ``origin``), else from our message."""
    parts: list[types.Part] = []
    turn_sent = False
    for call in message.tool_calls:
        origin = call.origin
        if origin is not None and origin.get("name") == GEMINI:
            info = origin["input"]
            key = str(origin["id"])
            natives.setdefault(key, info)
            calls[call.id] = key
            if not turn_sent:
                parts += [types.Part.model_validate(p) for p in info["turn"]]
                turn_sent = True
            continue
        calls[call.id] = call.id
        natives[call.id] = {"call": call.name, "model_id": call.id}
        parts.append(
            types.Part(
                function_call=types.FunctionCall(id=call.id, name=call.name, args=call.arguments)
            )
        )
    if not turn_sent and message.text.strip():
        parts.insert(0, types.Part(text=message.text.strip()))
    return types.Content(role="model", parts=parts)


def _response(info: dict[str, Any], results: list[ToolResultPart]) -> dict[str, Any]:
    failed = [r for r in results if not r.ok]
    text = "\n".join(r.content for r in (failed or results) if r.content) or "done"
    body: dict[str, Any] = {"error": text} if failed else {"output": text}
    if info.get("acknowledged"):
        body["safety_acknowledgement"] = "true"
    return body


def _screenshot(image: ImagePart) -> list[types.FunctionResponsePart]:
    blob = types.FunctionResponseBlob(mime_type=image.media_type, data=_blob(image))
    return [types.FunctionResponsePart(inline_data=blob)]


def _user_turn(message: Message, calls: Calls, natives: Natives) -> types.Content:
    image = _first_image(message)
    groups: dict[str, list[ToolResultPart]] = {key: [] for key in natives}
    other: list[types.Part] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            key = calls.get(part.call_id)
            if key is None:  # a result for no call of the last turn: say it as text
                state = "ok" if part.ok else "failed"
                other.append(types.Part(text=f"[{part.name}: {state}] {part.content}"))
            else:
                groups[key].append(part)
        elif isinstance(part, TextPart) and part.text:
            other.append(types.Part(text=part.text))
        elif isinstance(part, ImagePart) and not (part is image and groups):
            other.append(types.Part.from_bytes(data=_blob(part), mime_type=part.media_type))
    responses: list[types.Part] = []
    for i, (key, results) in enumerate(groups.items()):
        info = natives[key]
        body = _response(info, results) if results else {"error": NOT_RUN}
        last = i == len(groups) - 1  # the screenshot shows the screen after the last call
        response = types.FunctionResponse(
            id=info.get("model_id"),
            name=info["call"],
            response=body,
            parts=_screenshot(image) if image is not None and last else None,
        )
        responses.append(types.Part(function_response=response))
    return types.Content(role="user", parts=responses + other)


def to_contents(messages: list[Message]) -> list[types.Content]:
    """Our conversation as Gemini contents (pure)."""
    contents: list[types.Content] = []
    calls: Calls = {}
    natives: Natives = {}
    for message in messages:
        if message.role == "assistant":
            calls, natives = {}, {}
            contents.append(_model_turn(message, calls, natives))
        else:
            contents.append(_user_turn(message, calls, natives))
            calls, natives = {}, {}
    return [c for c in contents if c.parts]


def build_tools(tools: list[ToolSpec], computer: bool) -> list[types.Tool]:
    """The computer-use tool (when ``computer`` and a desktop tool is offered) and our
    other tools as function declarations."""
    use = computer and any(t.name in COMPUTER_TOOL_NAMES for t in tools)
    out: list[types.Tool] = []
    if use:
        out.append(
            types.Tool(
                computer_use=types.ComputerUse(
                    environment=types.Environment.ENVIRONMENT_BROWSER,
                    excluded_predefined_functions=list(EXCLUDED),
                )
            )
        )
    offered = [t for t in tools if not (use and t.name in COMPUTER_TOOL_NAMES)]
    if offered:
        out.append(
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=t.name, description=t.description, parameters_json_schema=t.parameters
                    )
                    for t in offered
                ]
            )
        )
    return out


# --- response -------------------------------------------------------------------------


def _check(call: types.FunctionCall, native: str) -> SafetyCheck | None:
    decision = (call.args or {}).get("safety_decision")
    if not isinstance(decision, dict):
        return None
    kind = str(decision.get("decision") or "")
    if kind.lower() in ALLOWED:
        return None
    return SafetyCheck(
        id=native,
        code=kind,
        message=str(decision.get("explanation") or ""),
        call_id=native,
        actions=(str(call.name),),
        vendor="Gemini",
    )


async def read_calls(
    parts: list[types.Part], approve: Approver, space: CoordSpace, image: Size, computer: bool
) -> list[ToolCall]:
    """Our tool calls for the function calls of a model turn; safety decisions go to
    ``approve`` first (a call not approved becomes ``call_user``: a person decides)."""
    turn = [p.model_dump(mode="json", exclude_none=True) for p in parts]
    calls: list[ToolCall] = []
    for part in parts:
        fc = part.function_call
        if fc is None:
            continue
        name = str(fc.name or "")
        native = fc.id or f"gemini_{uuid.uuid4().hex[:12]}"
        args = {k: v for k, v in (fc.args or {}).items() if k != "safety_decision"}
        check = _check(fc, native)
        info = {"turn": turn, "call": name, "model_id": fc.id, "acknowledged": False}
        origin = {"id": native, "name": GEMINI, "input": info}
        if check is not None:
            verdict = await approve(check)
            if verdict is not True:
                log.warning("not approved: %s", check.describe())
                why = f" ({verdict})" if isinstance(verdict, str) and verdict else ""
                text = f"{check.describe()}. It was not approved{why}, so the action did not run."
                message = {"message": text[:4000]}
                calls.append(
                    ToolCall(id=native, name="call_user", arguments=message, origin=origin)
                )
                continue
            info["acknowledged"] = True
        if not (computer and name in PREDEFINED):
            calls.append(ToolCall(id=native, name=name, arguments=args, origin=origin))
            continue
        placer = Placer(space, image)
        try:
            mapped = map_action(name, args, space, image, placer)
        except ValueError as exc:
            calls.append(
                ToolCall(id=native, name=name, arguments=args, parse_error=str(exc), origin=origin)
            )
            continue
        calls += placer.annotate(
            [
                ToolCall(
                    id=native if len(mapped) == 1 else f"{native}_{i + 1}",
                    name=tool,
                    arguments=arguments,
                    origin=origin,
                )
                for i, (tool, arguments) in enumerate(mapped)
            ]
        )
    return calls
