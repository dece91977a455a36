"""A scripted model behind a loopback server that speaks the Gemini REST API.

The real ``google-genai`` SDK talks to it over 127.0.0.1: ``POST
/{version}/models/{model}:generateContent`` answers one scripted reply as a
``GenerateContentResponse`` body, ``:streamGenerateContent?alt=sse`` the same reply as
one SSE event. A reply is a list of parts as the API writes them (camelCase:
``{"text": ...}``, ``{"functionCall": {"name", "args"}, "thoughtSignature": ...}``), built
with :func:`fc` and :func:`text`, or :class:`GeminiError` for an error status.

``requests`` records every request: ``path``, ``headers`` (names lower-cased: the key
comes in ``x-goog-api-key``) and the parsed JSON ``body``.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


def fc(name: str, signature: str | None = None, **args: Any) -> dict[str, Any]:
    """A function-call part (with a thought signature, as Gemini 2.5+ sends)."""
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def text(value: str) -> dict[str, Any]:
    return {"text": value}


@dataclass
class GeminiError:
    status: int
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class GeminiRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def contents(self) -> list[dict[str, Any]]:
        return list(self.body.get("contents") or [])

    def function_responses(self) -> list[dict[str, Any]]:
        return [
            p["functionResponse"]
            for c in self.contents
            for p in c.get("parts", [])
            if "functionResponse" in p
        ]


Scripted = list[dict[str, Any]] | GeminiError


def response_body(parts: list[dict[str, Any]], model: str) -> dict[str, Any]:
    calls = any("functionCall" in p for p in parts)
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 20,
            "candidatesTokenCount": 5 if calls else 3,
            "totalTokenCount": 25,
        },
        "modelVersion": model,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.split("?", 1)[0]
        model, _, method = path.rpartition("/models/")[2].partition(":")
        request = GeminiRequest(
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=json.loads(raw) if raw else {},
        )
        if method not in ("generateContent", "streamGenerateContent"):
            self._send(404, {"error": {"code": 404, "message": f"no route {path}"}})
            return
        reply = self.server.fake.next_reply(request)
        if isinstance(reply, GeminiError):
            body = {"error": {"code": reply.status, "message": reply.message, "status": "ERR"}}
            self._send(reply.status, body, reply.headers)
        elif method == "streamGenerateContent":
            data = f"data: {json.dumps(response_body(reply, model))}\r\n\r\n".encode()
            self._send_raw(200, data, "text/event-stream")
        else:
            self._send(200, response_body(reply, model))

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
        self._send_raw(status, json.dumps(body).encode(), "application/json", headers)

    def _send_raw(
        self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGemini


class FakeGemini:
    def __init__(self) -> None:
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self.requests: list[GeminiRequest] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def script(self, *replies: Scripted) -> FakeGemini:
        with self._lock:
            self._queue.extend(replies)
        return self

    def next_reply(self, request: GeminiRequest) -> Scripted:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        return GeminiError(400, f"fake gemini: script exhausted at request #{len(self.requests)}")

    def start(self) -> FakeGemini:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture(name="fake_gemini")
def fake_gemini_fixture() -> Iterator[FakeGemini]:
    server = FakeGemini().start()
    try:
        yield server
    finally:
        server.stop()
