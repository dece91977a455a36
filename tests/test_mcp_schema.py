"""Every tool ``jarvis mcp serve`` offers, as a client lists it (the `mcp` SDK's client,
in-process): a clean description (no docstring indentation, no RST markup), every
parameter described, an output schema, all four annotations; run_task and answer say the
task drives the user's real shared desktop and that timeout_s stops only the waiting. The
status words are the API's, and every error is one line: bad arguments, a wrong status word
(naming the valid ones), and a daemon that is not there."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_args

import pytest
from mcp import Client
from mcp_types import Tool

from jarvis.api.models import TodoView
from jarvis.mcp_server.link import DaemonLink
from jarvis.mcp_server.shapes import STATUSES, McpTask
from jarvis.mcp_server.tools import build_server
from tests.test_mcp_serve import TOOLS, text_of

MARKUP = re.compile(r"``|:(class|mod|func|meth|data|attr):|`[^`]+`_|\n\s")
WRITES = {"run_task", "answer", "cancel_task"}


@asynccontextmanager
async def connected(tmp_path: Path) -> AsyncIterator[Client]:
    """The server with its daemon link pointing at a port nobody listens on."""
    link = DaemonLink(tmp_path, "http://127.0.0.1:9", "t" * 43)
    try:
        async with Client(build_server(link)) as client:
            yield client
    finally:
        await link.aclose()


def clean(text: str | None) -> bool:
    return bool(text) and text == text.strip() and MARKUP.search(text) is None  # type: ignore[union-attr]


def described(schema: dict[str, Any]) -> list[str]:
    """The properties of ``schema`` (and of its $defs) that have no clean description."""
    found = []
    for where in [schema, *schema.get("$defs", {}).values()]:
        for name, prop in where.get("properties", {}).items():
            if not clean(prop.get("description")):
                found.append(name)
    return found


async def test_every_tool_is_described_with_schemas_and_annotations(tmp_path: Path) -> None:
    async with connected(tmp_path) as client:
        tools: list[Tool] = (await client.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        for tool in tools:
            assert clean(tool.description), tool.name
            assert tool.title, tool.name
            assert described(tool.input_schema) == [], tool.name
            assert tool.output_schema is not None, tool.name
            assert tool.output_schema["type"] == "object"
            assert clean(tool.output_schema.get("description")), tool.name
            assert described(tool.output_schema) == [], tool.name
            hints = tool.annotations
            assert hints is not None, tool.name
            values = (
                hints.read_only_hint,
                hints.destructive_hint,
                hints.idempotent_hint,
                hints.open_world_hint,
            )
            assert None not in values, tool.name
            assert hints.read_only_hint is (tool.name not in WRITES), tool.name
            assert hints.destructive_hint is (tool.name in WRITES), tool.name
        by_name = {t.name: t for t in tools}
        for name in ("run_task", "answer"):
            text = by_name[name].description or ""
            assert "real, shared desktop" in text, name
            assert "timeout_s stops only the waiting" in text, name
            assert by_name[name].annotations.open_world_hint is True  # type: ignore[union-attr]
        assert "mouse and keyboard" in (by_name["run_task"].description or "")
        assert "task_id" in by_name["answer"].input_schema["properties"]


async def test_one_vocabulary_the_apis_status_words_and_task_shape(tmp_path: Path) -> None:
    async with connected(tmp_path) as client:
        assert get_args(TodoView.model_fields["status"].annotation) == STATUSES
        shape = set(McpTask.model_fields)
        assert shape <= set(TodoView.model_fields)
        assert {"id", "title", "status", "summary"} <= shape
        tools = {t.name: t for t in (await client.list_tools()).tools}
        status = tools["list_tasks"].input_schema["properties"]["status"]
        assert [s["enum"] for s in status["anyOf"] if "enum" in s] == [list(STATUSES)]
        for name in ("run_task", "answer", "get_task", "cancel_task"):
            schema = tools[name].output_schema or {}
            assert schema["properties"]["status"]["enum"] == list(STATUSES), name
            assert {"id", "title", "status"} <= set(schema["required"]), name
            assert "task_id" not in schema["properties"], name


@pytest.mark.parametrize(
    ("tool", "arguments", "line"),
    [
        (
            "list_tasks",
            {"status": "finished"},
            "status: must be one of pending, in_progress, completed, failed, needs_user, "
            "cancelled (got 'finished')",
        ),
        (
            "run_task",
            {"text": "", "timeout_s": -1},
            "text: string should have at least 1 character (got ''); "
            "timeout_s: input should be greater than 0 (got -1)",
        ),
        ("get_task", {}, "task_id is required"),
    ],
)
async def test_bad_arguments_are_one_line(
    tmp_path: Path, tool: str, arguments: dict[str, Any], line: str
) -> None:
    async with connected(tmp_path) as client:
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        assert text_of(result) == f"Error executing tool {tool}: {line}"
        assert "http" not in text_of(result)


async def test_no_daemon_is_one_line(tmp_path: Path) -> None:
    async with connected(tmp_path) as client:
        result = await client.call_tool("list_tasks", {"status": "completed"})
        assert result.is_error
        assert text_of(result) == (
            "Error executing tool list_tasks: "
            f"no `jarvis serve` runs for {tmp_path} (start it with `jarvis serve`)"
        )
