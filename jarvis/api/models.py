"""The response bodies of the ``/api`` routes, so ``/openapi.json`` names their shapes
(the wire format itself is in :mod:`jarvis.api`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from jarvis.events import ApprovalRequested
from jarvis.gateway.todo_format import TodoStatus
from jarvis.runs.run_info import RunSummary


class TodoView(BaseModel):
    """A ``todos.md`` entry, with known secrets blanked."""

    id: str
    title: str
    status: TodoStatus
    priority: int = 0
    created: datetime
    started: datetime | None = None
    completed: datetime | None = None
    source: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    reply_to: str | None = None
    parent: str | None = None
    summary: str | None = None
    notes: list[str] = Field(default_factory=list)
    description: str = ""


class Todos(BaseModel):
    todos: list[TodoView]


class TaskWords(BaseModel):
    """The task status words of every face (:mod:`jarvis.task_words`)."""

    statuses: list[str]
    """The words ``status`` takes on a task: pending, in_progress, completed, failed,
    needs_user, cancelled."""
    shown: dict[str, str]
    """Each word (and a run's ``interrupted``) as a person reads it: "in progress"..."""


class Runs(BaseModel):
    runs: list[RunSummary]
    """Newest first; each run's whole record is ``GET /api/tasks/{id}``."""
    next: str | None
    """The cursor of the page of older runs (``?cursor=``); null after the oldest."""


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    pid: int
    ready: bool
    """Recovered and serving."""
    running: str | None
    """The task the agent works on now."""
    last_seq: int
    """The newest journal seq: ``GET /api/events?after=`` it is "from now on"."""


class PendingApproval(ApprovalRequested):
    """An ``approval_requested`` event still waiting for its answer."""

    model_config = ConfigDict(extra="allow")


class Approvals(BaseModel):
    pending: list[PendingApproval]
    """Oldest first."""


class ApprovalAnswered(BaseModel):
    approval_id: str
    decision: Literal["allow_once", "allow_task", "deny"]


class Stopping(BaseModel):
    stopping: bool
    """False when no task was running."""
    by: Literal["cli", "web", "tui", "api"]


class WorkerView(BaseModel):
    """One worker of the fleet, as its last heartbeat says."""

    name: str
    host: str
    display: str
    size: str
    version: str
    state: str
    """idle, running or stopping."""
    task: str | None = None
    """The task it runs now."""
    last_heartbeat: datetime
    live: bool = False
    """Its screen can be watched here (``WS /api/vnc/worker/{name}``): it runs on this
    machine. A worker on another host has no live view from here."""


class Workers(BaseModel):
    fleet: bool
    """Whether this daemon coordinates a fleet (else the list is empty)."""
    workers: list[WorkerView]
    """By name; a worker that stopped sending heartbeats is gone."""
