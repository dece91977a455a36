"""Loopback servers that answer the way vLLM, SGLang, llama.cpp and Ollama answer a served
Qwen GUI model, for `jarvis calibrate --serving` and the served-call parsing tests.

Each :class:`Shape` is one server as a user runs it: its version endpoint (a GET at the
server's root), the headers of its chat responses, and what ``POST /v1/chat/completions``
streams back (SSE ``chat.completion.chunk`` objects, ``data: [DONE]`` last) or the error
it returns. The model behind it looks at the picture it was sent (the red circle's
centroid) and answers on Qwen3-VL's 0..1000 scale, written the way the model writes it.
Shapes, with the versions they come from:

- ``VLLM_HERMES``: vLLM 0.19.0, ``--enable-auto-tool-choice --tool-call-parser hermes``;
  ``GET /version`` -> ``{"version": "0.19.0"}``, ``server: uvicorn``; native ``tool_calls``
  streamed as vLLM streams them (id, type and name first, arguments in pieces).
- ``VLLM_XML_THINK``: vLLM 0.19.0, ``--tool-call-parser qwen3_coder --reasoning-parser
  qwen3``; the model writes Qwen3.5's XML ``<tool_call>`` inside ``<think>``, so it ends up
  in the ``reasoning`` delta field with no ``tool_calls`` (vllm-project/vllm#39056); with
  ``tool_choice: "required"`` the reply is ``tool_calls: []`` with finish_reason
  ``tool_calls`` (vllm-project/vllm#35936, #54808).
- ``VLLM_NO_PARSER``: vLLM 0.19.0 started without ``--enable-auto-tool-choice``: HTTP 400
  ``"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be
  set``; a request without tools gets the model's own ``<tool_call>`` text.
- ``SGLANG_QWEN25``: SGLang 0.5.3, ``--tool-call-parser qwen25``, the model writing the XML
  form: the qwen25 detector takes the text from ``<tool_call>`` on and drops what it
  cannot read as JSON, so content and tool_calls come back empty;
  ``GET /get_server_info`` -> the server arguments with ``version``.
- ``SGLANG_PLAIN``: SGLang 0.5.3 without a tool parser: the call stays in the content
  (``reasoning_content`` carries the thinking).
- ``LLAMA_NO_JINJA``: llama.cpp b6710 without ``--jinja``: HTTP 500 ``tools param
  requires --jinja flag`` (type ``server_error``); ``GET /props`` -> ``build_info``,
  ``chat_template``, ``modalities``; ``Server: llama.cpp``.
- ``LLAMA_NO_MMPROJ``: llama.cpp b6710 with ``--jinja`` but no ``--mmproj``: HTTP 500
  ``image input is not supported - hint: if this is unexpected, you may need to provide
  the mmproj``.
- ``OLLAMA_NO_TOOLS``: Ollama 0.12.6 with ``qwen2.5vl:7b`` (no tool template): HTTP 400
  ``"qwen2.5vl:7b" does not support tools`` in OpenAI's error shape;
  ``GET /api/version`` -> ``{"version": "0.12.6"}``; without tools the call is text.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from PIL import Image

RED = (220, 30, 30)


@dataclass
class Answer:
    deltas: list[dict[str, Any]] = field(default_factory=list)
    finish: str = "stop"
    status: int = 200
    error: dict[str, Any] | None = None


@dataclass
class Shape:
    name: str
    gets: dict[str, Any]
    headers: dict[str, str]
    answer: Callable[[dict[str, Any]], Answer]


# --- what the model writes ------------------------------------------------------------


def looked_point(body: dict[str, Any]) -> tuple[int, int]:
    """Where the red circle is in the last picture sent, on Qwen3-VL's 0..1000 scale."""
    url = ""
    for message in body["messages"]:
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "image_url":
                url = part["image_url"]["url"]
    image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
    pixels = np.asarray(image, dtype=np.int16)
    near = np.abs(pixels - np.array(RED, dtype=np.int16)).sum(axis=2) < 40
    ys, xs = np.nonzero(near)
    assert len(xs), "no red circle in the picture sent"
    cx, cy = float(xs.mean()) + 0.5, float(ys.mean()) + 0.5
    return round(cx / image.width * 1000), round(cy / image.height * 1000)


def json_call(body: dict[str, Any]) -> str:
    x, y = looked_point(body)
    args = {"action": "left_click", "coordinate": [x, y]}
    return f'<tool_call>\n{{"name": "computer_use", "arguments": {json.dumps(args)}}}\n</tool_call>'


def xml_call(body: dict[str, Any]) -> str:
    """Qwen3.5's XML form, as vLLM's qwen3_coder parser documents it."""
    x, y = looked_point(body)
    return (
        "<tool_call>\n<function=computer_use>\n<parameter=action>\nleft_click\n</parameter>\n"
        f"<parameter=coordinate>\n[{x}, {y}]\n</parameter>\n</function>\n</tool_call>"
    )


def pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def has_tools(body: dict[str, Any]) -> bool:
    return bool(body.get("tools"))


def error(status: int, message: str, kind: str) -> Answer:
    return Answer(status=status, error={"error": {"message": message, "type": kind,
                                                  "param": None, "code": status}})  # fmt: skip


# --- the servers ---------------------------------------------------------------------


def _vllm_hermes(body: dict[str, Any]) -> Answer:
    x, y = looked_point(body)
    args = json.dumps({"action": "left_click", "coordinate": [x, y]})
    head = {"index": 0, "id": "chatcmpl-tool-7f3a", "type": "function",
            "function": {"name": "computer_use", "arguments": ""}}  # fmt: skip
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}, {"tool_calls": [head]}]
    deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": p}}]} for p in pieces(args)]
    return Answer(deltas, "tool_calls")


def _vllm_xml_think(body: dict[str, Any]) -> Answer:
    thought = f"The OK button is the red circle.\n{xml_call(body)}\n"
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"reasoning": p} for p in pieces(thought)]
    if body.get("tool_choice") == "required":
        return Answer(deltas, "tool_calls")  # tool_calls: [] (vllm#35936)
    return Answer([*deltas, {"content": "\n\n"}], "stop")


def _text_reply(body: dict[str, Any]) -> Answer:
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": p} for p in pieces(json_call(body))]
    return Answer(deltas, "stop")


def _vllm_no_parser(body: dict[str, Any]) -> Answer:
    if has_tools(body) and body.get("tool_choice", "auto") == "auto":
        return error(400, '"auto" tool choice requires --enable-auto-tool-choice and '
                     "--tool-call-parser to be set", "BadRequestError")  # fmt: skip
    return _text_reply(body)


def _sglang_qwen25(body: dict[str, Any]) -> Answer:
    looked_point(body)  # the model wrote the XML form; the qwen25 detector dropped it
    return Answer([{"role": "assistant", "content": ""}], "stop")


def _sglang_plain(body: dict[str, Any]) -> Answer:
    reply = _text_reply(body)
    reply.deltas.insert(1, {"reasoning_content": "The red circle says OK."})
    return reply


def _llama_no_jinja(body: dict[str, Any]) -> Answer:
    if has_tools(body):
        return error(500, "tools param requires --jinja flag", "server_error")
    return _text_reply(body)


def _llama_no_mmproj(body: dict[str, Any]) -> Answer:
    return error(500, "image input is not supported - hint: if this is unexpected, you may "
                 "need to provide the mmproj", "server_error")  # fmt: skip


def _ollama_no_tools(body: dict[str, Any]) -> Answer:
    if has_tools(body):
        return error(400, f'"{body["model"]}" does not support tools', "invalid_request_error")
    return _text_reply(body)


VLLM = {"/version": {"version": "0.19.0"}}
SGLANG = {"/get_server_info": {"model_path": "Qwen/Qwen3-VL-8B-Instruct", "version": "0.5.3",
                               "tool_call_parser": "qwen25", "reasoning_parser": None}}  # fmt: skip
SGLANG_NO_PARSER = {"/get_server_info": {**SGLANG["/get_server_info"], "tool_call_parser": None}}
LLAMA = {"/props": {"build_info": "b6710-74b8fc17", "chat_template": "{%- for m in messages %}",
                    "modalities": {"vision": True, "audio": False},
                    "default_generation_settings": {"n_ctx": 8192}}}  # fmt: skip
LLAMA_TEXT_ONLY = {"/props": {**LLAMA["/props"], "modalities": {"vision": False, "audio": False}}}
OLLAMA = {"/api/version": {"version": "0.12.6"}}
UVICORN = {"server": "uvicorn"}

VLLM_HERMES = Shape("vllm-hermes", VLLM, UVICORN, _vllm_hermes)
VLLM_XML_THINK = Shape("vllm-xml-think", VLLM, UVICORN, _vllm_xml_think)
VLLM_NO_PARSER = Shape("vllm-no-parser", VLLM, UVICORN, _vllm_no_parser)
SGLANG_QWEN25 = Shape("sglang-qwen25", SGLANG, UVICORN, _sglang_qwen25)
SGLANG_PLAIN = Shape("sglang-plain", SGLANG_NO_PARSER, UVICORN, _sglang_plain)
LLAMA_NO_JINJA = Shape("llama-no-jinja", LLAMA, {"Server": "llama.cpp"}, _llama_no_jinja)
LLAMA_NO_MMPROJ = Shape(
    "llama-no-mmproj", LLAMA_TEXT_ONLY, {"Server": "llama.cpp"}, _llama_no_mmproj
)
OLLAMA_NO_TOOLS = Shape("ollama-no-tools", OLLAMA, {}, _ollama_no_tools)


# --- the HTTP side -------------------------------------------------------------------


def _chunk(model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"id": "chatcmpl-5e1d", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish}]}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def version_string(self) -> str:
        """The ``Server`` header: the shape's own (http.server would send ``BaseHTTP/0.6``)."""
        return next(
            (v for k, v in self.server.owner.shape.headers.items() if k.lower() == "server"), ""
        )

    def _headers(self, headers: dict[str, str]) -> None:
        for name, value in headers.items():
            if name.lower() != "server":  # (sent by send_response)
                self.send_header(name, value)

    def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self._headers(headers)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.server.owner.gets.append(self.path)
        found = self.server.owner.shape.gets.get(self.path)
        if found is None:
            self._send(404, {"detail": "Not Found"}, {})
        else:
            self._send(200, found, self.server.owner.shape.headers)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length))
        owner = self.server.owner
        owner.requests.append(body)
        answer = owner.shape.answer(body)
        if answer.status != 200:
            self._send(answer.status, answer.error, owner.shape.headers)
            return
        self.send_response(200)
        self._headers(owner.shape.headers)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        model = body["model"]
        chunks = [_chunk(model, d, None) for d in answer.deltas]
        chunks.append(_chunk(model, {}, answer.finish))
        usage = {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960}
        chunks.append({**_chunk(model, {}, None), "choices": [], "usage": usage})
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ServingServer


class ServingServer:
    """One loopback server answering in ``shape``; ``requests`` are the chat bodies."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ServingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def serving(shape: Shape) -> Iterator[ServingServer]:
    with ServingServer(shape) as server:
        yield server
