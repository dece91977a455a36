"""OpenAI's Responses API with its ``computer`` tool: the second OpenAI adapter.

Chosen by the ``openai-computer`` profile (computer-use-preview, gpt-5.4). The request
carries the conversation as input items (stateless: the context policy decides what the
model sees): our tools as ``function`` tools, and in place of the mouse and keyboard tools
the GA ``computer`` tool (``{"type": "computer"}``) or, for ``computer-use-preview``, the
``computer_use_preview`` tool with the display size. The answer's ``computer_call``
items become our tool calls (:mod:`jarvis.llm.openai_actions`); each keeps its item in
``origin``, so the next request sends it back with a ``computer_call_output`` holding
the screenshot taken after it and the ``acknowledged_safety_checks``. A call with
``pending_safety_checks`` runs only when the approver approved every check; otherwise
it becomes a ``call_user`` call (a person has to decide).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from typing import Any, Unpack

import openai

from jarvis.geometry import PIXELS, Size
from jarvis.llm.base import (
    NOT_RUN,
    AdapterBase,
    Connection,
    ProviderError,
    connection_error,
    parse_arguments,
    status_error,
)
from jarvis.llm.computer_tool import COMPUTER_TOOL_NAMES, display_size
from jarvis.llm.openai import KEY_ENV, URL_ENV, openai_client
from jarvis.llm.openai_actions import (
    COMPUTER,
    Approver,
    call_actions,
    deny_unattended,
    map_action,
    pending_checks,
)
from jarvis.llm.placer import Placer
from jarvis.llm.retry import error_text
from jarvis.llm.text_mode import call_events
from jarvis.llm.types import (
    ImagePart,
    LLMRequest,
    LLMResponse,
    Message,
    ResponseDone,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCall,
    ToolResultPart,
)
from jarvis.usage import Usage

log = logging.getLogger(__name__)
_CALL_FIELDS = ("type", "id", "call_id", "action", "actions", "pending_safety_checks", "status")


# --- request ------------------------------------------------------------------------


def _first_image(message: Message | None) -> ImagePart | None:
    if message is None:
        return None
    return next((p for p in message.content if isinstance(p, ImagePart)), None)


def _assistant_items(
    message: Message, screenshot: ImagePart | None, origin_of: dict[str, str], acks: dict
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text = message.text
    seen: set[str] = set()
    for call in message.tool_calls:
        origin = call.origin
        if origin is not None and origin.get("name") == COMPUTER:
            native = str(origin["id"])
            if screenshot is None:  # its screenshot was pruned: say what was done, as text
                origin_of[call.id] = ""  # its result goes back as text too
                done = call_actions(origin["input"]["item"])
                text += f"\n[computer call {native}: {json.dumps(done)}]"
                continue
            origin_of[call.id] = native
            if native not in seen:
                seen.add(native)
                items += origin["input"].get("reasoning", [])
                items.append(origin["input"]["item"])
                acks[native] = origin["input"].get("acknowledged", [])
            continue
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": json.dumps(call.arguments, ensure_ascii=False),
            }
        )
    if text.strip():
        items.insert(0, {"role": "assistant", "content": text.strip()})
    return items


def _said(part: ToolResultPart) -> str:
    """What a computer call's result tells the model beyond its screenshot: the error of a
    failed call, or the note of a point moved onto the screen's edge."""
    if not part.ok:
        return f"failed: {part.content}"
    try:
        data = json.loads(part.content).get("data")
    except (ValueError, AttributeError):
        return ""
    return str(data["note"]) if isinstance(data, dict) and data.get("note") else ""


def _user_items(
    message: Message, origin_of: dict[str, str], acks: dict, pending: list[str]
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    image = _first_image(message)
    answered: set[str] = set()
    content: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            native = origin_of.get(part.call_id)
            if native == "":
                state = "ok" if part.ok else "failed"
                content.append(
                    {"type": "input_text", "text": f"[{part.name}: {state}] {part.content}"}
                )
                continue
            if native is not None:  # its computer_call_output holds only the screenshot
                answered.add(native)
                said = _said(part)
                if said:
                    content.append({"type": "input_text", "text": f"[{native}: {said}]"})
                continue
            text = part.content if part.ok else f"ERROR: {part.content}"
            items.append({"type": "function_call_output", "call_id": part.call_id, "output": text})
            answered.add(part.call_id)
        elif isinstance(part, TextPart) and part.text:
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart) and not (part is image and acks):
            content.append({"type": "input_image", "image_url": part.data_url, "detail": "auto"})
    for native, checks in acks.items():
        if image is not None:
            items.append(
                {
                    "type": "computer_call_output",
                    "call_id": native,
                    "output": {"type": "computer_screenshot", "image_url": image.data_url},
                    "acknowledged_safety_checks": checks,
                }
            )
    for call_id in pending:
        if call_id not in answered and call_id not in acks:
            items.append({"type": "function_call_output", "call_id": call_id, "output": NOT_RUN})
    if content:
        items.append({"role": "user", "content": content})
    return items


def to_input(messages: list[Message]) -> list[dict[str, Any]]:
    """Our conversation as Responses API input items."""
    items: list[dict[str, Any]] = []
    origin_of: dict[str, str] = {}
    acks: dict[str, list[dict[str, Any]]] = {}
    pending: list[str] = []
    for i, message in enumerate(messages):
        if message.role == "assistant":
            following = messages[i + 1] if i + 1 < len(messages) else None
            acks = {}
            items += _assistant_items(message, _first_image(following), origin_of, acks)
            pending = [c.id for c in message.tool_calls if c.id not in origin_of]
        else:
            items += _user_items(message, origin_of, acks, pending)
            acks, pending = {}, []
    return items


def computer_tool(model: str, image: Size) -> dict[str, Any]:
    """The GA ``computer`` tool, or ``computer_use_preview`` for that model."""
    if "computer-use-preview" in model:
        return {
            "type": "computer_use_preview",
            "display_width": image.width,
            "display_height": image.height,
            "environment": "linux",
        }
    return {"type": "computer"}


def build_params(request: LLMRequest, model: str) -> dict[str, Any]:
    """The ``responses.create`` arguments for ``request`` (pure)."""
    size = display_size(request.messages)
    tools: list[dict[str, Any]] = []
    if size is not None and any(t.name in COMPUTER_TOOL_NAMES for t in request.tools):
        tools.append(computer_tool(model, Size(*size)))
        offered = [t for t in request.tools if t.name not in COMPUTER_TOOL_NAMES]
    else:
        offered = list(request.tools)
    tools += [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": False,
        }
        for t in offered
    ]
    params: dict[str, Any] = {
        "model": model,
        "input": to_input(request.messages),
        "max_output_tokens": request.max_tokens,
        "truncation": "auto",
    }
    if request.system:
        params["instructions"] = request.system
    if tools:
        params["tools"] = tools
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


# --- response -----------------------------------------------------------------------


async def read_output(
    output: list[dict[str, Any]], image: Size, approve: Approver
) -> tuple[str, list[ToolCall]]:
    """(text, tool calls) of a response's output items; safety checks go to ``approve``."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type")
        if kind == "reasoning":
            reasoning.append(item)
        elif kind == "message":
            texts += [
                c.get("text", "")
                for c in item.get("content") or []
                if c.get("type") == "output_text"
            ]
        elif kind == "function_call":
            arguments, error = parse_arguments(str(item.get("arguments") or ""))
            calls.append(
                ToolCall(
                    id=str(item.get("call_id")),
                    name=str(item.get("name")),
                    arguments=arguments,
                    parse_error=error,
                )
            )
        elif kind == "computer_call":
            calls += await _computer_calls(item, image, approve, reasoning)
            reasoning = []
    return "".join(texts), calls


async def _computer_calls(
    item: dict[str, Any], image: Size, approve: Approver, reasoning: list[dict[str, Any]]
) -> list[ToolCall]:
    call_id = str(item.get("call_id"))
    checks = pending_checks(item)
    for check in checks:
        verdict = await approve(check)
        if verdict is not True:
            log.warning("not approved: %s", check.describe())
            why = f" ({verdict})" if isinstance(verdict, str) and verdict else ""
            message = f"{check.describe()}. It was not approved{why}, so the action did not run."
            return [ToolCall(id=call_id, name="call_user", arguments={"message": message[:4000]})]
    acknowledged = [
        {"id": c.id, "code": c.code or None, "message": c.message or None} for c in checks
    ]
    sent = {k: item[k] for k in _CALL_FIELDS if k in item}
    origin = {
        "id": call_id,
        "name": COMPUTER,
        "input": {"item": sent, "acknowledged": acknowledged, "reasoning": reasoning},
    }
    mapped: list[tuple[str, dict[str, Any]]] = []
    placer = Placer(PIXELS, image)
    try:
        for action in call_actions(item):
            mapped += map_action(action, image, placer)
    except ValueError as exc:  # UnmappableAction, or OffScreen: a point too far off the screen
        return [
            ToolCall(id=call_id, name=COMPUTER, arguments=sent, parse_error=str(exc), origin=origin)
        ]
    if not mapped:
        return [
            ToolCall(
                id=call_id,
                name=COMPUTER,
                arguments=sent,
                parse_error="the computer call has no action",
                origin=origin,
            )
        ]
    return placer.annotate(
        [
            ToolCall(
                id=call_id if len(mapped) == 1 else f"{call_id}_{i + 1}",
                name=name,
                arguments=args,
                origin=origin,
            )
            for i, (name, args) in enumerate(mapped)
        ]
    )


def _usage(usage: dict[str, Any] | None) -> Usage:
    usage = usage or {}
    cached = int((usage.get("input_tokens_details") or {}).get("cached_tokens") or 0)
    return Usage(
        input_tokens=max(0, int(usage.get("input_tokens") or 0) - cached),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=cached,
    )


class OpenAIResponsesProvider(AdapterBase):
    """The Responses API via AsyncOpenAI, with OpenAI's computer tool."""

    name = "openai"

    _client: openai.AsyncOpenAI

    def __init__(
        self, model: str, *, approve: Approver | None = None, **connection: Unpack[Connection]
    ) -> None:
        super().__init__(model, **connection)
        self.approve: Approver = approve or deny_unattended

    def _connect(
        self, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> openai.AsyncOpenAI:
        return openai_client(api_key, base_url, timeout_s)

    def effective_mode(self, request: LLMRequest) -> str:
        return "native"  # the computer tool has no text form

    async def _attempt(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        params = build_params(request, self.model)
        try:
            response = await self._client.responses.create(**params)
        except openai.APIStatusError as exc:
            raise status_error(
                exc.status_code,
                error_text(exc.body, exc.message),
                exc.response.headers,
                sent_tools="tools" in params,
                vendor="OpenAI",
                endpoint="the OpenAI Responses endpoint",
                key_env=KEY_ENV,
            ) from exc
        except openai.APIConnectionError as exc:
            raise connection_error(exc, "the OpenAI endpoint", self.base_url, URL_ENV) from exc
        except openai.APIError as exc:
            raise ProviderError(f"OpenAI error: {error_text(exc.body, exc.message)}") from exc
        body = response.model_dump(mode="json", exclude_none=True)
        size = display_size(request.messages)
        image = Size(*size) if size is not None else Size(1280, 720)
        text, calls = await read_output(body.get("output") or [], image, self.approve)
        if text:
            yield TextDelta(text=text)
        for call in calls:
            for event in call_events(call):
                yield event
        incomplete = (body.get("incomplete_details") or {}).get("reason")
        stop = "tool_use" if calls else "end_turn"
        if body.get("status") == "incomplete" and incomplete == "max_output_tokens":
            stop = "max_tokens"
        yield ResponseDone(
            response=LLMResponse(
                text=text,
                tool_calls=calls,
                usage=_usage(body.get("usage")),
                stop_reason=stop,
                model=str(body.get("model") or self.model),
            )
        )
