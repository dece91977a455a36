"""A task's todo and journal lines as A2A: its state, its stream events, its artifacts.

Every stream event is made from one journal line and carries that line's ``seq`` in its
metadata, so a client that reconnects (``SubscribeToTask``, optionally with a
``Last-Event-ID`` header) gets each update again in the same order and can tell which it
has. Mapping: ``task_started`` and ``step_started``/``step_finished`` are WORKING with a
status message, ``approval_requested`` is AUTH_REQUIRED until its ``approval_resolved``,
``reply_ready`` ends the task (COMPLETED, FAILED, CANCELED) or asks (INPUT_REQUIRED).
Jarvis's own words go in ``metadata``: a task's ``jarvis`` is the control API's task shape
(``id``, ``title``, ``status``, ``summary``), an ending event's ``jarvis_status`` its word.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from jarvis.gateway.todos import Todo
from jarvis.runs.report import render
from jarvis.task_words import status_word

S = TaskState
TERMINAL = frozenset(
    {S.TASK_STATE_COMPLETED, S.TASK_STATE_FAILED, S.TASK_STATE_CANCELED, S.TASK_STATE_REJECTED}
)
INTERRUPTED = frozenset({S.TASK_STATE_INPUT_REQUIRED, S.TASK_STATE_AUTH_REQUIRED})
ENDINGS = {
    "completed": S.TASK_STATE_COMPLETED,
    "failed": S.TASK_STATE_FAILED,
    "cancelled": S.TASK_STATE_CANCELED,
    "needs_user": S.TASK_STATE_INPUT_REQUIRED,
}
SCREENSHOT_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png"}
Update = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


def text_message(text: str, task_id: str, context_id: str, key: str, role: Any = None) -> Message:
    return Message(
        message_id=f"{task_id}-{key}",
        task_id=task_id,
        context_id=context_id,
        role=role if role is not None else Role.ROLE_AGENT,
        parts=[Part(text=text)],
    )


def _when(ts: float | None) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, dt.UTC) if ts else dt.datetime.now(dt.UTC)


def status(
    state: Any, text: str, task_id: str, context_id: str, key: str, ts: float | None = None
) -> TaskStatus:
    message = text_message(text, task_id, context_id, key) if text else None
    return TaskStatus(state=state, message=message, timestamp=_when(ts))


class Mapper:
    """Turns the journal lines of one task into stream events, in order."""

    def __init__(self, task_id: str, context_id: str) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self.calls: list[str] = []
        self.held: set[str] = set()

    def update(self, record: dict[str, Any], ending: list[Artifact] | None = None) -> list[Update]:
        """The events for one journal line (none for most kinds)."""
        kind, seq = record.get("kind"), int(record.get("seq", 0))
        text, state = self._text(record, kind), S.TASK_STATE_WORKING
        if kind == "approval_requested":
            self.held.add(record.get("approval_id", ""))
            state = S.TASK_STATE_AUTH_REQUIRED
        elif kind == "approval_resolved":
            self.held.discard(record.get("approval_id", ""))
        elif kind == "reply_ready":
            state = ENDINGS.get(record.get("status", ""), S.TASK_STATE_FAILED)
        if text is None:
            return []
        meta: dict[str, Any] = {"seq": seq, "kind": str(kind)}
        if kind == "reply_ready" and record.get("status"):
            meta["jarvis_status"] = status_word(str(record["status"]))
        out: list[Update] = []
        if kind == "reply_ready" and state == S.TASK_STATE_COMPLETED:
            for artifact in ending or []:
                out.append(self.artifact_event(artifact, seq))
        tstatus = status(state, text, self.task_id, self.context_id, f"s{seq}", record.get("ts"))
        event = TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=tstatus, metadata=meta
        )
        return [*out, event]

    def artifact_event(self, artifact: Artifact, seq: int) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=artifact,
            last_chunk=True,
            metadata={"seq": seq, "kind": "artifact"},
        )

    def _text(self, record: dict[str, Any], kind: Any) -> str | None:
        if kind == "task_started":
            run = record.get("run")
            return f"run {run} started" if run and run > 1 else "started"
        if kind == "step_started":
            self.calls = []
            return f"step {record.get('step')}"
        if kind == "tool_call_started":
            self.calls.append(str(record.get("shown_call") or record.get("tool_name", "")))
            return None
        if kind == "step_finished":
            done = "; ".join(c for c in self.calls if c) or "no tool call"
            return f"step {record.get('step')} done: {done}"
        if kind == "approval_requested":
            call = record.get("shown_call") or record.get("tool_name", "")
            return (
                f"waiting for a person to approve {call} ({record.get('shown_reason') or ''}); "
                "an A2A client cannot approve"
            )
        if kind == "approval_resolved":
            return f"approval: {record.get('decision')} by {record.get('by') or 'the daemon'}"
        if kind == "reply_ready":
            return str(record.get("text") or record.get("status", ""))
        return None


def state_of(todo: Todo | None, records: list[dict[str, Any]]) -> Any:
    """The task's A2A state now."""
    if todo is None:
        return S.TASK_STATE_SUBMITTED
    if todo.status in ("completed", "failed", "cancelled", "needs_user"):
        return ENDINGS[todo.status]
    if todo.status == "pending":
        return S.TASK_STATE_WORKING if records else S.TASK_STATE_SUBMITTED
    held: set[str] = set()
    for r in records:
        if r.get("kind") == "approval_requested":
            held.add(r.get("approval_id", ""))
        elif r.get("kind") == "approval_resolved":
            held.discard(r.get("approval_id", ""))
    return S.TASK_STATE_AUTH_REQUIRED if held else S.TASK_STATE_WORKING


def last_text(todo: Todo | None, records: list[dict[str, Any]]) -> str:
    """The words that go with the state now: the summary, the question, the last step."""
    if todo is not None and todo.status != "in_progress" and todo.summary:
        return todo.summary
    mapper = Mapper("", "")
    text = ""
    for record in records:
        said = mapper._text(record, record.get("kind"))
        text = said if said is not None else text
    return text or ("queued" if todo is None or todo.status == "pending" else "")


def artifacts(
    data_dir: Path, folder: Path | None, todo: Todo | None, records: Iterable[dict[str, Any]]
) -> list[Artifact]:
    """A completed task's summary, final screenshot and report."""
    out = [
        Artifact(
            artifact_id="summary",
            name="summary",
            parts=[Part(text=(todo.summary if todo else "") or "done")],
        )
    ]
    shots = [
        r["screenshot"] for r in records if r.get("kind") == "step_finished" and r.get("screenshot")
    ]
    if shots:
        path = data_dir / shots[-1]
        media = SCREENSHOT_TYPES.get(path.suffix.lower())
        if media and path.is_file():
            part = Part(raw=path.read_bytes(), media_type=media, filename=f"final{path.suffix}")
            out.append(
                Artifact(artifact_id="final-screenshot", name="final screenshot", parts=[part])
            )
    if folder is not None:
        html = render(folder, data_dir).encode("utf-8")
        part = Part(raw=html, media_type="text/html", filename="report.html")
        out.append(Artifact(artifact_id="report", name="report", parts=[part]))
    return out


def jarvis_task(todo: Todo) -> dict[str, Any]:
    """The task in the control API's shape and words (``status`` in_progress, needs_user...,
    :mod:`jarvis.task_words`), for the A2A task's ``metadata``: A2A's ``status.state``
    keeps the protocol's states."""
    return {"id": todo.id, "title": todo.title, "status": todo.status, "summary": todo.summary}


def task_of(
    task_id: str,
    context_id: str,
    todo: Todo | None,
    records: list[dict[str, Any]],
    found: list[Artifact] | None = None,
    request: str = "",
) -> Task:
    """The A2A Task: state now, its words, the request as history, artifacts if given."""
    state = state_of(todo, records)
    seq = records[-1]["seq"] if records else 0
    history = (
        [text_message(request, task_id, context_id, "request", Role.ROLE_USER)] if request else []
    )
    meta: dict[str, Any] = {"last_seq": seq}
    if todo is not None:
        meta["jarvis_task"] = todo.id
        meta["jarvis"] = jarvis_task(todo)
    return Task(
        id=task_id,
        context_id=context_id,
        status=status(state, last_text(todo, records), task_id, context_id, f"now{seq}"),
        artifacts=found or [],
        history=history,
        metadata=meta,
    )
