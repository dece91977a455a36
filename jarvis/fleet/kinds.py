"""Task kinds: fleet tasks whose text is data for a handler, not words for the agent.

Most fleet tasks are words for the worker's agent. A task of a kind (a run of
``jarvis eval --fleet``: its setup, its agent and its check, on the worker's desktop) is
marked by the channel ``kind:NAME`` on its entry, and its text is the kind's own data.
A worker runs it with the handler its root wired in for NAME (``jarvis worker --eval``
wires eval's), lending the handler its settings, bus, display and approvals; a worker
without one fails the task and says why. The fleet knows no kind itself: the roots pick
and wire them (DESIGN.md section 1: fleet never imports eval).

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.agent.agent import Agent
    from jarvis.config import Settings
    from jarvis.desktop.backend import Where
    from jarvis.events import EventBus
    from jarvis.safety.approvals import ApprovalGate

KIND_PREFIX = "kind:"


def kind_channel(name: str) -> str:
    """The channel that marks a task of kind ``name``."""
    return f"{KIND_PREFIX}{name}"


def kind_of(channels: tuple[str, ...]) -> str | None:
    """The kind a task's channels mark; None for an agent's task."""
    for channel in channels:
        if channel.startswith(KIND_PREFIX):
            return channel[len(KIND_PREFIX) :]
    return None


@dataclass(frozen=True)
class Lent:
    """What a worker lends a kind's handler for one task."""

    settings: Settings
    bus: EventBus
    """The worker's bus: what is posted on it goes to the coordinator as the task's events."""
    where: Where
    approvals: ApprovalGate
    attach: Callable[[Agent | None], None]
    """Give it the task's agent while it runs (cancel, stop and a lost lease reach that
    agent), and None once it is done."""


TaskHandler = Callable[[str, str, Lent], Awaitable[tuple[str, str]]]
"""``handler(text, task_id, lent)``: runs the task; its outcome's status and summary."""


def refusing(reason: str) -> TaskHandler:
    """A handler that fails every task of its kind with ``reason``."""

    async def refuse(text: str, task_id: str, lent: Lent) -> tuple[str, str]:
        return "failed", reason

    return refuse
