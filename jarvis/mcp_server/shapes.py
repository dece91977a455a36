"""What the MCP tools return, in the control API's words: one task shape and one set of
status words for every tool.

A task is the API's ``todos.md`` entry (:class:`jarvis.api.models.TodoView`) cut to what an
MCP client needs: ``id``, ``title``, ``status``, ``summary`` and its times. ``status`` is one
of the todo list's words (:data:`STATUSES`), the same on ``run_task``, ``answer``,
``get_task``, ``list_tasks`` and ``cancel_task``; a run's own ending words (``finished`` ...)
are turned into them by :func:`jarvis.task_words.status_word`. Each model is a
tool's output schema, so a client can read the result without parsing text.

An MCP error is one line: :func:`one_line` turns the SDK's multi-line pydantic report of
bad arguments into a sentence naming the field and, for a closed set, the valid words.
"""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jarvis.gateway.todo_format import TodoStatus
from jarvis.task_words import status_word

STATUSES: tuple[str, ...] = get_args(TodoStatus)
"""pending, in_progress, completed, failed, needs_user, cancelled."""
SHOWN_INPUT = 40


class McpTask(BaseModel):
    """One task given through MCP, in the words of the Jarvis control API."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        description="the task's id, e.g. T012; give it to get_task, answer, cancel_task"
    )
    title: str = Field(description="a short title the router gave the task")
    status: TodoStatus = Field(
        description="pending, in_progress, completed, failed, needs_user (it asks a question: "
        "reply with answer) or cancelled"
    )
    summary: str | None = Field(
        None, description="what the task did, or the question it asks when needs_user"
    )
    created: str | None = Field(None, description="when the task was made (ISO 8601)")
    started: str | None = Field(None, description="when its latest run started (ISO 8601)")
    completed: str | None = Field(None, description="when it ended (ISO 8601)")


class FollowedTask(McpTask):
    """The task where the waiting of run_task or answer stopped: at its ending, or when
    timeout_s ran out."""

    steps: int = Field(description="steps taken in the run that was followed")
    waiting_stopped: bool = Field(
        False,
        description="true when timeout_s ran out first: the task goes on; follow it with "
        "get_task or stop it with cancel_task",
    )


class TaskDetail(McpTask):
    """One task with the numbers of its runs."""

    steps: int = Field(description="steps taken over all its runs")
    cost_usd: float | None = Field(None, description="the model's cost so far, in US dollars")
    ending: str | None = Field(None, description="how the latest run ended, in words")
    verification: dict[str, Any] | None = Field(
        None, description="the check of the ending, when the task was verified"
    )


class TaskList(BaseModel):
    """The tasks given through MCP."""

    tasks: list[McpTask] = Field(description="the tasks given through MCP, oldest first")


class Screenshot(BaseModel):
    """What the screenshot image shows."""

    width: int = Field(description="the image's width in pixels")
    height: int = Field(description="the image's height in pixels")
    format: str = Field(description="png or jpeg")
    source: str = Field(
        description="live (the desktop now) or latest_step (the last step's screenshot, when "
        "the display cannot be captured now)"
    )


def task_of(todo: dict[str, Any], status: str | None = None) -> dict[str, Any]:
    """The :class:`McpTask` fields of an API todo (``status`` overrides the todo's own)."""
    keys = ("id", "title", "status", "summary", "created", "started", "completed")
    found = {key: todo.get(key) for key in keys}
    found["id"] = str(found["id"] or "")
    found["title"] = str(found["title"] or "")
    if status is not None:
        found["status"] = status
    return found


def todo_status(run_status: str) -> str:
    """A run's ending word as the todo list's (an older journal's ``finished`` too)."""
    return status_word(run_status)


def one_line(tool: str, exc: ValidationError) -> str:
    """Bad arguments of ``tool`` as one line: each field, what is wrong, what was given."""
    parts = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
        expected = (error.get("ctx") or {}).get("expected")
        if error.get("type") == "literal_error" and expected:
            words = str(expected).replace("'", "").replace(" or ", ", ")
            what = f": must be one of {words}"
        elif error.get("type") == "missing":
            what = " is required"
        else:
            what = ": " + str(error.get("msg", "not valid")).splitlines()[0].rstrip(".").lower()
        given = error.get("input")
        if error.get("type") != "missing" and isinstance(given, str | int | float | bool):
            shown = repr(given) if len(repr(given)) <= SHOWN_INPUT else repr(given)[:SHOWN_INPUT]
            what += f" (got {shown})"
        parts.append(f"{field}{what}")
    return f"Error executing tool {tool}: " + "; ".join(parts)
