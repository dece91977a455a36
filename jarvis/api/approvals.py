"""Safety routes of the control API: pending approvals, their answers, and a stop button.

- ``GET /api/approvals``: the calls waiting for a person (each an ``approval_requested``
  event: id, call, reason, screenshot path, deadline).
- ``POST /api/approvals/{id} {decision, note}``: ``allow_once``, ``allow_task`` or ``deny``
  (the note goes to the model with a denial). 404 for an unknown or answered id.
- ``POST /api/stop {by}``: cancel the running task now (``jarvis stop``, the web panel's
  button, the TUI's Esc), recorded with who stopped it.

The app factory mounts them with :func:`mount_safety`, inside the same auth guard as every
other route; they call the daemon's service (:class:`Safety`). Answers through here are the
only way to approve; nothing here accepts one that says it came by email.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from jarvis.api.models import ApprovalAnswered, Approvals, Stopping
from jarvis.safety.approvals import MAX_NOTE, ApprovalError

router = APIRouter(prefix="/api", tags=["safety"])


class Safety(Protocol):
    """What these routes need of the daemon (:class:`jarvis.gateway.service.DaemonService`)."""

    def attend(self) -> None:
        """Someone can answer approvals from now on."""

    def pending_approvals(self) -> list[dict[str, Any]]: ...

    def approve(self, approval_id: str, decision: str, note: str, by: str) -> None:
        """Raises ApprovalError for an unknown or answered id."""

    async def stop(self, by: str) -> bool:
        """Cancel the running task, recorded as stopped by ``by``; False when none runs."""


class ApprovalAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["allow_once", "allow_task", "deny"]
    note: str = Field("", max_length=MAX_NOTE)
    by: Literal["tui", "web", "api"] = "api"
    """Where the person answered (recorded; never email, which may not approve)."""


class StopIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    by: Literal["cli", "web", "tui", "api"] = "api"


def _safety(request: Request) -> Safety:
    safety: Safety = request.app.state.safety
    return safety


S = Annotated[Safety, Depends(_safety)]


@router.get("/approvals")
async def pending(safety: S) -> Approvals:
    """The calls waiting for an answer, oldest first."""
    return Approvals.model_validate({"pending": safety.pending_approvals()})


@router.post("/approvals/{approval_id}")
async def answer(approval_id: str, body: ApprovalAnswer, safety: S) -> ApprovalAnswered:
    """Allow once, allow for the rest of the task, or deny with a note."""
    try:
        safety.approve(approval_id, body.decision, body.note, body.by)
    except ApprovalError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from exc
    return ApprovalAnswered(approval_id=approval_id, decision=body.decision)


@router.post("/stop", status_code=202)
async def stop(body: StopIn, safety: S) -> Stopping:
    """Cancel the running task (the same path as the kill switch and Ctrl+C)."""
    return Stopping(stopping=await safety.stop(body.by), by=body.by)


def mount_safety(app: FastAPI, safety: Safety) -> None:
    """Add the safety routes to ``app``; from now on held calls wait for an answer here."""
    app.state.safety = safety
    app.include_router(router)
    safety.attend()
