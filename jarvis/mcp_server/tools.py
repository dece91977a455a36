"""The tools ``jarvis mcp serve`` offers an MCP client, each a few calls of the control API.

``run_task`` posts the text as a message of the ``mcp`` channel, finds the task the router
made of it, follows the task's journal lines on ``GET /api/events`` (from the seq it read
before posting, so nothing is missed) with one progress notification per finished step,
and returns the ending: a text line, the final screenshot as an image, and
``{task_id, status, summary, steps}`` as structured content. ``answer`` sends the answer to
a task's ``call_user`` question and follows it the same way. Only tasks of the mcp channel
are seen or touched here; approvals, takeover and settings are not offered at all.
Every failure is a tool error with one line (:class:`~mcp.server.mcpserver.exceptions.ToolError`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import CallToolResult, ContentBlock, TextContent
from pydantic import Field

from jarvis import __version__
from jarvis.mcp_server.link import CHANNEL, DaemonError, DaemonLink

ROUTE_TIMEOUT_S = 60.0
ROUTE_POLL_S = 0.1
DEFAULT_TIMEOUT_S = 600.0
Status = Literal["pending", "in_progress", "needs_user", "completed", "failed", "cancelled"]
INSTRUCTIONS = (
    "Jarvis is a desktop computer-use agent: it sees the screen and moves the real mouse "
    "and keyboard. Give it a desktop task in plain words with run_task; it reports each "
    "step as progress and returns the summary and the final screenshot. A task that asks a "
    "question ends with status needs_user: reply with answer. Approvals of held calls are "
    "given by a person in the Jarvis TUI or web panel, never through MCP."
)


def build_server(link: DaemonLink) -> MCPServer[Any]:
    """The MCP server whose tools reach the daemon through ``link``."""
    server: MCPServer[Any] = MCPServer(
        "jarvis", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    _add_followed_tools(server, link)
    _add_one_call_tools(server, link)
    return server


def _add_followed_tools(server: MCPServer[Any], link: DaemonLink) -> None:
    """``run_task`` and ``answer``: each hands the daemon words, then follows the task to
    its next ending."""

    @server.tool(structured_output=False)
    async def run_task(
        text: Annotated[str, Field(min_length=1, description="the task, in plain words")],
        ctx: Context,
        timeout_s: Annotated[
            float, Field(gt=0, le=86400, description="how long to wait for the task to end")
        ] = DEFAULT_TIMEOUT_S,
    ) -> CallToolResult:
        """Give Jarvis a desktop task and wait for it to end: a progress notification per
        step; returns the summary, the status and the final screenshot."""
        async with _errors():
            cursor = int((await link.health()).get("last_seq") or 0)
            message_id = await link.submit(text)
            task_id = await _task_of(link, message_id)
            return await _follow(link, ctx, task_id, cursor, timeout_s)

    @server.tool(structured_output=False)
    async def answer(
        task_id: Annotated[str, Field(min_length=1, max_length=128)],
        text: Annotated[str, Field(min_length=1, description="the answer to its question")],
        ctx: Context,
        timeout_s: Annotated[float, Field(gt=0, le=86400)] = DEFAULT_TIMEOUT_S,
    ) -> CallToolResult:
        """Answer the question of a task that ended with status needs_user; the task goes
        on, and this waits for its next ending like run_task."""
        async with _errors():
            await _own(link, task_id)
            cursor = int((await link.health()).get("last_seq") or 0)
            await link.answer(task_id, text)
            return await _follow(link, ctx, task_id, cursor, timeout_s)


def _add_one_call_tools(server: MCPServer[Any], link: DaemonLink) -> None:
    """``get_task``, ``list_tasks``, ``cancel_task`` and ``screenshot``: a call or two of
    the control API each."""

    @server.tool()
    async def get_task(
        task_id: Annotated[str, Field(min_length=1, max_length=128)],
    ) -> dict[str, Any]:
        """The state of one task given through MCP: status, summary, steps, cost."""
        async with _errors():
            todo = await _own(link, task_id)
            view = await link.task(task_id)
            return _task_state(todo, view)

    @server.tool()
    async def list_tasks(status: Status | None = None) -> dict[str, Any]:
        """The tasks given through MCP, oldest first (only those of ``status`` if given)."""
        async with _errors():
            todos = [t for t in await link.todos() if t.get("source") == CHANNEL]
            if status is not None:
                todos = [t for t in todos if t.get("status") == status]
            return {"tasks": [_brief(t) for t in todos]}

    @server.tool()
    async def cancel_task(task_id: Annotated[str, Field(min_length=1, max_length=128)]) -> str:
        """Cancel a task given through MCP (a running one stops within a moment)."""
        async with _errors():
            await _own(link, task_id)
            done = await link.cancel(task_id)
            return f"{done.get('task_id', task_id)} {done.get('status', 'cancelled')}"

    @server.tool()
    async def screenshot() -> Image:
        """The desktop Jarvis works on, as it is now (else the latest step's screenshot)."""
        async with _errors():
            found = await link.image("/api/screen/live", "/api/screen/latest")
            if found is None:
                raise ToolError("no screen to show: the daemon cannot capture its display now")
            return Image(data=found, format=_format(found))


class _errors:
    """Turn a DaemonError into a tool error with its one line."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, DaemonError):
            raise ToolError(str(exc)) from None


async def _own(link: DaemonLink, task_id: str) -> dict[str, Any]:
    """The todo of ``task_id`` when it is a task of the mcp channel, else a tool error."""
    todo = next((t for t in await link.todos() if t.get("id") == task_id), None)
    if todo is None:
        raise ToolError(f"no task {task_id}")
    if todo.get("source") != CHANNEL:
        raise ToolError(
            f"task {task_id} was not given through MCP; this server touches only its own"
        )
    return todo


async def _task_of(link: DaemonLink, message_id: str) -> str:
    """The id of the task the router made of (or merged) ``message_id``."""
    deadline = time.monotonic() + ROUTE_TIMEOUT_S
    while time.monotonic() < deadline:
        for todo in await link.todos():
            if message_id in (todo.get("message_ids") or []):
                return str(todo["id"])
        await asyncio.sleep(ROUTE_POLL_S)
    raise ToolError(
        f"message {message_id} was not made a task within {ROUTE_TIMEOUT_S:.0f} s "
        "(is the daemon's router waiting for the model?)"
    )


async def _follow(
    link: DaemonLink, ctx: Context, task_id: str, cursor: int, timeout_s: float
) -> CallToolResult:
    """Follow ``task_id``'s journal after ``cursor`` to its ending, with progress."""
    steps = 0
    calls: list[str] = []
    ending: dict[str, Any] | None = None
    try:
        async with asyncio.timeout(timeout_s):
            async for line in link.events(cursor):
                if line.get("task_id") != task_id:
                    continue
                kind = line.get("kind")
                if kind == "step_started":
                    calls = []
                elif kind == "tool_call_started":
                    calls.append(str(line.get("tool_name")))
                elif kind == "step_finished":
                    steps += 1
                    what = ", ".join(calls) or "no tool call"
                    step = line.get("step", steps)
                    await ctx.report_progress(steps, None, f"{task_id} step {step}: {what}")
                elif kind == "approval_requested":
                    why = line.get("reason") or "held for approval"
                    message = (
                        f"{task_id} waits for a person to approve {line.get('tool_name')}: {why}"
                    )
                    await ctx.report_progress(steps + 0.5, None, message)
                elif kind == "task_finished":
                    ending = line
                    break
    except TimeoutError:
        text = (
            f"{task_id} is still running after {timeout_s:g} s; "
            "follow it with get_task, or stop it with cancel_task"
        )
        state = {"task_id": task_id, "status": "running", "summary": "", "steps": steps}
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=state
        )
    assert ending is not None
    return await _ended(link, task_id, ending)


async def _ended(link: DaemonLink, task_id: str, ending: dict[str, Any]) -> CallToolResult:
    status = str(ending.get("status"))
    summary = str(ending.get("summary") or "")
    view = await link.task(task_id)
    steps = view.get("steps") or []
    state = {"task_id": task_id, "status": status, "summary": summary, "steps": len(steps)}
    text = f"{task_id} {status}: {summary}" if summary else f"{task_id} {status}"
    if status == "needs_user":
        text += " (reply with the answer tool)"
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    shot = next((s.get("screenshot") for s in reversed(steps) if s.get("screenshot")), None)
    if shot:
        found = await link.image(f"/api/screenshots/{shot}")
        if found is not None:
            content.append(Image(data=found, format=_format(found)).to_image_content())
    return CallToolResult(content=content, structured_content=state)


def _task_state(todo: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    run = view.get("run") or {}
    return {
        **_brief(todo),
        "steps": len(view.get("steps") or []),
        "verification": view.get("verification"),
        "cost_usd": run.get("cost_usd"),
        "ending": run.get("ending"),
    }


def _brief(todo: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "title", "status", "summary", "created", "started", "completed")
    return {key: todo.get(key) for key in keys}


def _format(data: bytes) -> str:
    return "png" if data.startswith(b"\x89PNG") else "jpeg"
