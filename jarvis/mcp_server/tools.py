"""The tools ``jarvis mcp serve`` offers an MCP client, each a few calls of the control API.

``run_task`` posts the text as a message of the ``mcp`` channel, finds the task the router
made of it, follows the task's journal lines on ``GET /api/events`` (from the seq it read
before posting, so nothing is missed) with one progress notification per finished step,
and returns the ending: a text line, the final screenshot as an image, and the task in the
API's shape (:mod:`~jarvis.mcp_server.shapes`) as structured content. ``answer`` sends the
answer to a task's ``call_user`` question and follows it the same way. Only tasks of the mcp
channel are seen or touched here; approvals, takeover and settings are not offered at all.

The descriptions a client shows are the ``*_HELP`` texts below (plain sentences: a client
shows them as they are); every parameter is described, every tool has an output schema and
annotations. Every failure is a tool error with one line
(:class:`~mcp.server.mcpserver.exceptions.ToolError`), bad arguments included
(:class:`JarvisMcp`).
"""

from __future__ import annotations

import asyncio
import io
import time
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from PIL import Image as PilImage
from pydantic import Field, ValidationError

from jarvis import __version__
from jarvis.gateway.todo_format import TodoStatus
from jarvis.mcp_server.link import CHANNEL, DaemonError, DaemonLink
from jarvis.mcp_server.shapes import (
    FollowedTask,
    McpTask,
    Screenshot,
    TaskDetail,
    TaskList,
    one_line,
    task_of,
    todo_status,
)

ROUTE_TIMEOUT_S = 60.0
ROUTE_POLL_S = 0.1
DEFAULT_TIMEOUT_S = 600.0
Status = TodoStatus
INSTRUCTIONS = (
    "Jarvis is a desktop computer-use agent on the user's real, shared desktop: it sees "
    "the screen and moves the real mouse and keyboard, in the same session the user works "
    "in. Give it a desktop task in plain words with run_task; it reports each step as "
    "progress and returns the task and the final screenshot. A task that asks a question "
    "ends with status needs_user: reply with answer. Approvals of held calls are given by "
    "a person in the Jarvis TUI or web panel, never through MCP."
)
REAL_DESKTOP = (
    "Jarvis works on the user's real, shared desktop: it moves the real mouse and keyboard "
    "and sees what is on the screen, so the task can open, change, send or close things in "
    "the apps it uses, while the user may be working there too."
)
WAITING = (
    "timeout_s stops only the waiting, not the task: after it the task goes on; follow it "
    "with get_task or stop it with cancel_task."
)
RUN_TASK_HELP = (
    "Give Jarvis a desktop task in plain words and wait for it to end. "
    f"{REAL_DESKTOP} Each finished step is sent as a progress notification. Returns the "
    "task (id, status, title, summary, steps) and the final screenshot; status needs_user "
    f"means the task asks a question (in summary): reply with answer. {WAITING}"
)
ANSWER_HELP = (
    "Answer the question of a task whose status is needs_user; the task goes on with the "
    f"answer. {REAL_DESKTOP} This waits for the task's next ending like run_task and "
    f"returns the same. {WAITING}"
)
GET_TASK_HELP = (
    "The state of one task given through MCP: status, title, summary, steps, cost and how "
    "its latest run ended. Reads only; the task is not touched."
)
LIST_TASKS_HELP = (
    "The tasks given through MCP, oldest first, each with id, title, status, summary and "
    "times; with status, only the tasks in that status."
)
CANCEL_TASK_HELP = (
    "Cancel a task given through MCP: a pending one never runs, a running one stops within "
    "a moment (what it already did on the desktop stays done). Returns the task."
)
SCREENSHOT_HELP = (
    "A picture of the desktop Jarvis works on (the user's real screen) as it is now; when "
    "it cannot be captured now, the latest step's screenshot. Reads only."
)
TASK_ID = Field(
    min_length=1,
    max_length=128,
    description="the id of a task given through MCP (e.g. T012), as run_task returned it",
)
TIMEOUT = Field(
    gt=0,
    le=86400,
    description="how many seconds to wait for the task to end (default 600); it stops only "
    "the waiting, never the task",
)
FOLLOWS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)
READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
CANCELS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


class JarvisMcp(MCPServer[Any]):
    """The SDK's server, with bad arguments reported in one line (no pydantic report)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(one_line(name, cause)) from cause
            raise


def build_server(link: DaemonLink) -> MCPServer[Any]:
    """The MCP server whose tools reach the daemon through ``link``."""
    server = JarvisMcp(
        "jarvis", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    _add_followed_tools(server, link)
    _add_one_call_tools(server, link)
    server.tool(title="Screenshot", description=SCREENSHOT_HELP, annotations=READS)(
        _screenshot_tool(link)
    )
    return server


def _add_followed_tools(server: MCPServer[Any], link: DaemonLink) -> None:
    """``run_task`` and ``answer``: each hands the daemon words, then follows the task to
    its next ending."""

    @server.tool(title="Run a desktop task", description=RUN_TASK_HELP, annotations=FOLLOWS)
    async def run_task(
        text: Annotated[
            str, Field(min_length=1, description="the task, in plain words, as for a person")
        ],
        ctx: Context,
        timeout_s: Annotated[float, TIMEOUT] = DEFAULT_TIMEOUT_S,
    ) -> Annotated[CallToolResult, FollowedTask]:
        async with _errors():
            cursor = int((await link.health()).get("last_seq") or 0)
            message_id = await link.submit(text)
            task_id = await _task_of(link, message_id)
            return await _follow(link, ctx, task_id, cursor, timeout_s)

    @server.tool(title="Answer a task's question", description=ANSWER_HELP, annotations=FOLLOWS)
    async def answer(
        task_id: Annotated[str, TASK_ID],
        text: Annotated[str, Field(min_length=1, description="the answer to its question")],
        ctx: Context,
        timeout_s: Annotated[float, TIMEOUT] = DEFAULT_TIMEOUT_S,
    ) -> Annotated[CallToolResult, FollowedTask]:
        async with _errors():
            await _own(link, task_id)
            cursor = int((await link.health()).get("last_seq") or 0)
            await link.answer(task_id, text)
            return await _follow(link, ctx, task_id, cursor, timeout_s)


def _add_one_call_tools(server: MCPServer[Any], link: DaemonLink) -> None:
    """``get_task``, ``list_tasks`` and ``cancel_task``: a call or two of the control API
    each."""

    @server.tool(title="Get a task", description=GET_TASK_HELP, annotations=READS)
    async def get_task(task_id: Annotated[str, TASK_ID]) -> TaskDetail:
        async with _errors():
            todo = await _own(link, task_id)
            view = await link.task(task_id)
            run = view.get("run") or {}
            return TaskDetail(
                **task_of(todo),
                steps=len(view.get("steps") or []),
                cost_usd=run.get("cost_usd"),
                ending=run.get("ending"),
                verification=view.get("verification"),
            )

    @server.tool(title="List tasks", description=LIST_TASKS_HELP, annotations=READS)
    async def list_tasks(
        status: Annotated[
            Status | None, Field(description="only the tasks in this status (default: all)")
        ] = None,
    ) -> TaskList:
        async with _errors():
            todos = [t for t in await link.todos() if t.get("source") == CHANNEL]
            if status is not None:
                todos = [t for t in todos if t.get("status") == status]
            return TaskList(tasks=[McpTask(**task_of(t)) for t in todos])

    @server.tool(title="Cancel a task", description=CANCEL_TASK_HELP, annotations=CANCELS)
    async def cancel_task(task_id: Annotated[str, TASK_ID]) -> Annotated[CallToolResult, McpTask]:
        async with _errors():
            todo = await _own(link, task_id)
            done = await link.cancel(task_id)
            status = str(done.get("status") or "cancelled")
            task = McpTask(**task_of(todo, status))
            text = TextContent(type="text", text=f"{task.id} {status}")
            return CallToolResult(content=[text], structured_content=task.model_dump())


def _screenshot_tool(link: DaemonLink) -> Any:
    async def screenshot() -> Annotated[CallToolResult, Screenshot]:
        async with _errors():
            source = "live"
            found = await link.image("/api/screen/live")
            if found is None:
                source = "latest_step"
                found = await link.image("/api/screen/latest")
            if found is None:
                raise ToolError("no screen to show: the daemon cannot capture its display now")
            image = Image(data=found, format=_format(found))
            width, height = PilImage.open(io.BytesIO(found)).size
            shown = Screenshot(width=width, height=height, format=_format(found), source=source)
            return CallToolResult(
                content=[image.to_image_content()], structured_content=shown.model_dump()
            )

    return screenshot


class _errors:
    """Turn a DaemonError into a tool error with its one line."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, DaemonError):
            raise ToolError(" ".join(str(exc).split())) from None


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
        return await _still_going(link, task_id, steps, timeout_s)
    assert ending is not None
    return await _ended(link, task_id, ending)


async def _still_going(
    link: DaemonLink, task_id: str, steps: int, timeout_s: float
) -> CallToolResult:
    """The answer when ``timeout_s`` ran out: the task as it is, which goes on."""
    todo = await _own(link, task_id)
    task = FollowedTask(**task_of(todo), steps=steps, waiting_stopped=True)
    text = (
        f"{task_id} is still {task.status} after {timeout_s:g} s (only the waiting stopped); "
        "follow it with get_task, or stop it with cancel_task"
    )
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=task.model_dump()
    )


async def _ended(link: DaemonLink, task_id: str, ending: dict[str, Any]) -> CallToolResult:
    status = todo_status(str(ending.get("status")))
    summary = str(ending.get("summary") or "")
    view = await link.task(task_id)
    steps = view.get("steps") or []
    todo = await _own(link, task_id)
    task = FollowedTask(**{**task_of(todo, status), "summary": summary}, steps=len(steps))
    text = f"{task_id} {status}: {summary}" if summary else f"{task_id} {status}"
    if status == "needs_user":
        text += " (reply with the answer tool)"
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    shot = next((s.get("screenshot") for s in reversed(steps) if s.get("screenshot")), None)
    if shot:
        found = await link.image(f"/api/screenshots/{shot}")
        if found is not None:
            content.append(Image(data=found, format=_format(found)).to_image_content())
    return CallToolResult(content=content, structured_content=task.model_dump())


def _format(data: bytes) -> str:
    return "png" if data.startswith(b"\x89PNG") else "jpeg"
