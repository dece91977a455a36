"""What the API answers, built from the files: todos, a task's steps from its journal, and
screenshots that may be served (path-checked)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from jarvis.api.models import TodoView
from jarvis.gateway.todos import Todo
from jarvis.redaction import redact_value
from jarvis.runs.reader import RunInfo

SCREENSHOTS = Path("memory") / "screenshots"
IMAGE_SUFFIXES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
APPROVALS = Path("approvals")
APPROVAL_ID = re.compile(r"a-[0-9a-f]{12}")
"""The ids :class:`jarvis.safety.approvals.ApprovalGate` makes; nothing else is looked up."""
APPROVAL_SUFFIXES = (".png", ".jpg")


class ToolCallView(BaseModel):
    call_id: str
    tool_name: str
    state: str = "streaming"
    """streaming (the model is writing it), running, ok, error, cancelled (cut short by a
    cancel, a stop or the kill switch), or not_run."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    error_code: int | None = None
    error_message: str | None = None
    latency_ms: float | None = None
    data: Any = None


class StepView(BaseModel):
    step: int
    run: int = 1
    """Which run of the task (2, 3... after an answer or a merged update)."""
    thought: str = ""
    tool_calls: list[ToolCallView] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    screenshot: str | None = None
    """Relative to ``memory/screenshots/`` (for ``GET /api/screenshots/{path}``)."""
    finished: bool = False


class TaskView(BaseModel):
    """``GET /api/tasks/{id}``: the todo (if the task came through the gateway), its latest
    run, its steps, and (unless asked not to) the run's journal lines."""

    task_id: str
    todo: TodoView | None = None
    run: RunInfo | None = None
    steps: list[StepView] = Field(default_factory=list)
    verification: dict[str, Any] | None = None
    last_seq: int = 0
    events: list[dict[str, Any]] | None = None


def todo_view(todo: Todo) -> dict[str, Any]:
    clean: dict[str, Any] = redact_value(todo.model_dump(mode="json", exclude={"extra"}))
    return clean


def task_view(view: TaskView) -> TaskView:
    """``view`` with every string passed through :func:`jarvis.redaction.redact_value`
    (journal lines are redacted when written; this covers a secret known only since)."""
    return TaskView.model_validate(redact_value(view.model_dump(mode="json")))


def screenshot_path(path: str | None) -> str | None:
    """A step's screenshot (relative to the data dir) as the API names it."""
    if not path:
        return None
    parts = Path(path).parts
    if parts[:2] != SCREENSHOTS.parts:
        return None
    return "/".join(parts[2:])


def steps_of(records: list[dict[str, Any]]) -> tuple[list[StepView], dict[str, Any] | None]:
    """The steps of every run of a task (thought, tool calls with their results), in run
    and step order, and its last verdict."""
    steps: dict[tuple[int, int], StepView] = {}
    run = 0
    current: StepView | None = None
    calls: dict[str, ToolCallView] = {}
    verdict: dict[str, Any] | None = None
    for r in records:
        kind = r["kind"]
        if kind == "task_started":
            run, current = int(r.get("run") or run + 1), None  # (older lines have no run)
        elif kind == "step_started":
            key = (max(run, 1), int(r["step"]))
            current = steps.setdefault(key, StepView(step=key[1], run=run))
            calls = {}
        elif current is None:
            if kind == "verification_finished":
                verdict = {"done": r.get("done"), "reason": r.get("reason", "")}
            continue
        elif kind == "model_text_delta":
            current.thought += str(r.get("text", ""))
        elif kind in ("tool_call_streaming", "tool_call_started", "tool_call_finished"):
            call = calls.get(r["call_id"])
            if call is None:
                call = calls[r["call_id"]] = ToolCallView(
                    call_id=r["call_id"], tool_name=r["tool_name"]
                )
                current.tool_calls.append(call)
            _apply(call, kind, r)
        elif kind == "step_finished":
            current.finished = True
            current.timings_ms = r.get("timings_ms") or {}
            current.input_tokens = int(r.get("input_tokens") or 0)
            current.output_tokens = int(r.get("output_tokens") or 0)
            current.cost_usd = float(r.get("cost_usd") or 0.0)
            current.screenshot = screenshot_path(r.get("screenshot"))
            for call in current.tool_calls:
                if call.state == "streaming":
                    call.state = "not_run"
        elif kind == "verification_finished":
            verdict = {"done": r.get("done"), "reason": r.get("reason", "")}
    return [steps[k] for k in sorted(steps)], verdict


def _apply(call: ToolCallView, kind: str, r: dict[str, Any]) -> None:
    if kind == "tool_call_started":
        call.state = "running"
        call.arguments = r.get("arguments") or {}
    elif kind == "tool_call_finished":
        call.state = "ok" if r.get("ok") else "cancelled" if r.get("cancelled") else "error"
        call.error_code = r.get("error_code")
        call.error_message = r.get("error_message")
        call.latency_ms = r.get("latency_ms")
        call.data = r.get("data")


def safe_screenshot(data_dir: Path, path: str) -> Path | None:
    """The file ``path`` names under ``memory/screenshots/``, or None: no absolute paths,
    no ``..``, no hidden parts, an image suffix, and it must resolve (links followed)
    inside that folder."""
    if not path or path.startswith(("/", "\\")) or "\\" in path or "\x00" in path:
        return None
    parts = path.split("/")
    if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        return None
    if Path(path).suffix.lower() not in IMAGE_SUFFIXES:
        return None
    root = (data_dir / SCREENSHOTS).resolve()
    try:
        target = (root / path).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(root) or not target.is_file():
        return None
    return target


def approval_screenshot(data_dir: Path, approval_id: str) -> Path | None:
    """The screen saved with approval request ``approval_id`` (``approvals/ID.png`` or
    ``.jpg`` in the data dir), or None: the id must have the gate's form, and the file must
    be a regular file right in that folder (not a link to elsewhere)."""
    if APPROVAL_ID.fullmatch(approval_id) is None:
        return None
    root = (data_dir / APPROVALS).resolve()
    for suffix in APPROVAL_SUFFIXES:
        name = root / f"{approval_id}{suffix}"
        try:
            target = name.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if target == name and target.is_file():
            return target
    return None


def latest_screenshot(data_dir: Path, records: list[dict[str, Any]]) -> Path | None:
    """The screenshot of the last finished step in ``records``, else the newest one stored;
    either passes :func:`safe_screenshot` (a link out of the folder is never served)."""
    for r in reversed(records):
        if r["kind"] == "step_finished":
            name = screenshot_path(r.get("screenshot"))
            found = safe_screenshot(data_dir, name) if name else None
            if found is not None:
                return found
    root = data_dir / SCREENSHOTS
    if not root.is_dir():
        return None
    days = sorted((p.name for p in root.iterdir() if p.is_dir()), reverse=True)
    for day in days:
        names = sorted((p.name for p in (root / day).iterdir()), reverse=True)
        for name in names:
            found = safe_screenshot(data_dir, f"{day}/{name}")  # the checks of the route
            if found is not None:
                return found
    return None
