"""Stall detection: the same action repeated on a screen that did not change."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from jarvis.llm.types import ToolCall

Verdict = Literal["ok", "warn", "stuck"]


def signature(calls: list[ToolCall]) -> str:
    """A stable text form of a reply's actions, ignoring call ids."""
    return json.dumps(
        [[c.name, c.arguments] for c in calls], sort_keys=True, ensure_ascii=False, default=str
    )


@dataclass
class StallDetector:
    """Warns once, then reports stuck, when an action repeats on an unchanged screen.

    ``check`` is called with the pHash the step acted on and the step's actions.
    A repeat counts only when the screen the model saw is the same as the one
    the previous identical action was taken on, i.e. that action changed nothing.
    """

    warn_after: int = 1
    stuck_after: int = 2
    _last: tuple[str, str] | None = None
    repeats: int = 0

    def check(self, phash: str, calls: list[ToolCall]) -> Verdict:
        if not calls:
            return "ok"
        key = (phash, signature(calls))
        if key == self._last:
            self.repeats += 1
        else:
            self.repeats = 0
        self._last = key
        if self.repeats >= self.stuck_after:
            return "stuck"
        if self.repeats >= self.warn_after:
            return "warn"
        return "ok"
