"""A scripted model behind a loopback HTTP server that speaks the real wire protocols.

The real ``anthropic`` and ``openai`` SDKs talk to it over 127.0.0.1, so the adapters
are tested on the wire. It serves

- ``POST /v1/messages`` (Anthropic Messages API) and
- ``POST /v1/chat/completions`` (OpenAI chat completions),
- ``POST /v1/responses`` (OpenAI Responses API, not streamed: ``Reply.output`` gives the
  raw output items, e.g. a ``computer_call``; without it text and tool calls become a
  ``message`` and ``function_call`` items),

both streaming (SSE, with the exact event shapes the SDKs parse) and not.

Reply API
---------
Script what the model answers, one :class:`Reply` per request, in order::

    fake_model.script(
        Reply(text="Clicking OK.", tool_calls=[call("click", x=10, y=20)]),
        Reply.rate_limited(retry_after=1),          # 429 with retry-after, then...
        Reply(text='{"done": true, "reason": "the file is saved"}'),   # e.g. a verify answer
    )
    fake_model.set_default(lambda req: Reply(text="ok"))   # when the queue is empty

A queue entry may also be a callable ``(RecordedRequest) -> Reply`` computed at
request time. With nothing left and no default, the server answers HTTP 400
"fake model: script exhausted" so a test fails loudly.

``Reply`` fields: ``text``; ``tool_calls`` (:class:`ToolUse` from :func:`call`, or with
``raw=`` holding exact argument text such as broken JSON); usage (``input_tokens``,
``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, reported the
Anthropic way: input excludes cached tokens; OpenAI's prompt_tokens includes them);
``stop_reason`` (default end_turn/tool_use, or stop/tool_calls for OpenAI);
``text_chunk`` and ``args_chunk`` (characters per streamed delta: small values send
arguments in many pieces); ``delay_s`` (pause before each SSE event, for
cancellation tests); ``model``. Faults: ``status``/``error_type``/``error_message``/
``headers`` for an error response (``Reply.error``, ``rate_limited``, ``overloaded``
(529), ``server_error`` (500), ``tools_unsupported`` (400), ``unauthorized`` (401));
``cut_after=N`` closes the socket after N SSE events (a stream cut mid-way);
``error_after=N`` sends an in-stream error event after N events; ``hold`` (a
``threading.Event``) with ``hold_after=N`` sends N SSE events, then waits until the test
sets ``hold`` (at most 60 s) before the rest: a test sees the model "still streaming".
With the Anthropic API, event 0 is message_start, 1 ping, 2 the first block's start.
Stream shapes of real endpoints: ``omit_message_stop`` (Anthropic: the body ends right
after ``message_delta``), ``omit_finish_reason`` (OpenAI: no chunk carries a
finish_reason; ``[DONE]`` still ends the body, as OpenRouter does), ``tool_index_base``
(OpenAI: the first tool call's index, e.g. 1), ``repeat_tool_head`` (OpenAI: every tool
chunk repeats the call's id, type and name), ``whole_tool_calls`` (OpenAI: each call
in one chunk, arguments and all) and ``omit_tool_index`` (OpenAI: tool deltas carry no
index; a new id starts a call, pieces without one continue the last). A call cut off
by max_tokens is ``ToolUse(raw=...)`` with broken JSON and ``stop_reason="max_tokens"``
(or ``"length"``).
For text-mode tool calls, :func:`text_call` writes the ``<tool_call>`` block.

Recording: ``fake_model.requests`` lists every :class:`RecordedRequest` (``api``,
``path``, ``headers`` with lower-case names, ``body`` parsed JSON, ``size`` in bytes)
with helpers ``tool_names``, ``image_count()``, ``cache_markers()``, ``all_text()``.

The ``fake_model`` fixture (:func:`fake_model_fixture`; import it into a test module)
starts a server per test and sets nothing global: pass
``fake_model.base_url`` (Anthropic) or ``fake_model.openai_base_url`` to a provider,
or set the env vars with monkeypatch.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class ToolUse:
    """One tool call in a scripted reply; ``raw`` (exact argument text) wins over arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None
    id: str | None = None

    @property
    def argument_text(self) -> str:
        return self.raw if self.raw is not None else json.dumps(self.arguments)


def call(name: str, **arguments: Any) -> ToolUse:
    return ToolUse(name=name, arguments=arguments)


def text_call(name: str, **arguments: Any) -> str:
    """A text-mode tool call block, as a model without native tools would write it."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


HOLD_TIMEOUT_S = 60.0
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[ToolUse] = field(default_factory=list)
    input_tokens: int = 12
    output_tokens: int = 7
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    stop_reason: str | None = None
    text_chunk: int = 8
    args_chunk: int = 6
    delay_s: float = 0.0
    model: str | None = None
    status: int = 200
    error_type: str | None = None
    error_message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    error_after: int | None = None
    omit_message_stop: bool = False
    omit_finish_reason: bool = False
    tool_index_base: int = 0
    repeat_tool_head: bool = False
    whole_tool_calls: bool = False
    omit_tool_index: bool = False
    hold: threading.Event | None = None
    hold_after: int = 0
    output: list[dict[str, Any]] | None = None  # Responses API output items, as sent

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        return cls(
            status=status,
            error_type=error_type or _ERROR_TYPES.get(status, "api_error"),
            error_message=message,
            headers=headers or {},
        )

    @classmethod
    def rate_limited(cls, retry_after: float = 1) -> Reply:
        return cls.error(429, "rate limited", headers={"retry-after": f"{retry_after:g}"})

    @classmethod
    def overloaded(cls) -> Reply:
        return cls.error(529, "Overloaded")

    @classmethod
    def server_error(cls) -> Reply:
        return cls.error(500, "internal server error")

    @classmethod
    def unauthorized(cls) -> Reply:
        return cls.error(401, "invalid x-api-key")

    @classmethod
    def tools_unsupported(cls) -> Reply:
        return cls.error(400, "this model does not support tools")


Responder = Callable[["RecordedRequest"], Reply]


@dataclass
class RecordedRequest:
    api: str  # "anthropic", "openai" or "responses"
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]
    size: int

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name") or t.get("function", {}).get("name", "") for t in self.tools]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    def _blocks(self) -> Iterator[dict[str, Any]]:
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    yield block
                    if isinstance(block.get("content"), list):
                        yield from block["content"]

    def image_count(self) -> int:
        return sum(b.get("type") in ("image", "image_url") for b in self._blocks())

    def cache_markers(self) -> int:
        return json.dumps(self.body).count('"cache_control"')

    def all_text(self) -> str:
        """System prompt and every text in the messages, joined (for assertions)."""
        texts: list[str] = []
        system = self.body.get("system")
        if isinstance(system, str):
            texts.append(system)
        elif isinstance(system, list):
            texts += [b.get("text", "") for b in system]
        for message in self.messages:
            if isinstance(message.get("content"), str):
                texts.append(message["content"])
        for block in self._blocks():
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            if isinstance(block.get("content"), str):
                texts.append(block["content"])
        return "\n".join(texts)


# --- wire shapes --------------------------------------------------------------------------


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def anthropic_events(reply: Reply, model: str, ids: Iterator[int]) -> list[tuple[str, dict]]:
    usage = {
        "input_tokens": reply.input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": reply.cache_write_tokens,
        "cache_read_input_tokens": reply.cache_read_tokens,
    }
    message: dict[str, Any] = {
        "id": f"msg_fake_{next(ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    events.append(("ping", {"type": "ping"}))
    index = 0
    if reply.text:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        for piece in _pieces(reply.text, reply.text_chunk):
            delta = {"type": "text_delta", "text": piece}
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for tool in reply.tool_calls:
        block = {
            "type": "tool_use",
            "id": tool.id or f"toolu_fake_{next(ids)}",
            "name": tool.name,
            "input": {},
        }
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        for piece in _pieces(tool.argument_text, reply.args_chunk):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
        )
    )
    if not reply.omit_message_stop:
        events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_message(reply: Reply, model: str, ids: Iterator[int]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    for tool in reply.tool_calls:
        try:
            arguments = json.loads(tool.argument_text)
        except json.JSONDecodeError:
            arguments = {}
        content.append(
            {
                "type": "tool_use",
                "id": tool.id or f"toolu_fake_{next(ids)}",
                "name": tool.name,
                "input": arguments,
            }
        )
    return {
        "id": f"msg_fake_{next(ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cache_read_tokens,
        },
    }


def _openai_usage(reply: Reply) -> dict[str, Any]:
    prompt = reply.input_tokens + reply.cache_read_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": reply.output_tokens,
        "total_tokens": prompt + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens},
    }


def openai_chunks(
    reply: Reply, model: str, ids: Iterator[int], usage: bool
) -> list[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-fake{next(ids)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(reply.text, reply.text_chunk)]
    for number, tool in enumerate(reply.tool_calls):
        chunks += _openai_tool_chunks(reply, tool, reply.tool_index_base + number, ids, chunk)
    stop = reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")
    chunks.append(chunk({}, None if reply.omit_finish_reason else stop))
    if usage:
        chunks.append({**base, "choices": [], "usage": _openai_usage(reply)})
    return chunks


def _openai_tool_chunks(
    reply: Reply,
    tool: ToolUse,
    index: int,
    ids: Iterator[int],
    chunk: Callable[[dict[str, Any]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """One tool call's chunks: a head with id and name, then argument pieces (or the
    whole call in one chunk, or the head repeated in every chunk)."""
    head = {
        "index": index,
        "id": tool.id or f"call_fake_{next(ids)}",
        "type": "function",
        "function": {"name": tool.name, "arguments": ""},
    }
    if reply.whole_tool_calls:
        deltas = [{**head, "function": {"name": tool.name, "arguments": tool.argument_text}}]
    else:
        deltas = [head]
        for piece in _pieces(tool.argument_text, reply.args_chunk):
            delta: dict[str, Any] = {"index": index, "function": {"arguments": piece}}
            if reply.repeat_tool_head:
                delta = {**head, "function": {"name": tool.name, "arguments": piece}}
            deltas.append(delta)
    if reply.omit_tool_index:
        deltas = [{k: v for k, v in d.items() if k != "index"} for d in deltas]
    return [chunk({"tool_calls": [d]}) for d in deltas]


def openai_completion(reply: Reply, model: str, ids: Iterator[int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": tool.id or f"call_fake_{next(ids)}",
                "type": "function",
                "function": {"name": tool.name, "arguments": tool.argument_text},
            }
            for tool in reply.tool_calls
        ]
    return {
        "id": f"chatcmpl-fake{next(ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.stop_reason
                or ("tool_calls" if reply.tool_calls else "stop"),
            }
        ],
        "usage": _openai_usage(reply),
    }


def responses_body(reply: Reply, model: str, ids: Iterator[int]) -> dict[str, Any]:
    """A Responses API response object for ``reply``."""
    n = next(ids)
    output = reply.output
    if output is None:
        output = []
        if reply.text:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for i, use in enumerate(reply.tool_calls):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n}_{i}",
                    "call_id": use.id or f"call_{n}_{i}",
                    "name": use.name,
                    "arguments": use.argument_text,
                    "status": "completed",
                }
            )
    cached = reply.cache_read_tokens
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": model,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": reply.input_tokens + cached,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + cached + reply.output_tokens,
        },
    }


def error_body(api: str, reply: Reply) -> dict[str, Any]:
    kind = reply.error_type or _ERROR_TYPES.get(reply.status, "api_error")
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": reply.error_message}}
    return {"error": {"message": reply.error_message, "type": kind, "param": None, "code": None}}


# --- the server ---------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.split("?", 1)[0]
        if path.endswith("/v1/messages"):
            api = "anthropic"
        elif path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith("/responses"):
            api = "responses"
        else:
            self._json(404, {"error": {"message": f"no route {path}"}})
            return
        request = RecordedRequest(
            api=api,
            path=path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=json.loads(raw) if raw else {},
            size=len(raw),
        )
        fake = self.server.fake
        reply = fake._next_reply(request)
        model = reply.model or str(request.body.get("model", "fake-model"))
        if reply.status != 200:
            self._json(reply.status, error_body(api, reply), reply.headers)
        elif api == "responses":
            self._json(200, responses_body(reply, model, fake._ids), reply.headers)
        elif not request.stream:
            ids = fake._ids
            body = (
                anthropic_message(reply, model, ids)
                if api == "anthropic"
                else openai_completion(reply, model, ids)
            )
            self._json(200, body, reply.headers)
        else:
            self._stream(api, request, reply, model)

    def _json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, api: str, request: RecordedRequest, reply: Reply, model: str) -> None:
        ids = self.server.fake._ids
        if api == "anthropic":
            frames = [
                f"event: {name}\ndata: {json.dumps(data)}\n\n"
                for name, data in anthropic_events(reply, model, ids)
            ]
            error_frame = f"event: error\ndata: {json.dumps(error_body(api, reply))}\n\n"
        else:
            usage = bool((request.body.get("stream_options") or {}).get("include_usage"))
            frames = [f"data: {json.dumps(c)}\n\n" for c in openai_chunks(reply, model, ids, usage)]
            frames.append("data: [DONE]\n\n")
            error_frame = f"data: {json.dumps(error_body(api, reply))}\n\n"
        if reply.error_after is not None:
            frames = [*frames[: reply.error_after], error_frame]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for count, frame in enumerate(frames):
                if reply.cut_after is not None and count >= reply.cut_after:
                    self._cut()
                    return
                if reply.hold is not None and count == reply.hold_after:
                    reply.hold.wait(HOLD_TIMEOUT_S)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                self._chunk(frame.encode())
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client went away (cancelled)
            self.close_connection = True

    def _cut(self) -> None:
        """Drop the connection mid-body: no terminating chunk, so the client sees a cut."""
        self.close_connection = True
        self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeModel


class FakeModel:
    """The scripted model server; see the module docstring."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._queue: deque[Reply | Responder] = deque()
        self._default: Responder | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[RecordedRequest] = []
        self._server = _Server((host, 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-model",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def start(self) -> FakeModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def script(self, *replies: Reply | Responder) -> FakeModel:
        """Queue replies (or callables computing one from the request), one per request."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def set_default(self, responder: Responder | Reply | None) -> FakeModel:
        """What to answer when the queue is empty (a Reply is repeated as is)."""
        if isinstance(responder, Reply):
            fixed = responder
            self._default = lambda _request: replace(fixed)
        else:
            self._default = responder
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        with self._lock:
            return len(self._queue)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            item = self._queue.popleft() if self._queue else self._default
        if item is None:
            return Reply.error(
                400, f"fake model: script exhausted at request #{len(self.requests)}"
            )
        return item if isinstance(item, Reply) else item(request)


@pytest.fixture(name="fake_model")
def fake_model_fixture() -> Iterator[FakeModel]:
    """A started FakeModel, stopped after the test.

    Use it from a test module with ``from tests.fake_model import fake_model_fixture``
    (or list ``tests.fake_model`` in ``pytest_plugins`` of the root conftest).
    """
    server = FakeModel().start()
    try:
        yield server
    finally:
        server.stop()
