"""``jarvis mcp serve`` as today's clients reach it: the `mcp` SDK's own client in its default
mode (a ``server/discover`` probe first) and in ``mode="legacy"`` (the ``initialize``
handshake), over stdio and over streamable HTTP, lists the tools, runs a task and reads it
back in the API's task shape; over HTTP a client without the token, or with a wrong one, is
refused with a 401 the client reports as "missing or wrong token" (a JSON-RPC error in the
body, and a Bearer challenge that names no OAuth server). One live daemon (its control API
on uvicorn, the agent on Xvfb, only the model scripted) serves every case."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from tests.agent_harness import agent_settings
from tests.api_harness import scripted, serving_api
from tests.fake_model import FakeModel
from tests.test_mcp_serve import (
    HEADERS,
    INIT,
    ROOT,
    TOOLS,
    _announced_url,
    child_env,
    stdio,
    text_of,
)

pytestmark = pytest.mark.usefixtures("xserver")
MODES = ("auto", "legacy")
TOKEN_LINE = "missing or wrong token (Authorization: Bearer TOKEN)"


@asynccontextmanager
async def http_server(data_dir: Path) -> AsyncIterator[str]:
    """``jarvis mcp serve --http 127.0.0.1:0`` for ``data_dir``; its /mcp URL."""
    command = [sys.executable, "-m", "jarvis", "mcp", "serve", "--no-start"]
    command += ["--data-dir", str(data_dir), "--http", "127.0.0.1:0"]
    server = subprocess.Popen(
        command, env=child_env(), cwd=ROOT, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield await asyncio.to_thread(_announced_url, server)
    finally:
        server.terminate()
        server.wait(20)
        assert server.stderr is not None
        assert "Traceback" not in server.stderr.read()


def http_client(url: str, mode: str, token: str | None) -> Client:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    http = create_mcp_http_client(headers=headers)
    return Client(streamable_http_client(url, http_client=http), mode=mode)  # type: ignore[arg-type]


async def use(client: Client, mode: str, text: str, ran_before: str = "") -> str:
    """Connect in ``mode``, list the tools, run a task and read it back; its id. With
    ``ran_before`` (a task id) only read that task back (a stdio start is slow)."""
    async with client:
        session = client.session
        if mode == "auto":  # the default mode: the discover probe was answered
            assert session.discover_result is not None and session.initialize_result is None
        else:
            assert session.initialize_result is not None and session.discover_result is None
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        task: dict[str, Any] | None = {"id": ran_before}
        if not ran_before:
            ran = await session.call_tool("run_task", {"text": text, "timeout_s": 120})
            assert not ran.is_error, text_of(ran)
            task = ran.structured_content
            assert task is not None and task["status"] == "completed"
            assert task["summary"] == "done" and text_of(ran) == f"{task['id']} completed: done"
        assert task is not None
        got = await session.call_tool("get_task", {"task_id": task["id"]})
        assert got.structured_content is not None
        assert (got.structured_content["id"], got.structured_content["status"]) == (
            task["id"],
            "completed",
        )
        listed = await session.call_tool("list_tasks", {"status": "completed"})
        assert listed.structured_content is not None
        assert task["id"] in [t["id"] for t in listed.structured_content["tasks"]]
        return str(task["id"])


def mcp_error(exc: BaseException) -> MCPError | None:
    """The MCPError inside ``exc`` (the client raises it inside exception groups)."""
    if isinstance(exc, MCPError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = mcp_error(inner)
        if found is not None:
            return found
    return None


async def refused_connect(url: str, mode: str, token: str | None) -> MCPError:
    try:
        async with http_client(url, mode, token):
            pass
    except BaseException as exc:  # the client's exception group
        found = mcp_error(exc)
        if found is None:
            raise
        return found
    raise AssertionError(f"a client with token {token!r} in {mode} mode was let in")


async def test_default_and_legacy_clients_over_stdio_and_http_and_a_401_they_report(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([]))  # every task finishes at its first step
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    async with serving_api(settings) as api:
        ids = []
        with (tmp_path / "stderr.log").open("w+") as errlog:
            ids.append(await use(stdio(api.data_dir, errlog), "auto", "stdio auto"))
            await use(stdio(api.data_dir, errlog, "legacy"), "legacy", "", ran_before=ids[0])
            errlog.seek(0)
            assert "Traceback" not in errlog.read()
        async with http_server(api.data_dir) as url:
            token = (api.data_dir / "config" / "mcp_token").read_text().strip()
            for mode in MODES:
                ids.append(await use(http_client(url, mode, token), mode, f"http {mode}"))
            for mode in MODES:
                for wrong in (None, "x" * 43, api.token):
                    error = await refused_connect(url, mode, wrong)
                    assert error.error.message == TOKEN_LINE, (mode, wrong)
            await raw_refusal(url)
        assert len(set(ids)) == 3
        assert {api.gateway.todos.get(i).source for i in ids} == {"mcp"}  # type: ignore[union-attr]


async def raw_refusal(url: str) -> None:
    """The 401 on the wire: a JSON-RPC error with the request's id, the API's detail, and
    a Bearer challenge with error="invalid_token" and no resource_metadata."""
    async with httpx.AsyncClient(timeout=10) as raw:
        response = await raw.post(url, json=INIT, headers=HEADERS)
    assert response.status_code == 401
    body = response.json()
    assert body["error"] == {"code": -32001, "message": TOKEN_LINE}
    assert (body["id"], body["detail"]) == (1, TOKEN_LINE)
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge
    assert "resource_metadata" not in challenge
