"""The approval card: a held call waits for the person at the cockpit.

An ``approval_requested`` line becomes an :class:`~jarvis.tui.state.Approval` item of its
task, shown by :class:`ApprovalCard`: why the call is held, the exact call, the time left
before no answer counts as a denial, the screen at the moment of the request, and three
answers (allow once, allow for the rest of the task, deny with a note). The card posts
:class:`ApprovalCard.Decided`; the app sends it to the daemon. Once the request is
resolved (here, elsewhere, or by its deadline) the card shows how and takes no more input.

Also here: the budget text for the status line (``budget_used``).
"""

from __future__ import annotations

import time
from typing import ClassVar

from PIL import UnidentifiedImageError
from rich.markup import escape
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Button, Input, Static

from jarvis.tui.bindings import APPROVAL_BINDINGS
from jarvis.tui.side import marked_thumbnail, thumbnail_widget
from jarvis.tui.task_runs import Approval, Budget

OUTCOMES = {
    "allow_once": ("✓", "allowed once"),
    "allow_task": ("✓", "allowed for the rest of this task"),
    "deny": ("✗", "denied"),
    "timeout": ("✗", "not answered in time: denied"),
    "cancelled": ("⊘", "the task was cancelled while it waited"),
    "auto": ("✓", "allowed without asking"),
}
ANSWERS = {"allow_once": "allowed once", "allow_task": "allowed for this task", "deny": "denied"}


def call_text(approval: Approval) -> str:
    """The exact call: its tool and every argument, as JSON, as the daemon renders it
    (characters that do not show spelled out, the web panel's text on one line)."""
    text = ""
    for line in approval.shown_arguments.splitlines():  # JSON: newlines only between parts
        part = line.strip()
        tight = not text or text.endswith(("{", "[")) or part.startswith(("}", "]"))
        text += part if tight else f" {part}"
    return f"{approval.tool_name} {text}"


def time_left(expires_at: float, now: float) -> str:
    left = int(expires_at - now)
    if left <= 0:
        return "time is up: no answer counts as a denial"
    return f"{left // 60}:{left % 60:02d} left, then no answer counts as a denial"


def outcome_text(approval: Approval) -> str:
    if approval.decision is None:
        return "⊘ no longer pending: the daemon does not hold this request any more"
    mark, words = OUTCOMES.get(approval.decision, ("•", approval.decision))
    text = f"{mark} {words}"
    if approval.by and approval.decision not in ("timeout", "cancelled"):
        text += f" (via {approval.by})"
    if approval.note:
        text += f": {approval.note}"
    return text


def _usd(value: float) -> str:
    text = f"{value:.4f}".rstrip("0")
    return "$" + (text + "00" if text.endswith(".") else text)


def _count(tokens: int) -> str:
    """900, 2.2k, 20k, 1.5M."""
    if tokens < 1000:
        return str(tokens)
    size, unit = (1_000_000, "M") if tokens >= 1_000_000 else (1000, "k")
    return f"{tokens / size:.1f}".removesuffix(".0") + unit


def budget_text(budget: Budget | None) -> str:
    """``$0.012/$0.05 · 24%`` (tokens too when they have a limit); "" without a limit."""
    if budget is None or not (budget.max_cost_usd or budget.max_tokens):
        return ""
    parts = []
    if budget.max_cost_usd:
        parts.append(f"{_usd(budget.cost_usd)}/{_usd(budget.max_cost_usd)}")
    if budget.max_tokens:
        parts.append(f"{_count(budget.tokens)}/{_count(budget.max_tokens)} tokens")
    parts.append(f"{budget.share:.0%}")
    return " · ".join(parts)


class ApprovalCard(Vertical):
    """One held call; takes an answer while the request is open."""

    HELP = (
        "Jarvis holds a risky call until you answer. Check the call and the screen, then "
        "**a** allows it once, **t** allows this kind of call for the rest of the task, "
        "**d** denies it: type a note for the model and press **Enter**. No answer before "
        "the time runs out counts as a denial. The buttons do the same."
    )
    BINDINGS: ClassVar[list[BindingType]] = list(APPROVAL_BINDINGS)
    can_focus = True
    key_guard_s: ClassVar[float] = 1.0
    """After the card took the focus by itself, allow keys wait this long: a key meant
    for the prompt, typed as the card appeared, must not allow the call."""

    @staticmethod
    def clock() -> float:
        """Now, for the countdown (the snapshot test fixes it)."""
        return time.time()

    class Decided(Message):
        """The person answered; the app sends it to the daemon."""

        def __init__(self, card: ApprovalCard, decision: str, note: str) -> None:
            super().__init__()
            self.card, self.decision, self.note = card, decision, note

    class Closed(Message):
        """The request was resolved while the focus was on this card."""

        def __init__(self, card: ApprovalCard) -> None:
            super().__init__()
            self.card = card

    class WantsScreenshot(Message):
        """The card is shown and its request has a screenshot."""

        def __init__(self, card: ApprovalCard) -> None:
            super().__init__()
            self.card = card

    def __init__(self, approval: Approval) -> None:
        super().__init__(classes="approval -open" if approval.open else "approval done")
        self.guarded_until = 0.0
        self.approval = approval
        self.sending = False
        self.denying = False
        self._timer: Timer | None = None
        self.countdown = Static(
            time_left(approval.expires_at, self.clock()), classes="approval-time"
        )
        self.outcome = Static(outcome_text(approval), classes="approval-outcome", markup=False)
        self.countdown.display, self.outcome.display = approval.open, not approval.open
        self.note = Input(
            placeholder="d: why not (for the model), then Enter",
            classes="approval-note",
            compact=True,
        )

    def compose(self) -> ComposeResult:
        a = self.approval
        title = f"⚠ Jarvis asks before this call: {escape(a.shown_reason)}"
        yield Static(title, classes="approval-title")
        yield Static(call_text(a), classes="approval-call", markup=False)
        yield self.countdown
        yield self.outcome
        if a.open:
            with Horizontal(classes="approval-buttons"):
                yield Button("Allow once (a)", id="allow_once", variant="success", compact=True)
                yield Button("Allow for this task (t)", id="allow_task", compact=True)
                yield Button("Deny (d)", id="deny", variant="error", compact=True)
            yield self.note

    def on_mount(self) -> None:
        self.refresh_from()
        if self.approval.open:
            self._timer = self.set_interval(1.0, self._tick)
            if self.approval.screenshot:
                self.post_message(self.WantsScreenshot(self))

    def _tick(self) -> None:
        if self.approval.open:
            self.countdown.update(time_left(self.approval.expires_at, self.clock()))

    def refresh_from(self) -> None:
        """Redraw from the approval; once it is not open, drop the answers for good."""
        a = self.approval
        self.set_class(a.open, "-open")
        self.countdown.display = a.open
        self.outcome.display = not a.open
        if a.open:
            self._tick()
            return
        self.outcome.update(outcome_text(a))
        had_focus = self.has_focus or self.has_focus_within
        self.set_class(True, "done")
        self.set_class(a.decision in ("allow_once", "allow_task", "auto"), "allowed")
        self.can_focus = False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.query(".approval-buttons").remove()
        self.query(".approval-note").remove()
        if had_focus:
            self.post_message(self.Closed(self))

    async def show_screenshot(self, image: bytes, halfblocks: bool) -> bool:
        """Put the screen of the request on the card; False if the bytes are no image."""
        if self.query(".approval-shot"):
            return True
        try:
            thumb = marked_thumbnail(image, None)
        except (UnidentifiedImageError, OSError, ValueError):
            return False
        # the image goes in before the mount: set after it, the first layout may size the
        # widget for no image (height 0) and keep that size
        widget = thumbnail_widget(halfblocks, image=thumb, classes="approval-shot")
        await self.mount(widget, after=self.outcome)
        return True

    # --- answers ----------------------------------------------------------------------
    def _send(self, decision: str, note: str = "") -> None:
        if not self.approval.open or self.sending:
            return
        self.sending = True
        self._enable(False)
        self.post_message(self.Decided(self, decision, note))

    def sent(self, ok: bool) -> None:
        """The daemon took the answer (its resolved line will close the card), or refused
        it: then the card takes answers again."""
        self.sending = False
        if not ok:
            self._enable(True)

    def _enable(self, on_: bool) -> None:
        for widget in self.query("Button, .approval-note"):
            widget.disabled = not on_

    def took_focus(self) -> None:
        """The card took the focus by itself (a new request): guard the allow keys."""
        self.focus()
        self.guarded_until = time.monotonic() + self.key_guard_s

    def action_decide(self, decision: str) -> None:
        if time.monotonic() < self.guarded_until:
            self.app.notify(
                "The request just took the focus: press the key again to be sure.", timeout=3
            )
            self.guarded_until = 0.0
            return
        self._send(decision)

    def action_deny(self) -> None:
        """Open the note; Enter in it (or the button again) sends the denial."""
        if not self.approval.open or self.sending:
            return
        self.denying = True
        self.query_one("#deny", Button).label = "Send denial (Enter)"
        self.note.focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "deny":
            if self.denying:
                self._send("deny", self.note.value.strip())
            else:
                self.action_deny()
        elif event.button.id in ("allow_once", "allow_task"):
            self._send(event.button.id)

    @on(Input.Submitted, ".approval-note")
    def _note_sent(self, event: Input.Submitted) -> None:
        event.stop()
        self._send("deny", event.value.strip())
