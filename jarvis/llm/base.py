"""The model interface: one async streaming method that speaks our own types.

Every provider adapter implements :class:`Provider`. :class:`AdapterBase` holds what
the adapters share: choosing the tool mode (native, text, auto with a fallback for
this run), the text-mode protocol around a plain-text call, and the retry loop with
backoff that emits :class:`~jarvis.events.ModelRetry` events. An adapter only turns
one request into one streamed HTTP call (:meth:`AdapterBase._attempt`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any, Literal, Protocol, TypedDict, Unpack, runtime_checkable

from jarvis.events import EventBus, ModelRetry, ToolModeFallback
from jarvis.llm import text_mode, text_prompt
from jarvis.llm.retry import (
    RetryPolicy,
    cause_text,
    connect_failure,
    is_retryable_status,
    parse_retry_after,
    rejects_tools,
    root_cause_text,
)
from jarvis.llm.types import LLMRequest, LLMResponse, ResponseDone, StreamEvent, UsageSoFar
from jarvis.logfile import SHOWN

log = logging.getLogger(__name__)

NOT_RUN = "not run: the call was skipped"
"""The tool result sent for a call that was never run (every API wants one per call)."""


class ProviderError(Exception):
    """A model call failed. ``retryable`` says whether trying again may help."""

    def __init__(
        self,
        message: str,
        retryable: bool = False,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


class ProviderAuthError(ProviderError):
    """No API key, or the endpoint rejected it. The message names the env var to set."""


class ProviderUnreachable(ProviderError):
    """No connection could be made to the endpoint (DNS, refused, TLS): a wrong or
    unreachable base URL. Retried like any connection error, but it ends the task after
    one step's retries; the message names the URL and the variable that sets it."""


def connection_error(exc: BaseException, endpoint: str, url: str, url_env: str) -> ProviderError:
    """The error for an SDK connection error before any response: unreachable when no
    connection could be made, else a retryable error."""
    if connect_failure(exc):
        return ProviderUnreachable(
            f"cannot connect to {endpoint} at {url} ({root_cause_text(exc)}); "
            f"check the base URL ({url_env})",
            retryable=True,
        )
    return ProviderError(f"cannot reach {endpoint} at {url}: {cause_text(exc)}", retryable=True)


class StreamInterrupted(ProviderError):
    """The response stream broke off before the model finished."""


class ToolsUnsupported(ProviderError):
    """The endpoint rejected native tool calling (auto mode falls back to text mode)."""


def status_error(
    status: int,
    detail: str,
    headers: Mapping[str, str],
    *,
    sent_tools: bool,
    vendor: str,
    endpoint: str,
    key_env: str,
) -> ProviderError:
    """The error for an HTTP error status, classified alike for every adapter.

    401/403 is an auth error naming ``key_env``; a rejection of native tools (when tools
    were sent) is :class:`ToolsUnsupported`; anything else is retryable by its status.
    """
    if status in (401, 403):
        return ProviderAuthError(
            f"{endpoint} rejected the credentials (HTTP {status}: {detail}); check {key_env}",
            status=status,
        )
    if sent_tools and rejects_tools(status, detail):
        return ToolsUnsupported(f"HTTP {status}: {detail}", status=status)
    return ProviderError(
        f"{vendor} HTTP {status}: {detail}",
        retryable=is_retryable_status(status),
        status=status,
        retry_after=parse_retry_after(headers),
    )


@runtime_checkable
class Provider(Protocol):
    """A chat model. ``stream`` yields deltas and ends with exactly one ResponseDone."""

    name: str
    model: str

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]: ...


OnEvent = Callable[[StreamEvent], object]


async def complete(
    provider: Provider, request: LLMRequest, on_event: OnEvent | None = None
) -> LLMResponse:
    """Run one streamed call to its end; ``on_event`` sees every event as it arrives."""
    response: LLMResponse | None = None
    events = provider.stream(request)
    try:
        async for event in events:
            if on_event is not None:
                on_event(event)
            if isinstance(event, ResponseDone):
                response = event.response
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
    if response is None:
        raise StreamInterrupted(f"{provider.name}: the stream ended without a response")
    return response


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Tool arguments from their JSON text: (arguments, None) or ({}, what is wrong)."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        snippet = raw if len(raw) <= 200 else raw[:200] + "..."
        return {}, f"arguments are not valid JSON ({exc.msg} at char {exc.pos}): {snippet}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


DEFAULT_TIMEOUT_S = 120.0


class Connection(TypedDict, total=False):
    """How an adapter reaches its API, and what it does with a call the model wrote as
    text (``text_tool_calls``, see :class:`AdapterBase`); every adapter takes these
    keywords, and :func:`jarvis.llm.factory.make_provider` gives them from the settings
    and the model profile."""

    api_key: str | None
    base_url: str | None
    bus: EventBus | None
    retry: RetryPolicy | None
    timeout_s: float
    text_tool_calls: Literal["run", "report"]


class AdapterBase:
    """Shared behaviour of the provider adapters; subclasses implement ``_attempt``."""

    name = "base"

    def __init__(self, model: str, **connection: Unpack[Connection]) -> None:
        self.model = model
        self.bus = connection.get("bus")
        self.retry = connection.get("retry") or RetryPolicy()
        self.text_fallback = False  # auto mode fell back to text mode for this run
        self.text_tool_calls = connection.get("text_tool_calls", "report")
        """A call written as text in a native-mode reply: "run" it (the profile says the
        model does that) or "report" it to the model as a failed call; never dropped."""
        self._client = self._connect(
            connection.get("api_key"),
            connection.get("base_url"),
            connection.get("timeout_s", DEFAULT_TIMEOUT_S),
        )

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def aclose(self) -> None:
        """Release the HTTP client."""
        await self._client.close()

    # --- to implement -------------------------------------------------------
    def _connect(self, api_key: str | None, base_url: str | None, timeout_s: float) -> Any:
        """The SDK client: the key (None: the SDK's environment variable; ProviderAuthError
        when there is none), the base URL (None: the SDK's default or variable), the
        per-request timeout, and no SDK retries (the retry loop here reports each one)."""
        raise NotImplementedError

    def _attempt(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        """One HTTP call: native tools are sent iff ``request.tools`` is not empty.

        Raises ProviderError (or a subclass) with ``retryable`` set; a stream that breaks
        off raises StreamInterrupted(retryable=True).
        """
        raise NotImplementedError

    # --- the shared part ------------------------------------------------------
    def effective_mode(self, request: LLMRequest) -> str:
        """The tool mode this request runs in ("native" or "text"), after any fallback."""
        if request.tool_mode == "text" or (request.tool_mode == "auto" and self.text_fallback):
            return "text"
        return "native"

    async def stream(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        if self.effective_mode(request) == "native":
            try:
                async with aclosing(self._retrying(self._native_request(request))) as events:
                    async for event in events:
                        if isinstance(event, ResponseDone) and request.tools:
                            for extra in self._stray_calls(event, request):
                                yield extra
                            continue
                        yield event
                return
            except ToolsUnsupported as exc:
                if request.tool_mode != "auto":
                    raise
                self._fall_back(exc)
        async with aclosing(self._retrying(request, text=True)) as events:
            async for event in events:
                yield event

    def _stray_calls(self, done: ResponseDone, request: LLMRequest) -> list[StreamEvent]:
        """The reply's end, with tool calls it wrote as text (and no native ones) run or
        reported, as ``text_tool_calls`` says."""
        response = done.response
        if response.tool_calls or not response.text:
            return [done]
        names = [t.name for t in request.tools]
        calls = text_mode.stray_calls(response.text, names, self.text_tool_calls == "run")
        if not calls:
            return [done]
        log.warning(
            "the model wrote %d tool call(s) as text in a native-mode reply: %s",
            len(calls),
            "running them" if self.text_tool_calls == "run" else "reporting them to it",
        )
        events: list[StreamEvent] = [e for c in calls for e in text_mode.call_events(c)]
        update: dict[str, Any] = {"tool_calls": calls}
        if response.stop_reason in ("end_turn", "stop", "stop_sequence"):
            update["stop_reason"] = "tool_use"
        events.append(ResponseDone(response=response.model_copy(update=update)))
        return events

    def _fall_back(self, exc: ToolsUnsupported) -> None:
        self.text_fallback = True
        reason = f"{self.name} endpoint rejected native tools: {exc.message}"
        log.warning("switching to text tool mode for this run: %s", reason, extra=SHOWN)
        if self.bus is not None:
            self.bus.emit(ToolModeFallback(reason=reason))

    @staticmethod
    def _native_request(request: LLMRequest) -> LLMRequest:
        """Without tools, tool history goes as text (APIs reject tool blocks without tools)."""
        if request.tools or not text_prompt.has_tool_history(request.messages):
            return request
        return request.model_copy(
            update={"messages": text_prompt.messages_to_text(request.messages)}
        )

    def _one_attempt(self, request: LLMRequest, text: bool) -> AsyncGenerator[StreamEvent, None]:
        if not text:
            return self._attempt(request)
        plain = text_prompt.text_request(request)
        return text_mode.parse_stream(self._attempt(plain), request.tools)

    async def _retrying(
        self, request: LLMRequest, text: bool = False
    ) -> AsyncGenerator[StreamEvent, None]:
        attempt = 0
        while True:
            delivered = False
            try:
                async with aclosing(self._one_attempt(request, text)) as events:
                    async for event in events:
                        delivered = delivered or not isinstance(event, UsageSoFar)
                        yield event
                return
            except ProviderError as exc:
                if delivered:
                    if isinstance(exc, StreamInterrupted) or exc.retryable:
                        raise StreamInterrupted(
                            f"{self.name}: the response broke off after output had started "
                            f"({exc.message}); not retried, as the output was already used",
                            status=exc.status,
                        ) from exc
                    raise
                if not exc.retryable or attempt >= self.retry.max_retries:
                    if exc.retryable:
                        log.error(
                            "%s: giving up after %d attempts", self.name, attempt + 1, extra=SHOWN
                        )
                    raise
                delay = self.retry.delay(attempt, exc.retry_after)
                attempt += 1
                log.warning(
                    "%s: retry %d/%d in %.2fs: %s",
                    self.name,
                    attempt,
                    self.retry.max_retries,
                    delay,
                    exc.message,
                    extra=SHOWN,
                )
                if self.bus is not None:
                    self.bus.emit(ModelRetry(attempt=attempt, reason=exc.message, delay_s=delay))
                await asyncio.sleep(delay)
