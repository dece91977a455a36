"""The conversation's widgets: one :class:`TaskView` per task (in the
:class:`~jarvis.tui.conversation.Conversation`), holding a widget per item of its run.

Widgets render from :mod:`jarvis.tui.state` objects and are told to ``refresh_from`` them
when a line changed their item. Streamed thought text is not drawn per delta:
:class:`ThoughtView` keeps what arrived and :meth:`ThoughtView.flush` (called by the
app's timer, a few times a second) appends it to the Markdown in one go.
"""

from __future__ import annotations

import json
import time
from typing import Any

from rich.markdown import Markdown as RichMarkdown
from rich.markup import escape
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Collapsible, Input, Static

from jarvis.task_words import shown
from jarvis.tui.approvals import ApprovalCard
from jarvis.tui.task_runs import (
    CANCELLED_CALL,
    Approval,
    Ending,
    Item,
    Note,
    TaskRun,
    Thought,
    ToolCall,
    Verification,
)

MARKS = {"running": "◌", "ok": "✓", "error": "✗", "cancelled": "⊘"}
ENDING_MARKS = {"completed": "✓", "failed": "✗", "needs_user": "?", "cancelled": "⊘"}
MAX_RESULT = 2000


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def card_title(call: ToolCall) -> str:
    """``✓ click(x=400, y=300)  12 ms``: the call as the daemon renders it (the web panel
    shows the same line); while the model still writes it, only the tool's name."""
    latency = f"  {call.latency_ms:.0f} ms" if call.latency_ms is not None else ""
    return f"{MARKS[call.status]} {call.shown_call or call.tool_name + '(…)'}{latency}"


def card_body(call: ToolCall) -> str:
    lines = [f"arguments: {call.shown_arguments or '(the model is writing them)'}"]
    if call.status == "error":
        lines.append(f"error {call.error_code}: {call.error_message}")
    elif call.status == "cancelled":
        lines.append(CANCELLED_CALL)
    elif call.status == "ok":
        result = json.dumps(call.data, ensure_ascii=False)
        lines.append(f"result: {_short(result, MAX_RESULT)}")
    else:
        lines.append("running…")
    if call.latency_ms is not None:
        lines.append(f"latency: {call.latency_ms:.1f} ms")
    return "\n".join(lines)


class ThoughtView(Static):
    """The model's text for one step, streamed as Markdown with coalesced writes.

    One widget per step (a Rich Markdown renderable), not one per paragraph: the
    conversation's layout stays cheap however long the thought grows.
    """

    HELP = "The model's thinking for this step, as it streams. Select text with the mouse."

    def __init__(self, thought: Thought) -> None:
        super().__init__(RichMarkdown(thought.text), classes="thought")
        self.thought = thought
        self.source = thought.text
        self.draws = 0

    @property
    def dirty(self) -> bool:
        return len(self.thought.text) != len(self.source)

    def flush(self) -> None:
        """Draw the text that arrived since the last flush (one update for all of it)."""
        if not self.dirty:
            return
        self.source = self.thought.text
        self.draws += 1
        self.update(RichMarkdown(self.source))


class ToolCard(Collapsible):
    """A tool call: status mark, arguments, result or error, latency. Errors start open."""

    HELP = (
        "A tool call. Enter or click the title opens or closes it. Select text with the "
        "mouse and press ctrl+c to copy it, or use 'Copy the card' in the palette (ctrl+p)."
    )

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.body = Static(card_body(call), classes="card-body", markup=False)
        super().__init__(self.body, title=card_title(call), collapsed=call.status != "error")
        self.set_class(call.status == "error", "error")
        self.set_class(call.status == "running", "running")

    def refresh_from(self) -> None:
        self.title = card_title(self.call)
        self.body.update(card_body(self.call))
        if self.call.status == "error" and not self.has_class("error"):
            self.collapsed = False
        self.set_class(self.call.status == "error", "error")
        self.set_class(self.call.status == "running", "running")


class NeedsUser(Vertical):
    """The ``call_user`` question of a task, with a field for the answer."""

    HELP = "Jarvis asks you something. Type the answer and press Enter; it goes to this task."

    class Answered(Message):
        def __init__(self, task_id: str, text: str) -> None:
            super().__init__()
            self.task_id, self.text = task_id, text

    def __init__(self, run: TaskRun) -> None:
        super().__init__(classes="needs-user -open")
        self.run = run

    def compose(self) -> ComposeResult:
        yield Static(f"? Jarvis needs you: {escape(self.run.question or '')}", classes="question")
        yield Input(placeholder="your answer, then Enter", classes="answer")

    @on(Input.Submitted, ".answer")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text:
            self.post_message(self.Answered(self.run.task_id, text))

    def close(self) -> None:
        """The task went on (answered elsewhere, or resumed): no more answers here."""
        if not self.has_class("done"):
            self.query(".answer").remove()
            self.add_class("done")
            self.remove_class("-open")

    def mark_answered(self, text: str) -> None:
        self.query_one(".answer", Input).remove()
        self.mount(Static(f"↳ answered: {escape(text)}", classes="answered"))
        self.add_class("done")
        self.remove_class("-open")


def item_widget(item: Item) -> Widget:
    if isinstance(item, Thought):
        return ThoughtView(item)
    if isinstance(item, ToolCall):
        return ToolCard(item)
    if isinstance(item, Verification):
        mark = "✓ verified" if item.done else "✗ not verified"
        return Static(f"{mark}: {escape(item.reason)}", classes=f"verification ok-{item.done}")
    if isinstance(item, Note):
        return Static(f"! {escape(item.text)}", classes="note")
    if isinstance(item, Approval):
        return ApprovalCard(item)
    assert isinstance(item, Ending)
    return ending_widget(item)


def ending_widget(ending: Ending) -> Static:
    mark = ENDING_MARKS.get(ending.status, "•")
    text = f"{mark} {shown(ending.status)} after {ending.steps} step(s)"
    if ending.summary and ending.status != "needs_user":
        text += f": {escape(ending.summary)}"
    return Static(text, classes=f"ending {ending.status}")


class TaskView(Vertical):
    """One task: a header, then its thought, tool cards, verification and ending.

    :meth:`sync` mounts widgets for items it has not shown yet and redraws the header and
    the ending; it is safe to call at any time (before mounting it does nothing, and
    mounting calls it).
    """

    def __init__(self, run: TaskRun) -> None:
        super().__init__(classes="task", id=f"task-{run.task_id}")
        self.run = run
        self.header = Static(self._header_text(), classes="task-header")
        self.views: list[Widget] = []
        self._ending_shown: tuple[str, bool] | None = None
        self._ready = False

    def _header_text(self) -> str:
        started = time.strftime("%H:%M:%S", time.localtime(self.run.started))
        status = escape(f"[{shown(self.run.status)}]")
        return f"▌ {self.run.task_id}  {escape(self.run.task)}   {status} {started}"

    def compose(self) -> ComposeResult:
        yield self.header

    def on_mount(self) -> None:
        self._ready = True
        self.sync()

    def sync(self) -> None:
        if not self._ready:
            return
        self.header.update(self._header_text())
        self.set_class(self.run.running, "live")
        for view in self.views:  # a request its task outlived closes with it
            if isinstance(view, ApprovalCard) and view.has_class("-open"):
                view.refresh_from()
        new = [item_widget(item) for item in self.run.items[len(self.views) :]]
        if new:
            self.views.extend(new)
            before = self.query_children(".ending")
            if before:
                self.mount_all(new, before=before.first())
            else:
                self.mount_all(new)
        waiting = self.run.question is not None and not self.run.answered
        state = (self.run.status, waiting) if self.run.ending else None
        if state == self._ending_shown:
            return
        self._ending_shown = state
        if self.run.ending is None:  # it runs again (after an answer)
            self.query_children(".ending").remove()
            for card in self.query_children(NeedsUser):
                card.close()
            return
        self.query_children(".ending").remove()
        self.mount(ending_widget(self.run.ending))
        if waiting and not self.query_children("NeedsUser.-open"):
            self.mount(NeedsUser(self.run))

    def update_item(self, index: int) -> None:
        view = self.views[index] if index < len(self.views) else None
        if isinstance(view, ToolCard | ApprovalCard):
            view.refresh_from()

    def thought_views(self) -> list[ThoughtView]:
        return [v for v in self.views if isinstance(v, ThoughtView)]

    def needs_user(self) -> NeedsUser | None:
        found = self.query_children(NeedsUser)
        return found.first() if found else None
