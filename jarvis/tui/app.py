"""The cockpit app: conversation, side panel, prompt, status line and footer.

Lines come from a :class:`~jarvis.tui.backend.Backend` (the control API, or a recorded
journal) and are folded into a :class:`~jarvis.tui.state.Cockpit`; widgets are synced
from it. The stream worker reconnects with a backoff and resumes after the last seq it
saw, so a daemon restart loses nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input, Static
from textual.widgets._help_panel import HelpPanel

from jarvis.tui.approval_desk import ApprovalDesk
from jarvis.tui.approvals import ApprovalCard
from jarvis.tui.backend import Backend, BackendError
from jarvis.tui.bindings import BINDINGS, keymap
from jarvis.tui.cards import NeedsUser, ToolCard
from jarvis.tui.clipboard import copy_text
from jarvis.tui.conversation import Conversation
from jarvis.tui.dialogs import ConfirmQuit
from jarvis.tui.hold import HoldKeys
from jarvis.tui.palette import palette_commands
from jarvis.tui.prompt import Prompt
from jarvis.tui.recording import RecordingKeys
from jarvis.tui.sent import SentNote
from jarvis.tui.settings import TuiSettings
from jarvis.tui.side import SidePanel
from jarvis.tui.side_feed import SideFeed
from jarvis.tui.state import Cockpit
from jarvis.tui.status import status_line
from jarvis.tui.task_runs import Change

log = logging.getLogger(__name__)
RETRY_S = (0.2, 0.5, 1.0, 2.0, 3.0)
TYPING_HOLD_S = 0.25
TYPING_MAX_HOLD_S = 1.0
SCREEN_KINDS = frozenset({"step_finished", "tool_call_finished", "task_finished"})
TODO_KINDS = frozenset({"task_started", "task_finished", "reply_ready"})
APPROVAL_KINDS = frozenset({"approval_requested", "approval_resolved", "task_finished"})
TAKEOVER_KINDS = frozenset({"takeover_started", "takeover_ended"})
STATUS_KINDS = frozenset({"verification_finished", "model_retry", "step_finished"})
WORKERS_EVERY_S = 5.0
"""How often the side panel asks for the fleet's workers."""


class JarvisApp(RecordingKeys, HoldKeys, App[None]):
    """``jarvis tui``."""

    CSS_PATH = "app.tcss"
    TITLE = "Jarvis"
    BINDINGS: ClassVar[list[BindingType]] = list(BINDINGS)
    COMMAND_PALETTE_BINDING = "ctrl+p"

    connection: reactive[str] = reactive("connecting")

    def __init__(self, backend: Backend, settings: TuiSettings | None = None) -> None:
        super().__init__()
        self.backend = backend
        self.tui = settings or TuiSettings()
        self._keymap = keymap(self.tui.keys)
        self.cockpit = Cockpit()
        self.side = SidePanel(halfblocks=self.tui.thumbnail == "halfblocks")
        self.conversation = Conversation(id="conversation")
        self.prompt = Prompt()
        self.sent = SentNote()
        self.status = Static("", id="status")
        self.known_runs: list[dict[str, Any]] = []
        self.screen_holder: str | None = None
        """Who took the screen from the agent (``takeover_started``), until it is back."""
        self._dirty: set[str] = set()
        self._screen_due = False
        self.history_loaded = asyncio.Event()
        self.lines_applied = 0
        self._drawn_at = 0.0
        self.desk = ApprovalDesk(self)
        self.feed = SideFeed(self)

    # --- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield self.conversation
                yield self.sent
                yield self.prompt
            yield self.side
        yield self.status
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.theme = self.tui.theme
        self.side.display = self.tui.screen_panel
        self.conversation.anchor()
        self.prompt.focus()
        self.draw_status()
        self.set_interval(self.tui.stream_refresh_ms / 1000, self._draw_pending)
        if self.tui.live_screen_s > 0:
            self.set_interval(self.tui.live_screen_s, self._live_screen)
        self.set_interval(WORKERS_EVERY_S, self.feed.workers)
        self.set_interval(WORKERS_EVERY_S, self.feed.schedules)
        self._stream()

    # --- lines in --------------------------------------------------------------------
    @work(exclusive=True, group="stream")
    async def _stream(self) -> None:
        try:
            history = await self.backend.history(self.tui.history_runs)
        except BackendError as exc:
            history = []
            self.notify(f"history: {exc}", severity="warning", markup=False)
        self.apply_lines(history)
        self.history_loaded.set()
        self.feed.load_all()
        failures = 0
        while True:
            try:
                async for line in self.backend.events(self.cockpit.last_seq):
                    if self.connection != self.connected_word:
                        self.connection, failures = self.connected_word, 0
                        self.feed.load_all()
                        self._check_approvals()
                    if line.get("kind") != "connected":
                        self.apply_lines([line], live=True)
                self.connection = "reconnecting"
            except BackendError as exc:
                log.info("event stream: %s", exc)
                self.connection = "reconnecting"
            delay = RETRY_S[min(failures, len(RETRY_S) - 1)]
            failures += 1
            await asyncio.sleep(delay)

    def apply_lines(self, lines: Iterable[dict[str, Any]], live: bool = False) -> None:
        """Fold lines in and show them; ``live``: they happen now (a request is announced)."""
        for line in lines:
            change = self.cockpit.apply(line)
            self.lines_applied += 1
            self.sent.took(line)
            if change.kind == "notice":
                self.notify(
                    self.cockpit.notices[-1], title="not routed", severity="error",
                    markup=False, timeout=30,
                )  # fmt: skip
            self.show(change)
            kind = line.get("kind")
            if kind in STATUS_KINDS:  # usage, or the model's trouble
                self.draw_status()
            if kind in APPROVAL_KINDS:
                self.draw_status()
                self.refresh_bindings()
                if live and kind == "approval_requested" and change.kind == "item":
                    self.desk.announce(str(line.get("approval_id")))
            if kind in TAKEOVER_KINDS:
                self.screen_holder = str(line.get("by")) if kind == "takeover_started" else None
                self.draw_status()
            if kind in SCREEN_KINDS:
                self._screen_due = True
            if kind in TODO_KINDS:
                self.feed.todos()

    def show(self, change: Change) -> None:
        if change.kind == "none" or change.task_id is None:
            return
        if change.kind == "thought":
            self._dirty.add(change.task_id)
            return
        if change.kind == "totals":
            self.draw_status()
            return
        view = self.conversation.view_of(change.task_id)
        if view is None:
            view = self.conversation.mount_run(self.cockpit.runs[change.task_id])
        if change.kind == "item_updated":
            view.update_item(change.index)
        view.sync()
        self._dirty.add(change.task_id)
        if change.kind in ("task", "ending"):
            self.draw_status()

    async def _draw_pending(self) -> None:
        """Coalesced drawing: streamed text, and the screen after a step.

        While the user types (a key in the prompt less than ``TYPING_HOLD_S`` ago), the
        streamed text waits, so the frame that shows the key is a small one; it is drawn
        at the latest ``TYPING_MAX_HOLD_S`` after it last was.
        """
        now = time.monotonic()
        typing = now - self.prompt.last_key_at < TYPING_HOLD_S
        if typing and now - self._drawn_at < TYPING_MAX_HOLD_S:
            return
        self._drawn_at = now
        dirty, self._dirty = self._dirty, set()
        self.conversation.flush_thoughts(dirty)
        if self._screen_due:
            self._screen_due = False
            self.feed.screen()

    # --- side panel -------------------------------------------------------------------
    def _live_screen(self) -> None:
        """While a task runs, the display as it is now (the sandbox's under --sandbox)."""
        if self.side.display and self.cockpit.running is not None:
            self.feed.screen(live=True)

    # --- approvals --------------------------------------------------------------------
    @work(exclusive=True, group="approvals")
    async def _check_approvals(self) -> None:
        await self.desk.check()

    def action_focus_approval(self) -> None:
        self.desk.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "focus_approval":  # in the footer only while a request waits
            return bool(self.cockpit.open_approvals())
        return True

    @on(ApprovalCard.Decided)
    def _decided(self, event: ApprovalCard.Decided) -> None:
        answer = self.desk.answer(event.card, event.decision, event.note)
        self.run_worker(answer, group="commands")

    @on(ApprovalCard.WantsScreenshot)
    def _wants_screenshot(self, event: ApprovalCard.WantsScreenshot) -> None:
        self.run_worker(self.desk.load_screenshot(event.card), group="approval-screens")

    @on(ApprovalCard.Closed)
    def _card_closed(self) -> None:
        self.prompt.focus()

    # --- status line -----------------------------------------------------------------
    def watch_connection(self) -> None:
        self.draw_status()

    def key_of(self, binding_id: str) -> str:
        """The key (as remapped in settings) of a binding."""
        keys = self._keymap.get(binding_id)
        return keys or next(b.key for b in BINDINGS if b.id == binding_id)

    @property
    def connected_word(self) -> str:
        """What the status line calls a working stream: a recording is not live."""
        return "recorded, not live" if self.backend.recorded else "live"

    def draw_status(self) -> None:
        holder = self.screen_holder
        self.status.update(status_line(self.cockpit, self.connection, self.backend.label, holder))
        self.status.set_class(self.connection != self.connected_word, "offline")

    # --- commands out ----------------------------------------------------------------
    @on(Prompt.Submitted)
    def _send(self, event: Prompt.Submitted) -> None:
        self.sent.sending(event.text)  # on screen at once, before the daemon answers
        self._send_task(event.text)

    @work(group="commands")
    async def _send_task(self, text: str) -> None:
        try:
            self.sent.sent(await self.backend.send(text))
        except BackendError as exc:  # not sent: the text goes back into the prompt
            self.sent.not_sent()
            self.prompt.restore(text)
            self.notify(
                f"{exc}\nYour text is back in the prompt.",
                title="not sent",
                severity="error",
                markup=False,
            )
            return
        await self.sent.follow(self.backend)

    @on(NeedsUser.Answered)
    def _answer(self, event: NeedsUser.Answered) -> None:
        run = self.cockpit.runs.get(event.task_id)
        if run is not None:
            run.answered = True
        for card in self.query(NeedsUser):
            if card.run.task_id == event.task_id and card.has_class("-open"):
                card.mark_answered(event.text)
        self._command(
            f"answer sent to {event.task_id}", self.backend.answer(event.task_id, event.text)
        )
        self.prompt.focus()

    @work(group="commands")
    async def _command(self, done: str, call: Any) -> None:
        try:
            await call
        except BackendError as exc:
            self.notify(str(exc), title="not done", severity="error", markup=False)
            return
        self.notify(done, timeout=2)

    def action_cancel_task(self) -> None:
        if self.screen.query(HelpPanel):  # Esc first closes the help (F1) it covers
            self.action_hide_help_panel()
            if self.cockpit.running is not None:
                key = self.key_of("cancel")
                self.notify(f"help closed; {key} again cancels the running task", timeout=3)
            return
        running = self.cockpit.running
        if running is None:
            self.notify("no task is running", timeout=2)
            return
        self._command(f"cancelling {running.task_id}", self.backend.cancel(running.task_id))

    def action_request_quit(self) -> None:
        if self.backend.owns_gateway and self.cockpit.running is not None:
            self.push_screen(ConfirmQuit(self.cockpit.running.task_id), self._quit_answer)
        else:
            self.exit()

    def _quit_answer(self, quit_now: bool | None) -> None:
        if quit_now:
            self.exit()

    def action_toggle_help(self) -> None:
        if self.screen.query(HelpPanel):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_toggle_side(self) -> None:
        self.side.display = not self.side.display

    def action_focus_prompt(self) -> None:
        self.prompt.focus()

    def action_focus_answer(self) -> None:
        fields = [i for i in self.query(".answer").results(Input)]
        if fields:
            fields[-1].focus()
            fields[-1].scroll_visible()
        else:
            self.notify("no question is waiting for you", timeout=2)

    def action_follow(self) -> None:
        self.conversation.anchor()

    def action_copy_card(self) -> None:
        card = self._card_in_focus()
        if card is None:
            self.notify("no tool card to copy", timeout=2)
            return
        how = copy_text(self, card.call.copy_text())
        self.notify(f"card copied ({how})", timeout=2)

    def _card_in_focus(self) -> ToolCard | None:
        node = self.focused
        while node is not None:
            if isinstance(node, ToolCard):
                return node
            node = node.parent  # type: ignore[assignment]
        cards = list(self.query(ToolCard))
        return cards[-1] if cards else None

    def copy_to_clipboard(self, text: str) -> None:
        """The system clipboard when there is one; OSC 52 through the terminal otherwise."""
        copy_text(self, text)

    def osc52_copy(self, text: str) -> None:
        super().copy_to_clipboard(text)

    @work(group="commands")
    async def open_run(self, task_id: str) -> None:
        """Put an older run's journal into the conversation and scroll to it."""
        try:
            lines = await self.backend.run_events(task_id)
        except BackendError as exc:
            self.notify(str(exc), title="cannot open the run", severity="error", markup=False)
            return
        self.apply_lines(lines)
        await self._draw_pending()
        view = self.conversation.view_of(task_id)
        if view is not None:
            self.conversation.release_anchor()
            self.call_after_refresh(view.scroll_visible, top=True, animate=False)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from palette_commands(self)
        yield from super().get_system_commands(screen)

    async def on_unmount(self) -> None:
        await self.backend.aclose()
