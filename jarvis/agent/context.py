"""Pure functions that turn the agent's state into model messages and parse the model's text.

The request for step N is flat in size: a header (task, todos, memories, a text
line per older step), the last few steps as real turns (assistant tool calls,
tool results, the screenshot each step saw) and the current screenshot. Older
screenshots are replaced by a placeholder, so cost does not grow with steps.

Which turns stay is the :class:`ContextPolicy`. ``sliding`` keeps the last K screenshots
and slides by one every step, so the first message (and everything after it) changes
every step and the provider's prompt cache is written and never read. ``stable`` lets the
window grow from K to K + C screenshots and then drops C at once: between drops every
request starts with the previous one, and the cache breakpoints on the last user
messages are read back on the next step. Two things keep a stable context from paying for
what it never uses: the request just before a drop (and the last step's) puts no
breakpoint on its newest message, since no later request starts with it; and the
screenshots kept across a drop, which are written to the cache again anyway, go at
``resend_scale`` of their size (half: a quarter of the tokens). The current screenshot,
the one the model acts on, always goes whole.
"""

from __future__ import annotations

import base64
import io
import json
import re
from dataclasses import dataclass, field, replace
from typing import Literal

from PIL import Image

from jarvis.desktop.picture import encode_image
from jarvis.llm.pruning import prune_images
from jarvis.llm.types import ImagePart, Message, Part, TextPart, ToolCall, ToolResultPart


@dataclass
class Turn:
    """One past step as the model saw and answered it."""

    step: int
    screenshot: ImagePart | None
    prompt: str
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResultPart] = field(default_factory=list)
    images: list[ImagePart] = field(default_factory=list)
    """Images the tools returned (an MCP tool's picture), sent right after the results."""
    resent: bool = False
    """Its screenshot was made smaller when it was kept across a drop (never twice)."""


@dataclass(frozen=True)
class ContextPolicy:
    """How many past turns (each with its screenshot) stay in the context.

    ``keep`` (K) screenshots are visible at every step once there are that many;
    ``stable`` grows the window to ``keep + chunk`` (K + C) before dropping C at once, and
    re-sends the screenshots it keeps across a drop at ``resend_scale`` of their size.
    """

    kind: Literal["sliding", "stable"] = "sliding"
    keep: int = 3
    chunk: int = 0
    resend_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.keep < 1 or self.chunk < 0:
            raise ValueError(f"keep must be >= 1 and chunk >= 0, got {self.keep}, {self.chunk}")
        if not 0 < self.resend_scale <= 1:
            raise ValueError(f"resend_scale must be in (0, 1], got {self.resend_scale}")

    @property
    def max_images(self) -> int:
        """The most screenshots one request carries (the current one included)."""
        return self.keep + (self.chunk if self.kind == "stable" else 0)

    def last_before_drop(self, past_turns: int) -> bool:
        """Whether the next step will not start with the request of a step that has
        ``past_turns`` turns before it: a stable window is full and drops after it."""
        return self.kind == "stable" and past_turns + 2 > self.max_images

    def trim(self, turns: list[Turn]) -> list[Turn]:
        """The turns to keep for the next step, after the newest one was added."""
        if self.kind == "stable" and len(turns) + 1 <= self.max_images:
            return list(turns)
        kept = list(turns[len(turns) - (self.keep - 1) :]) if self.keep > 1 else []
        if self.kind == "stable" and self.resend_scale < 1:
            return [self._resent(turn) for turn in kept]
        return kept

    def _resent(self, turn: Turn) -> Turn:
        if turn.resent or turn.screenshot is None:
            return turn
        return replace(turn, screenshot=scaled(turn.screenshot, self.resend_scale), resent=True)


def scaled(part: ImagePart, scale: float) -> ImagePart:
    """``part`` at ``scale`` of its width and height, in its own format (JPEG stays JPEG)."""
    with Image.open(io.BytesIO(base64.b64decode(part.data_b64))) as image:
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        kind = image.format or "PNG"
        image.draft("RGB", size)  # JPEG: decode at the smaller size straight away
        smaller = image.convert("RGB").resize(size, Image.Resampling.BOX)
    data = encode_image(smaller, "jpeg" if kind == "JPEG" else "png")
    return ImagePart.from_bytes(data, part.media_type)


@dataclass
class FrozenHeader:
    """The header as it was rendered when the window last changed its first turn.

    A stable context keeps it byte for byte until the next drop; what changed since
    (todos, memories) goes into the step prompt instead (:meth:`changes`).
    """

    anchor: tuple[str, str, int | None]
    text: str
    todos: str
    memories: tuple[str, ...]

    def changes(self, todos: str, memories: list[str]) -> list[str]:
        notes = []
        if todos != self.todos:
            notes.append(f"Open todos now (updated):\n{todos}")
        if tuple(memories) != self.memories:
            lines = "\n".join(f"- {m}" for m in memories) or "(nothing)"
            notes.append(f"What you remember now (updated):\n{lines}")
        return notes


def build_messages(
    header: str,
    turns: list[Turn],
    current: ImagePart | None,
    prompt: str,
    keep_images: int,
) -> list[Message]:
    """Messages for one step: header, recent turns, then the current screenshot and prompt."""
    messages: list[Message] = []
    pending: list[Part] = [TextPart(text=header)]
    for turn in turns:
        if turn.screenshot is not None:
            pending.append(turn.screenshot)
        pending.append(TextPart(text=turn.prompt))
        messages.append(Message(role="user", content=pending))
        messages.append(Message.assistant(turn.text or "(no text)", list(turn.tool_calls)))
        pending = [*turn.results, *turn.images]
    if current is not None:
        pending.append(current)
    pending.append(TextPart(text=prompt))
    messages.append(Message(role="user", content=pending))
    return prune_images(messages, keep_images)


_SECTION = re.compile(r"^\s*(?:[#*_]*\s*)?(reflection|thought)\s*[:*_]*\s*:?\s*", re.I | re.M)


def parse_thought(text: str) -> tuple[str, str]:
    """Split the model's text into (reflection, thought); unlabelled text is the thought."""
    matches = list(_SECTION.finditer(text))
    if not matches:
        return "", text.strip()
    parts: dict[str, str] = {}
    lead = text[: matches[0].start()].strip()
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        key = match.group(1).lower()
        parts[key] = (parts.get(key, "") + " " + text[match.end() : end].strip()).strip()
    thought = parts.get("thought", "")
    if lead:
        thought = f"{lead}\n{thought}".strip()
    return parts.get("reflection", ""), thought


_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_verdict(text: str) -> tuple[bool, str]:
    """Read the verifier's answer: a JSON object with done and reason, or a yes/no fallback."""
    match = _JSON_OBJECT.search(text)
    if match:
        try:
            data = json.loads(match.group(0))
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and "done" in data:
            done = data["done"]
            if isinstance(done, str):
                done = done.strip().lower() in {"true", "yes", "done"}
            return bool(done), str(data.get("reason", "")).strip()
    words = text.strip().lower()
    if words.startswith(("yes", "done", "true")):
        return True, text.strip()
    return False, text.strip() or "the verifier gave no answer"


def history_lines(summaries: list[str]) -> str:
    return "\n".join(summaries) if summaries else "(none yet)"
