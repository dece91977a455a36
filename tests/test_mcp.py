"""MCP servers written with the SDK, over stdio and over streamable HTTP (uvicorn on a free
loopback port), through the real registry: list, call, images, structured content,
isError, schema errors, a crash mid-call and the restart, a hanging call, and a tool
added at run time."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.tools.audit import audit_path, read_audit
from jarvis.tools.context import ToolContext
from jarvis.tools.mcp_bridge import McpManager
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INTERNAL, INVALID_PARAMS, TIMEOUT, ToolResult
from tests.mcp_fixtures import HttpServer, mcp_settings, starts, stdio_entry, write_mcp_json

DEMO_TOOLS = {"echo", "add", "picture", "schedule", "env_names", "fail", "crash", "hang", "grow"}


class Rig:
    def __init__(self, manager: McpManager, registry: ToolRegistry, ctx: ToolContext) -> None:
        self.manager, self.registry, self.ctx = manager, registry, ctx
        self.connection = next(iter(manager.connections.values()))

    async def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        return await self.registry.execute(name, args or {}, self.ctx)


@pytest.fixture(params=["stdio", "http"])
async def rig(request: Any, tmp_path: Path) -> AsyncIterator[Rig]:
    data = tmp_path / "data"
    starts_file = tmp_path / "starts.txt"
    http: HttpServer | None = None
    if request.param == "stdio":
        write_mcp_json(data, {"demo": stdio_entry(starts_file, timeout=1.5)})
    else:
        http = HttpServer(starts_file).start()
        write_mcp_json(data, {"demo": {"url": http.url, "timeout": 1.5}})
    settings = mcp_settings(data)
    registry = ToolRegistry(settings)
    try:
        async with McpManager.running(settings) as manager:
            manager.attach(registry)
            assert await manager.wait_ready(20) == {"demo": True}
            rig = Rig(manager, registry, ToolContext.for_task(settings, "t-mcp"))
            rig.http = http  # type: ignore[attr-defined]
            rig.starts_file = starts_file  # type: ignore[attr-defined]
            yield rig
    finally:
        if http is not None:
            http.stop()


async def test_list_call_images_structured_and_errors(rig: Rig) -> None:
    assert await rig.connection.check_alive() is None  # a healthy server is not restarted
    assert rig.connection.starts == 1
    names = {n for n in rig.registry.names if n.startswith("demo__")}
    assert names == {f"demo__{t}" for t in DEMO_TOOLS}
    spec = next(s for s in rig.registry.specs() if s.name == "demo__schedule")
    assert spec.parameters["properties"]["day"]["enum"] == ["mon", "tue", "wed"]
    assert "MCP server 'demo'" in spec.description

    echo = await rig.call("demo__echo", {"text": "hi"})
    assert echo.ok and echo.data["content"] == [{"type": "text", "text": "echo: hi"}]
    add = await rig.call("demo__add", {"a": 2, "b": 40})
    assert add.ok and add.data["structured"] == {"sum": 42}

    bad = await rig.call("demo__schedule", {"day": "fri", "hour": 30})
    assert bad.error is not None and bad.error.code == INVALID_PARAMS
    assert "day: 'fri' is not one of" in bad.error.message
    assert "hour: 30 is greater than the maximum of 23" in bad.error.message
    missing = await rig.call("demo__schedule", {"day": "mon"})
    assert missing.error is not None and missing.error.code == INVALID_PARAMS
    assert "'hour' is a required property" in missing.error.message

    failed = await rig.call("demo__fail", {"reason": "disk full"})
    assert failed.error is not None and failed.error.code == INTERNAL
    assert "reported an error" in failed.error.message and "disk full" in failed.error.message

    lines = read_audit(audit_path(rig.ctx.data_dir))
    assert [line["tool_name"] for line in lines][:2] == ["demo__echo", "demo__add"]
    assert [line["error_code"] for line in lines][2:] == [INVALID_PARAMS, INVALID_PARAMS, INTERNAL]

    result = await rig.call("demo__picture", {"color": "blue"})
    assert result.ok and result.data["images_attached"] == 1
    assert result.data["content"][0]["mime_type"] == "image/png"
    (image,) = result.images
    assert image.media_type == "image/png"
    picture = Image.open(io.BytesIO(base64.b64decode(image.data_b64)))
    assert picture.size == (64, 48) and picture.getpixel((5, 5)) == (0, 0, 255)
    assert "data_b64" not in result.to_content()  # the JSON text carries no image bytes


async def test_a_tool_added_at_run_time_is_picked_up(rig: Rig) -> None:
    assert "demo__late" not in rig.registry
    grown = await rig.call("demo__grow")
    assert grown.ok
    assert await rig.connection.wait_for(lambda c: any(t.name == "late" for t in c.tools), 10)
    assert "demo__late" in rig.registry.offered()
    late = await rig.call("demo__late", {"word": "hello"})
    assert late.ok and late.data["content"][0]["text"] == "late: hello"


async def test_a_hanging_call_ends_at_the_timeout_and_the_server_goes_on(rig: Rig) -> None:
    hung = await rig.call("demo__hang")
    assert hung.error is not None and hung.error.code == TIMEOUT
    assert "within 1.5s" in hung.error.message
    after = await rig.call("demo__echo", {"text": "still here"})
    assert after.ok, after.error


async def test_a_crash_mid_call_fails_with_internal_and_the_server_restarts(rig: Rig) -> None:
    http: HttpServer | None = rig.http  # type: ignore[attr-defined]
    crashed = await rig.call("demo__crash")
    assert crashed.error is not None and crashed.error.code == INTERNAL
    if http is not None:  # an HTTP server is another process's to restart
        assert await asyncio.to_thread(http.wait_exit) == 3
        assert await rig.connection.wait_for(lambda c: c.state == "down", 15)
        down = await rig.call("demo__echo", {"text": "x"})
        assert down.error is not None and down.error.code == INTERNAL
        assert "not running" in down.error.message
        await asyncio.to_thread(http.start)
    else:
        assert "stopped during the call" in crashed.error.message
    assert await rig.connection.wait_for(lambda c: c.state == "ready" and c.starts >= 2, 20)
    again = await rig.call("demo__echo", {"text": "back"})
    assert again.ok, again.error
    assert starts(rig.starts_file) == 2  # type: ignore[attr-defined]


async def test_an_older_server_over_sse(tmp_path: Path) -> None:
    http = HttpServer(tmp_path / "starts.txt", kind="sse").start()
    try:
        data = tmp_path / "data"
        write_mcp_json(data, {"old": {"url": http.url, "headers": {"X-Token": "tok-123456"}}})
        settings = mcp_settings(data)
        registry = ToolRegistry(settings)
        async with McpManager.running(settings) as manager:
            manager.attach(registry)
            assert await manager.wait_ready(20) == {"old": True}
            (status,) = manager.status()
            assert status["transport"] == "sse" and "tok-123456" not in str(status)
            ctx = ToolContext.for_task(settings, "t-sse")
            result = await registry.execute("old__add", {"a": 1, "b": 2}, ctx)
            assert result.ok and result.data["structured"] == {"sum": 3}
            assert await manager.connections["old"].check_alive() is None
    finally:
        http.stop()


async def test_the_handshake_protocol_pings_and_follows_list_changes(tmp_path: Path) -> None:
    """A server held to the pre-2026 protocol: liveness by ping, changes by notification."""
    data = tmp_path / "data"
    entry = stdio_entry(tmp_path / "starts.txt", timeout=1.5) | {"protocol": "legacy"}
    write_mcp_json(data, {"demo": entry})
    settings = mcp_settings(data)
    registry = ToolRegistry(settings)
    async with McpManager.running(settings) as manager:
        manager.attach(registry)
        assert await manager.wait_ready(20) == {"demo": True}
        connection = manager.connections["demo"]
        assert connection.protocol is not None and connection.protocol < "2026"
        assert await connection.check_alive() is None
        ctx = ToolContext.for_task(settings, "t-legacy")
        assert (await registry.execute("demo__grow", {}, ctx)).ok
        assert await connection.wait_for(lambda c: any(t.name == "late" for t in c.tools), 10)
        late = await registry.execute("demo__late", {"word": "old"}, ctx)
        assert late.ok and late.data["content"][0]["text"] == "late: old"
        assert connection.starts == 1


async def test_a_stdio_server_gets_its_env_but_not_our_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-must-stay-here-123456")
    monkeypatch.setenv("SOME_OTHER_TOKEN", "tok-must-stay-here-123456")
    data = tmp_path / "data"
    write_mcp_json(data, {"demo": stdio_entry(tmp_path / "starts.txt")})
    settings = mcp_settings(data)
    registry = ToolRegistry(settings)
    async with McpManager.running(settings) as manager:
        manager.attach(registry)
        assert await manager.wait_ready(20) == {"demo": True}
        ctx = ToolContext.for_task(settings, "t-env")
        result = await registry.execute("demo__env_names", {}, ctx)
    assert result.ok, result.error
    names = set(result.data["structured"]["result"])
    assert "DEMO_STARTS_FILE" in names and "PATH" in names
    assert not names & {"ANTHROPIC_API_KEY", "SOME_OTHER_TOKEN", "OPENAI_API_KEY"}
