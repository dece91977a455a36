"""The cockpit's side of approvals: which requests still wait, telling the person, and
sending the answers.

:class:`ApprovalDesk` works for the app (:class:`~jarvis.tui.app.JarvisApp`): on every
(re)connect :meth:`check` asks the daemon which requests it holds (the journal alone
cannot tell a waiting request from one a restarted daemon forgot), shows those the
cockpit has not seen, and closes the ones it no longer holds. A request that happens now
is announced once: the bell, a notification, and the focus on its card, unless the user
is typing in the prompt (a typed "a" or "d" must never answer it by accident; then the
notification names the key that goes to the card).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from jarvis.tui.approvals import ANSWERS, ApprovalCard
from jarvis.tui.backend import BackendError

if TYPE_CHECKING:
    from jarvis.tui.app import JarvisApp

log = logging.getLogger(__name__)
ANNOUNCE_TYPING_S = 2.0
"""A request takes the focus unless the user pressed a key in the prompt this recently."""


class ApprovalDesk:
    def __init__(self, app: JarvisApp) -> None:
        self.app = app
        self.announced: set[str] = set()

    async def check(self) -> None:
        """Show the requests the daemon holds, announce them, and close those it no longer
        holds (answered or forgotten while the cockpit was away)."""
        app, cockpit = self.app, self.app.cockpit
        before = {a.approval_id for _, a in cockpit.open_approvals()}
        try:
            pending = await app.backend.pending_approvals()
        except BackendError as exc:
            app.notify(f"pending approvals: {exc}", severity="warning", markup=False)
            return
        if not app.is_running or not app.screen_stack:  # the cockpit closed meanwhile
            return
        held = {str(line.get("approval_id")) for line in pending}
        for approval_id in sorted(before - held):
            app.show(cockpit.approval_gone(approval_id))
        app.apply_lines(pending, live=True)
        for _, approval in cockpit.open_approvals():
            if approval.approval_id in held:
                self.announce(approval.approval_id)
        app.draw_status()
        app.refresh_bindings()

    def announce(self, approval_id: str) -> None:
        """Ring, say what is asked, and take the focus to the card (once per request)."""
        app = self.app
        found = app.cockpit.approvals.get(approval_id)
        if approval_id in self.announced or found is None or not found[1].open:
            return
        self.announced.add(approval_id)
        task_id, approval = found
        app.bell()
        typing = time.monotonic() - app.prompt.last_key_at < ANNOUNCE_TYPING_S
        key = app.key_of("focus_approval")
        how = f"press {key} to answer" if typing else "a: allow once, t: this task, d: deny"
        app.notify(
            f"{approval.tool_name}: {approval.reason}. {how}",
            title=f"Jarvis asks before a call ({task_id})",
            severity="warning",
            timeout=10,
            markup=False,
        )
        if not typing:
            app.call_after_refresh(self.focus, True)

    def focus(self, by_itself: bool = False) -> None:
        """The focus to the oldest card that waits for an answer (``by_itself``: not asked
        for by a key, so its allow keys wait a moment)."""
        cards = [card for card in self.app.query(ApprovalCard) if card.approval.open]
        if not cards:
            self.app.notify("no call waits for your approval", timeout=2)
            return
        if by_itself:
            cards[0].took_focus()
        else:
            cards[0].focus()
        cards[0].scroll_visible(animate=False)

    async def answer(self, card: ApprovalCard, decision: str, note: str) -> None:
        """Send the card's answer; a refusal is shown, and the card takes answers again
        (or closes, when the daemon answers 404: it no longer holds the request)."""
        app = self.app
        approval_id = card.approval.approval_id
        try:
            await app.backend.approve(approval_id, decision, note)
        except BackendError as exc:
            app.notify(
                str(exc), title=f"approval {approval_id} not sent", severity="error", markup=False
            )
            card.sent(ok=False)
            if exc.status == 404:  # answered or forgotten meanwhile: no more answers here
                app.show(app.cockpit.approval_gone(approval_id))
                app.draw_status()
                app.refresh_bindings()
            return
        card.sent(ok=True)
        app.notify(f"{approval_id}: {ANSWERS[decision]}", timeout=2)
        app.prompt.focus()

    async def load_screenshot(self, card: ApprovalCard) -> None:
        """The screen at the moment of the request onto its card, when the daemon has it."""
        approval_id = card.approval.approval_id
        try:
            image = await self.app.backend.approval_screenshot(approval_id)
        except BackendError as exc:
            log.info("approval %s: screenshot: %s", approval_id, exc)
            return
        halfblocks = self.app.tui.thumbnail == "halfblocks"
        if image and not await card.show_screenshot(image, halfblocks):
            log.info("approval %s: the screenshot is not an image", approval_id)
