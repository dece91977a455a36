"""``jarvis mcp serve`` with the `mcp` SDK's own client, against a live daemon (its control
API on uvicorn, the agent on Xvfb, only the model scripted): over stdio and over
streamable HTTP, the tools are listed; run_task sends one progress notification per step
and returns the summary and the final screenshot; a call_user task is answered; a running
task is cancelled; the HTTP transport refuses a missing or wrong token and a foreign
Origin; an unknown task and a stopped daemon are tool errors of one line."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, ImageContent, TextContent
from PIL import Image

from tests.agent_harness import agent_settings
from tests.api_harness import is_router, is_step, moves, routed, scripted, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

pytestmark = pytest.mark.usefixtures("xserver")
ROOT = Path(__file__).resolve().parent.parent
TOOLS = {"run_task", "get_task", "list_tasks", "cancel_task", "answer", "screenshot"}


def child_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "DISPLAY", "XAUTHORITY", "LANG")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return {**env, "PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}


def stdio(data_dir: Path, errlog: Any, mode: Any = "auto") -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jarvis", "mcp", "serve", "--no-start", "--data-dir", str(data_dir)],
        env=child_env(),
        cwd=str(ROOT),
    )
    return Client(stdio_client(params, errlog=errlog), mode=mode)


class Progress:
    def __init__(self) -> None:
        self.seen: list[tuple[float, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, message))


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def image_of(result: CallToolResult) -> Image.Image:
    [image] = [c for c in result.content if isinstance(c, ImageContent)]
    assert image.mime_type in ("image/png", "image/jpeg")
    return Image.open(io.BytesIO(base64.b64decode(image.data)))


async def check_run_task(client: Client, api: Any, task_id: str, model: FakeModel) -> None:
    """run_task with three steps: one notification a step, the summary, the last image; the
    message is a task of its own, made without asking the model's router."""
    routed_before = sum(map(is_router, model.requests))
    progress = Progress()
    result = await client.session.call_tool(
        "run_task", {"text": "point twice", "timeout_s": 120}, progress_callback=progress
    )
    assert not result.is_error, text_of(result)
    found = result.structured_content
    assert {k: found[k] for k in ("id", "status", "summary", "steps", "waiting_stopped")} == {
        "id": task_id, "status": "completed", "summary": "all done", "steps": 3,
        "waiting_stopped": False,
    }  # fmt: skip
    assert found["title"] and found["created"]
    assert text_of(result) == f"{task_id} completed: all done"
    journal = api.journal(task_id)
    finished = [r for r in journal if r["kind"] == "step_finished"]
    assert [p for p, _ in progress.seen] == [1, 2, 3] == [r["step"] for r in finished]
    assert progress.seen[1][1] == f"{task_id} step 2: mouse_move, mouse_move"
    last = api.data_dir / "memory" / "screenshots" / finished[-1]["screenshot"]
    if not last.exists():
        last = api.data_dir / finished[-1]["screenshot"]
    assert image_of(result).size == Image.open(last).size
    todo = api.gateway.todos.get(task_id)
    assert (todo.source, todo.status) == ("mcp", "completed")
    assert sum(map(is_router, model.requests)) == routed_before


async def test_stdio_lists_runs_with_progress_and_image_and_reads_only_its_own_tasks(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([moves(1), moves(2), finish_reply("all done")]))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    async with serving_api(settings) as api:
        await api.gateway.submit("a person's own task", "tui")
        await until(lambda: _status(api, "T001") == "completed", 60)
        fake_model.set_default(scripted([moves(1), moves(2), finish_reply("all done")]))
        with (tmp_path / "stderr.log").open("w+") as errlog:
            async with stdio(api.data_dir, errlog) as client:
                listed = await client.session.list_tools()
                assert {t.name for t in listed.tools} == TOOLS
                schema = next(t for t in listed.tools if t.name == "run_task").input_schema
                assert schema["required"] == ["text"] and "timeout_s" in schema["properties"]
                await check_run_task(client, api, "T002", fake_model)
                tasks = await client.session.call_tool("list_tasks", {})
                assert [t["id"] for t in tasks.structured_content["tasks"]] == ["T002"]
                got = await client.session.call_tool("get_task", {"task_id": "T002"})
                assert got.structured_content["status"] == "completed"
                assert got.structured_content["steps"] == 3
                theirs = await client.session.call_tool("get_task", {"task_id": "T001"})
                assert theirs.is_error
                assert text_of(theirs) == (
                    "Error executing tool get_task: "
                    "task T001 was not given through MCP; this server touches only its own"
                )
                cancel_theirs = await client.session.call_tool("cancel_task", {"task_id": "T001"})
                assert cancel_theirs.is_error and "not given through MCP" in text_of(cancel_theirs)
                unknown = await client.session.call_tool("get_task", {"task_id": "T404"})
                assert (
                    unknown.is_error
                    and text_of(unknown) == "Error executing tool get_task: no task T404"
                )
                shot = await client.session.call_tool("screenshot", {})
                assert not shot.is_error and image_of(shot).size[0] > 0
            errlog.seek(0)
            assert "Traceback" not in errlog.read()


async def test_stdio_answer_and_cancel(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    hold = threading.Event()

    def step(request: RecordedRequest) -> Reply:
        text = request.all_text()
        if "think forever" in text:
            return Reply(text="Thought: " + "hmm " * 50, hold=hold, hold_after=4)
        if "the red one" in text:
            return Reply(text="Thought: red.", tool_calls=[call("finished", summary="red")])
        return Reply(text="Thought: ask.", tool_calls=[call("call_user", message="Which file?")])

    fake_model.set_default(routed(step))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    try:
        async with serving_api(settings) as api:
            with (tmp_path / "stderr.log").open("w+") as errlog:
                async with stdio(api.data_dir, errlog) as client:
                    asked = await client.session.call_tool("run_task", {"text": "open the file"})
                    assert asked.structured_content["status"] == "needs_user"
                    assert (
                        text_of(asked)
                        == "T001 needs_user: Which file? (reply with the answer tool)"
                    )
                    progress = Progress()
                    answered = await client.session.call_tool(
                        "answer",
                        {"task_id": "T001", "text": "the red one"},
                        progress_callback=progress,
                    )
                    assert answered.structured_content["status"] == "completed"
                    assert answered.structured_content["summary"] == "red"
                    assert len(progress.seen) == 1  # the step after the answer
                    assert _status(api, "T001") == "completed"
                    late = await client.session.call_tool(
                        "answer", {"task_id": "T001", "text": "x"}
                    )
                    assert late.is_error and text_of(late) == (
                        "Error executing tool answer: T001 is completed; it takes no answer"
                    )

                    running = asyncio.create_task(
                        client.session.call_tool("run_task", {"text": "think forever"})
                    )
                    await until(lambda: sum(map(is_step, fake_model.requests)) >= 3, 60)
                    cancelled = await client.session.call_tool("cancel_task", {"task_id": "T002"})
                    assert text_of(cancelled) == "T002 cancelled"
                    assert cancelled.structured_content["id"] == "T002"
                    assert cancelled.structured_content["status"] == "cancelled"
                    ended = await asyncio.wait_for(running, 30)
                    assert ended.structured_content["status"] == "cancelled"
                    [end] = [r for r in api.journal("T002") if r["kind"] == "task_finished"]
                    assert end["stopped_by"] == "mcp" and not hold.is_set()
                    again = await client.session.call_tool("cancel_task", {"task_id": "T002"})
                    assert again.is_error and len(text_of(again).splitlines()) == 1
    finally:
        hold.set()


async def test_a_stopped_daemon_is_a_one_line_tool_error(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([]))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    daemon = serving_api(settings)
    api = await daemon.__aenter__()
    with (tmp_path / "stderr.log").open("w+") as errlog:
        try:
            async with stdio(api.data_dir, errlog) as client:
                assert not (await client.session.call_tool("list_tasks", {})).is_error
                await daemon.__aexit__(None, None, None)  # the daemon goes; the client stays
                daemon = None
                gone = await client.session.call_tool("list_tasks", {})
                assert gone.is_error
                assert text_of(gone) == (
                    "Error executing tool list_tasks: "
                    f"no `jarvis serve` runs for {api.data_dir} (start it with `jarvis serve`)"
                )
        finally:
            if daemon is not None:
                await daemon.__aexit__(None, None, None)
        errlog.seek(0)
        assert "Traceback" not in errlog.read()


def test_no_daemon_and_no_start_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jarvis", "mcp", "serve", "--no-start", "--data-dir", str(tmp_path)],
        env=child_env(), cwd=ROOT, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"jarvis: no `jarvis serve` runs for {tmp_path}\n"


async def test_http_needs_its_token_and_a_local_origin_and_runs_a_task(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([moves(1), moves(2), finish_reply("all done")]))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    async with serving_api(settings) as api:
        command = [sys.executable, "-m", "jarvis", "mcp", "serve", "--no-start"]
        command += ["--data-dir", str(api.data_dir), "--http", "127.0.0.1:0"]
        server = subprocess.Popen(
            command, env=child_env(), cwd=ROOT, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            url = await asyncio.to_thread(_announced_url, server)
            token = (api.data_dir / "config" / "mcp_token").read_text().strip()
            assert (api.data_dir / "config" / "mcp_token").stat().st_mode & 0o077 == 0
            assert token != api.token
            await refusals(url, token, api.token)
            http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
            async with Client(
                streamable_http_client(url, http_client=http), mode="legacy"
            ) as client:
                listed = await client.session.list_tools()
                assert {t.name for t in listed.tools} == TOOLS
                await check_run_task(client, api, "T001", fake_model)
        finally:
            server.terminate()
            server.wait(20)
        assert server.stderr is not None
        assert "Traceback" not in server.stderr.read()


INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "probe", "version": "1"}},
}  # fmt: skip
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def refusals(url: str, token: str, api_token: str) -> None:
    """No token, a wrong one, the daemon's API token, a foreign Origin or Host: refused."""
    async with httpx.AsyncClient(timeout=10) as raw:
        cases = {
            "none": ({}, 401),
            "wrong": ({"authorization": "Bearer " + "x" * 43}, 401),
            "api token": ({"authorization": f"Bearer {api_token}"}, 401),
            "origin": ({"authorization": f"Bearer {token}", "origin": "http://evil.example"}, 403),
            "host": ({"authorization": f"Bearer {token}", "host": "evil.example"}, 403),
        }
        for name, (extra, code) in cases.items():
            response = await raw.post(url, json=INIT, headers={**HEADERS, **extra})
            assert response.status_code == code, name
            assert token not in response.text and "detail" in response.json()
        good = await raw.post(
            url, json=INIT, headers={**HEADERS, "authorization": f"Bearer {token}"}
        )
        assert good.status_code == 200


def _announced_url(server: subprocess.Popen[str]) -> str:
    assert server.stderr is not None
    for _ in range(20):
        line = server.stderr.readline()
        if "streamable HTTP at " in line:
            return line.split("streamable HTTP at ")[1].split()[0]
        if not line:
            break
    raise AssertionError("the MCP server did not say where it listens")


def finish_reply(summary: str) -> Reply:
    return Reply(text="Thought: done.", tool_calls=[call("finished", summary=summary)])


def _status(api: Any, todo_id: str) -> str | None:
    todo = api.gateway.todos.get(todo_id)
    return todo.status if todo is not None else None
