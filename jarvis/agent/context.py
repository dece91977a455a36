"""Pure functions that turn the agent's state into model messages and parse the model's text.

The request for step N is flat in size: a header (task, todos, memories, a text
line per older step), the last few steps as real turns (assistant tool calls,
tool results, the screenshot each step saw) and the current screenshot. Older
screenshots are replaced by a placeholder, so cost does not grow with steps.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

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
