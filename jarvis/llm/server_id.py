"""Which serving stack answers at an OpenAI-compatible base URL, and its version.

Each stack says it in its own place (shapes as of the versions named in the README's
"Serving open models"): vLLM ``GET /version`` -> ``{"version": "0.19.0"}``; SGLang
``GET /get_server_info`` (``/server_info`` in newer releases) -> its server arguments
with ``version``, ``tool_call_parser`` and ``reasoning_parser``; llama.cpp ``GET /props``
-> ``build_info`` (``b6710-74b8fc17``), ``chat_template``, ``modalities``; Ollama
``GET /api/version`` -> ``{"version": "0.12.6"}``. These live at the server's root, not
under ``/v1``. When none answers, the response headers name what they can (``server:``,
or an ``x-...-version`` header); else the server is "unknown".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 3.0
_VERSION_HEADER = re.compile(r"^x-[\w-]*version$", re.I)


@dataclass(frozen=True)
class ServerInfo:
    name: str = "unknown"
    version: str = ""
    details: dict[str, Any] = field(default_factory=dict, compare=False)
    """What the probe said beyond the version (SGLang's parsers, llama.cpp's template)."""

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()


def root_url(base_url: str) -> str:
    """The server's root: ``http://host:8000/v1/`` -> ``http://host:8000``."""
    parts = urlsplit(base_url)
    path = re.sub(r"/v\d+/?$", "", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _vllm(body: dict[str, Any]) -> ServerInfo | None:
    if set(body) == {"version"} and isinstance(body["version"], str):
        return ServerInfo("vLLM", body["version"])
    return None


def _sglang(body: dict[str, Any]) -> ServerInfo | None:
    if "version" not in body or "model_path" not in body:
        return None
    keys = ("tool_call_parser", "reasoning_parser", "model_path")
    return ServerInfo("SGLang", str(body["version"]), {k: body.get(k) for k in keys})


def _llama_cpp(body: dict[str, Any]) -> ServerInfo | None:
    if "build_info" not in body and "default_generation_settings" not in body:
        return None
    keys = ("chat_template", "modalities", "model_path")
    return ServerInfo("llama.cpp", str(body.get("build_info", "")), {k: body.get(k) for k in keys})


def _ollama(body: dict[str, Any]) -> ServerInfo | None:
    if isinstance(body.get("version"), str):
        return ServerInfo("Ollama", body["version"])
    return None


PROBES = (
    ("/get_server_info", _sglang),
    ("/server_info", _sglang),
    ("/version", _vllm),
    ("/props", _llama_cpp),
    ("/api/version", _ollama),
)


def from_headers(headers: Mapping[str, str]) -> ServerInfo:
    """What the response headers say: ``server: llama.cpp``, ``x-...-version: 1.2``."""
    lower = {k.lower(): v for k, v in headers.items()}
    server = lower.get("server", "")
    version = next((v for k, v in lower.items() if _VERSION_HEADER.match(k)), "")
    if not server and not version:
        return ServerInfo()
    name, _, rest = server.partition("/")
    return ServerInfo(name or "unknown", version or rest)


async def identify(
    base_url: str, api_key: str | None = None, headers: Mapping[str, str] | None = None
) -> ServerInfo:
    """The server at ``base_url``: the first probe that answers in its stack's shape, else
    what ``headers`` (of a chat response) say. Never raises."""
    auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = root_url(base_url)
    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S, headers=auth) as client:
            for path, read in PROBES:
                info = await _probe(client, root + path, read)
                if info is not None:
                    return info
    except httpx.HTTPError as exc:
        log.info("server version probes at %s failed: %s", root, exc)
    return from_headers(headers or {})


async def _probe(client: httpx.AsyncClient, url: str, read: Any) -> ServerInfo | None:
    try:
        response = await client.get(url)
    except httpx.TimeoutException:
        return None
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    found: ServerInfo | None = read(body) if isinstance(body, dict) else None
    return found
