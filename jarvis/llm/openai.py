"""OpenAI chat completions through the official ``openai`` SDK (AsyncOpenAI), streamed.

Works against any OpenAI-compatible endpoint (``base_url`` or ``OPENAI_BASE_URL``).
With ``served`` (profiles of open models on vLLM, SGLang, llama.cpp, Ollama) the calls are
also read from the reply's text and reasoning (:mod:`jarvis.llm.served_calls`), a server
whose tool calling is switched off by a start flag gets the calls as text, and the server's
name and version (:mod:`jarvis.llm.server_id`) go out once as a ``ModelServer`` event.
``tool_choice`` is sent only when given, and never ``required`` with ``served``: vLLM's
Qwen XML parsers answer it with ``tool_calls: []``.
Images go as ``image_url`` data URLs, tool results as ``role: "tool"`` messages; the
stream is assembled by :class:`jarvis.llm.openai_chunks.ChunkAssembler`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator
from typing import Any, Unpack
from urllib.parse import urlparse

import openai

from jarvis.events import ModelServer, ServedCallsRead
from jarvis.llm import server_id
from jarvis.llm.base import (
    NOT_RUN,
    AdapterBase,
    Connection,
    ProviderAuthError,
    ProviderError,
    StreamInterrupted,
    ToolsUnsupported,
    connection_error,
    status_error,
)
from jarvis.llm.openai_chunks import ChunkAssembler
from jarvis.llm.retry import cause_text, error_text
from jarvis.llm.served_calls import served_response, tools_switched_off
from jarvis.llm.text_mode import call_events
from jarvis.llm.types import (
    ImagePart,
    LLMRequest,
    Message,
    ResponseDone,
    StreamEvent,
    TextPart,
    ToolResultPart,
)

log = logging.getLogger(__name__)

KEY_ENV = "OPENAI_API_KEY"
URL_ENV = "OPENAI_BASE_URL"


# --- request ------------------------------------------------------------------------


def _user_messages(message: Message) -> list[dict[str, Any]]:
    """Tool results as ``tool`` messages first, then the rest as one user message."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            content = part.content if part.ok else f"ERROR: {part.content}"
            out.append({"role": "tool", "tool_call_id": part.call_id, "content": content})
        elif isinstance(part, ImagePart):
            parts.append({"type": "image_url", "image_url": {"url": part.data_url}})
        elif isinstance(part, TextPart) and part.text:
            parts.append({"type": "text", "text": part.text})
    if parts:
        if all(p["type"] == "text" for p in parts):  # plain string: the most compatible form
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    elif not out:
        out.append({"role": "user", "content": "(empty)"})
    return out


def to_openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Our conversation as chat-completions ``messages``, system prompt first."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if message.role == "user":
            out += _user_messages(message)
            continue
        entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ]
        elif entry["content"] is None:
            entry["content"] = "(no text)"
        out.append(entry)
    return _answer_every_tool_call(out)


def _answer_every_tool_call(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each assistant tool call needs a ``tool`` message; add one for calls never run."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for entry in messages:
        if entry["role"] == "tool" and entry["tool_call_id"] in pending:
            pending.remove(entry["tool_call_id"])
        elif pending and entry["role"] != "tool":
            out += [{"role": "tool", "tool_call_id": i, "content": NOT_RUN} for i in pending]
            pending = []
        out.append(entry)
        if entry["role"] == "assistant":
            pending = [c["id"] for c in entry.get("tool_calls", [])]
    if pending and out[-1]["role"] == "tool":
        out += [{"role": "tool", "tool_call_id": i, "content": NOT_RUN} for i in pending]
    return out


def build_params(
    request: LLMRequest, model: str, max_tokens_key: str, tool_choice: str | None = None
) -> dict[str, Any]:
    """The ``chat.completions.create`` arguments for ``request`` (pure)."""
    params: dict[str, Any] = {
        "model": model,
        "messages": to_openai_messages(request.system, request.messages),
        max_tokens_key: request.max_tokens,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        params["tools"] = [t.to_openai() for t in request.tools]
        if tool_choice:
            params["tool_choice"] = tool_choice
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


# --- errors -------------------------------------------------------------------------


def _status_error(
    exc: openai.APIStatusError, sent_tools: bool, served: bool = False
) -> ProviderError:
    detail = error_text(exc.body, exc.message)
    if served and sent_tools and tools_switched_off(exc.status_code, detail):
        return ToolsUnsupported(f"HTTP {exc.status_code}: {detail}", status=exc.status_code)
    return status_error(
        exc.status_code,
        detail,
        exc.response.headers,
        sent_tools=sent_tools,
        vendor="OpenAI",
        endpoint="the OpenAI endpoint",
        key_env=KEY_ENV,
    )


def resolve_key(api_key: str | None) -> str:
    key = api_key or os.environ.get(KEY_ENV)
    if not key:
        raise ProviderAuthError(
            f"no OpenAI API key: set {KEY_ENV} (or pass api_key; any non-empty value "
            "works for a local OpenAI-compatible server without auth)"
        )
    return key


def openai_client(
    api_key: str | None, base_url: str | None, timeout_s: float
) -> openai.AsyncOpenAI:
    """The client both OpenAI adapters use (chat completions and the Responses API)."""
    return openai.AsyncOpenAI(
        api_key=resolve_key(api_key), base_url=base_url, timeout=timeout_s, max_retries=0
    )


class OpenAIProvider(AdapterBase):
    """Chat completions via AsyncOpenAI; any OpenAI-compatible base URL.

    ``served``: the model is an open model on a serving stack (the profile's
    ``served_calls``): calls are read from the text too, and the server is identified.
    """

    name = "openai"

    _client: openai.AsyncOpenAI

    def __init__(
        self,
        model: str,
        *,
        max_tokens_key: str | None = None,
        served: bool = False,
        tool_choice: str | None = None,
        **connection: Unpack[Connection],
    ) -> None:
        if served and tool_choice == "required":
            raise ValueError("a served profile never sends tool_choice=required")
        super().__init__(model, **connection)
        # api.openai.com wants max_completion_tokens (newer models refuse max_tokens);
        # compatible servers widely know only max_tokens
        official = urlparse(self.base_url).hostname == "api.openai.com"
        self.max_tokens_key = max_tokens_key or (
            "max_completion_tokens" if official else "max_tokens"
        )
        self.served = served
        self.tool_choice = tool_choice
        self.server: server_id.ServerInfo | None = None
        """The serving stack, once a served reply came back (see :meth:`identify`)."""

    def _connect(
        self, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> openai.AsyncOpenAI:
        return openai_client(api_key, base_url, timeout_s)

    @property
    def api_key(self) -> str:
        return self._client.api_key

    async def identify(self, headers: Any = None) -> server_id.ServerInfo:
        """The server's name and version (probed once; ``headers`` of a reply help)."""
        if self.server is None:
            self.server = await server_id.identify(self.base_url, self._client.api_key, headers)
            if self.bus is not None:
                self.bus.emit(ModelServer(server=str(self.server)))
        return self.server

    async def _attempt(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        params = build_params(request, self.model, self.max_tokens_key, self.tool_choice)
        sent_tools = "tools" in params
        try:
            raw = await self._client.chat.completions.with_raw_response.create(
                **params, stream=True
            )
        except openai.APIStatusError as exc:
            raise _status_error(exc, sent_tools, self.served) from exc
        except openai.APIConnectionError as exc:
            raise connection_error(exc, "the OpenAI endpoint", self.base_url, URL_ENV) from exc
        assembler = ChunkAssembler(model=self.model)
        try:
            async with raw.parse() as stream:
                async for chunk in stream:
                    for event in assembler.handle(chunk):
                        yield event
        except openai.APIStatusError as exc:
            raise _status_error(exc, sent_tools, self.served) from exc
        except openai.APIConnectionError as exc:
            raise StreamInterrupted(
                f"the OpenAI stream broke off: {cause_text(exc)}", retryable=True
            ) from exc
        except openai.APIError as exc:  # an error object inside the stream
            raise StreamInterrupted(
                f"OpenAI stream error: {error_text(exc.body, exc.message)}", retryable=True
            ) from exc
        done = assembler.finish()
        problem = assembler.unfinished()
        if problem is not None and not (self.served and assembler.reasoning):
            raise StreamInterrupted(f"the OpenAI stream ended {problem}", retryable=True)
        response = assembler.response()
        if self.served:
            await self.identify(raw.headers)
        if self.served and request.tools:  # (text mode reads its own blocks)
            reasoning = "".join(assembler.reasoning)
            response, where = served_response(response, reasoning, request.tools)
            if where in ("text", "reasoning"):
                log.info(
                    "served reply: %d call(s) read from the %s",
                    len(response.tool_calls),
                    "answer's text" if where == "text" else "reasoning",
                )
                if self.bus is not None:
                    self.bus.emit(ServedCallsRead(where=where, calls=len(response.tool_calls)))
                done = [e for call in response.tool_calls for e in call_events(call)]
        for event in done:
            yield event
        yield ResponseDone(response=response)
