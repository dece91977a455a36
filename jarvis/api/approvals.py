"""Safety routes of the control API: pending approvals, their answers, and a stop button.

- ``GET /api/approvals``: the calls waiting for a person (each an ``approval_requested``
  event: id, call, reason, screenshot path, deadline).
- ``POST /api/approvals/{id} {decision, note}``: ``allow_once``, ``allow_task`` or ``deny``
  (the note goes to the model with a denial). 404 for an unknown or answered id.
- ``POST /api/stop {by}``: cancel the running task now (``jarvis stop``, the web panel's
  button, the TUI's Esc), recorded with who stopped it.

The app factory mounts them with :func:`mount_safety`, inside the same auth guard as every
other route. Answers through here are the only way to approve; nothing here accepts one
that says it came by email.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from jarvis.safety.approvals import MAX_NOTE, ApprovalError, ApprovalStore

if TYPE_CHECKING:
    from jarvis.gateway.gateway import Gateway

StopFn = Callable[[str], Awaitable[bool]]
"""Cancel the running task, recorded as stopped by the argument; False when none runs."""

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api", tags=["safety"])


class ApprovalAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["allow_once", "allow_task", "deny"]
    note: str = Field("", max_length=MAX_NOTE)
    by: Literal["tui", "web", "api"] = "api"
    """Where the person answered (recorded; never email, which may not approve)."""


class StopIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    by: Literal["cli", "web", "tui", "api"] = "api"


def _store(request: Request) -> ApprovalStore:
    store: ApprovalStore = request.app.state.approvals
    return store


def _stop(request: Request) -> StopFn:
    stop: StopFn = request.app.state.stop_task
    return stop


Store = Annotated[ApprovalStore, Depends(_store)]


@router.get("/approvals")
async def pending(store: Store) -> dict[str, list[dict[str, Any]]]:
    """The calls waiting for an answer, oldest first."""
    return {"pending": store.pending()}


@router.post("/approvals/{approval_id}")
async def answer(approval_id: str, body: ApprovalAnswer, store: Store) -> dict[str, str]:
    """Allow once, allow for the rest of the task, or deny with a note."""
    try:
        store.resolve(approval_id, body.decision, body.note, via=body.by)
    except ApprovalError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from exc
    return {"approval_id": approval_id, "decision": body.decision}


@router.post("/stop", status_code=202)
async def stop(body: StopIn, request: Request) -> dict[str, Any]:
    """Cancel the running task (the same path as the kill switch and Ctrl+C)."""
    return {"stopping": await _stop(request)(body.by), "by": body.by}


async def stop_running(gateway: Gateway, by: str) -> bool:
    """Cancel the daemon's running task, recorded as stopped by ``by``; then mark it
    cancelled the way a person's cancel does. False when no task runs."""
    worker = gateway.worker
    current = worker.current if worker is not None else None
    if worker is None or current is None:
        return False
    worker.agent.cancel(by)  # the first cancel names the brake
    from jarvis.gateway.todos import TodoState

    try:
        await gateway.cancel_task(current)
    except (KeyError, TodoState) as exc:  # it ended meanwhile
        log.info("stop: task %s: %s", current, exc)
    return True


def mount_safety(app: FastAPI, store: ApprovalStore, stop_task: StopFn) -> None:
    """Add the safety routes to ``app``; from now on held calls wait for an answer here."""
    app.state.approvals = store
    app.state.stop_task = stop_task
    app.include_router(router)
    store.attended = True
