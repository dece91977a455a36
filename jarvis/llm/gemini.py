"""Google's Gemini API through the ``google-genai`` SDK, with Gemini's computer use.

Chosen by ``provider: "gemini"`` or a profile with ``api: "gemini"`` (the shipped
``gemini-computer-use``). The key is ``GEMINI_API_KEY`` (or the SDK's ``GOOGLE_API_KEY``),
the endpoint ``GEMINI_BASE_URL`` (default: Google's; the SDK's ``GOOGLE_GEMINI_BASE_URL``
is read too), always the ``v1beta`` API version. One ``generateContent`` call per step,
not streamed, no SDK retries (the retry loop of :class:`AdapterBase` reports each one).

With the ``gemini-computer`` action format the computer-use tool stands in for the mouse
and keyboard tools (:mod:`jarvis.llm.gemini_wire`, :mod:`jarvis.llm.gemini_actions`);
otherwise our tools go as function declarations. A call carrying a ``safety_decision``
that asks for confirmation runs only when the approver the provider was made with
approves it (the same approver interface as OpenAI's safety checks: ``build_agent`` makes
it with the task's approvals); otherwise it becomes a ``call_user`` call.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator
from typing import Any, Unpack

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from jarvis.geometry import REL_1000, CoordSpace, Size
from jarvis.llm.base import (
    AdapterBase,
    Connection,
    ProviderAuthError,
    ProviderError,
    connection_error,
    status_error,
)
from jarvis.llm.computer_tool import display_size
from jarvis.llm.gemini_wire import Approver, build_tools, read_calls, to_contents
from jarvis.llm.openai_actions import deny_unattended
from jarvis.llm.retry import error_text
from jarvis.llm.text_mode import call_events
from jarvis.llm.types import LLMRequest, LLMResponse, ResponseDone, StreamEvent, TextDelta
from jarvis.usage import Usage

log = logging.getLogger(__name__)

KEY_ENV = "GEMINI_API_KEY"
URL_ENV = "GEMINI_BASE_URL"
DEFAULT_URL = "https://generativelanguage.googleapis.com/"
API_VERSION = "v1beta"
_STOPS = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens"}
_REFUSALS = ("SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION")
_RETRY_FINISH = ("MALFORMED_FUNCTION_CALL", "MALFORMED_RESPONSE")
_TRANSPORT_MODULES = ("aiohttp", "httpx", "httpx2", "anyio")


def _transport_error(exc: BaseException) -> bool:
    """An error of the HTTP layer (no answer came): the connection, not the API."""
    return isinstance(exc, OSError | asyncio.TimeoutError) or (
        type(exc).__module__.split(".")[0] in _TRANSPORT_MODULES
    )


def gemini_client(api_key: str | None, base_url: str | None, timeout_s: float) -> genai.Client:
    key = api_key or os.environ.get(KEY_ENV) or os.environ.get("GOOGLE_API_KEY")
    if not key:
        raise ProviderAuthError(f"no Gemini API key: set {KEY_ENV}")
    options = types.HttpOptions(
        base_url=base_url or os.environ.get(URL_ENV) or None,
        api_version=API_VERSION,
        timeout=int(timeout_s * 1000),
    )
    return genai.Client(api_key=key, vertexai=False, http_options=options)


def _usage(meta: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    if meta is None:
        return Usage()
    cached = meta.cached_content_token_count or 0
    return Usage(
        input_tokens=max(0, (meta.prompt_token_count or 0) - cached),
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cache_read_tokens=cached,
    )


class GeminiProvider(AdapterBase):
    """The Gemini API via ``genai.Client(...).aio``."""

    name = "gemini"

    _client: genai.Client

    def __init__(
        self,
        model: str,
        *,
        computer_use: bool = True,
        space: CoordSpace = REL_1000,
        approve: Approver | None = None,
        **connection: Unpack[Connection],
    ) -> None:
        self._url = connection.get("base_url") or os.environ.get(URL_ENV) or DEFAULT_URL
        super().__init__(model, **connection)
        self.computer_use = computer_use
        self.space = space
        self.approve: Approver = approve or deny_unattended

    @property
    def base_url(self) -> str:
        return self._url

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    def _connect(self, api_key: str | None, base_url: str | None, timeout_s: float) -> Any:
        return gemini_client(api_key, base_url, timeout_s)

    def effective_mode(self, request: LLMRequest) -> str:
        return "native"  # the computer-use tool has no text form

    def _config(self, request: LLMRequest) -> types.GenerateContentConfig:
        tools = build_tools(request.tools, self.computer_use)
        return types.GenerateContentConfig(
            system_instruction=request.system or None,
            tools=tools or None,
            max_output_tokens=request.max_tokens,
            temperature=request.temperature,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    async def _call(self, request: LLMRequest) -> types.GenerateContentResponse:
        try:
            return await self._client.aio.models.generate_content(
                model=self.model,
                contents=to_contents(request.messages),
                config=self._config(request),
            )
        except genai_errors.APIError as exc:
            headers = getattr(exc.response, "headers", None) or {}
            raise status_error(
                int(exc.code or 0),
                error_text(exc.details, str(exc.message or exc)),
                {str(k).lower(): str(v) for k, v in dict(headers).items()},
                sent_tools=bool(request.tools),
                vendor="Gemini",
                endpoint="the Gemini endpoint",
                key_env=KEY_ENV,
            ) from exc
        except Exception as exc:
            if not _transport_error(exc):
                raise
            raise connection_error(exc, "the Gemini endpoint", self.base_url, URL_ENV) from exc

    async def _attempt(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        response = await self._call(request)
        candidate = response.candidates[0] if response.candidates else None
        if candidate is None:
            feedback = response.prompt_feedback
            reason = feedback.block_reason if feedback is not None else None
            text = f"Gemini blocked the prompt ({reason})" if reason else "Gemini answered nothing"
            yield TextDelta(text=text)
            yield ResponseDone(
                response=LLMResponse(
                    text=text,
                    usage=_usage(response.usage_metadata),
                    stop_reason="refusal" if reason else "end_turn",
                    model=str(response.model_version or self.model),
                )
            )
            return
        finish = str(getattr(candidate.finish_reason, "value", candidate.finish_reason or ""))
        parts = list(candidate.content.parts or []) if candidate.content else []
        if finish in _RETRY_FINISH and not parts:
            raise ProviderError(f"Gemini finished with {finish}", retryable=True)
        text = "".join(p.text for p in parts if p.text and not p.thought)
        size = display_size(request.messages)
        image = Size(*size) if size is not None else Size(1440, 900)
        calls = await read_calls(parts, self.approve, self.space, image, self.computer_use)
        if text:
            yield TextDelta(text=text)
        for call in calls:
            for event in call_events(call):
                yield event
        stop = "tool_use" if calls else _STOPS.get(finish, "end_turn")
        if finish in _REFUSALS and not calls:
            stop = "refusal"
        yield ResponseDone(
            response=LLMResponse(
                text=text,
                tool_calls=calls,
                usage=_usage(response.usage_metadata),
                stop_reason=stop,
                model=str(response.model_version or self.model),
            )
        )
