"""The control API's event stream (``GET /api/events``, text/event-stream) read as journal
lines."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SseEvent:
    id: str | None = None
    event: str = "message"
    data: list[str] = field(default_factory=list)


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[SseEvent]:
    """Parse text/event-stream lines (the WHATWG rules: ``field: value``, comments start
    with ``:``, a blank line ends an event, ``data`` lines join with newlines)."""
    current = SseEvent()
    async for line in lines:
        if not line:
            if current.data:
                yield current
            current = SseEvent()
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            current.data.append(value)
        elif name == "event":
            current.event = value
        elif name == "id" and "\0" not in value:
            current.id = value


async def journal_lines(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """Each event's ``data`` as a journal line (an object); others are skipped."""
    async for event in sse_events(lines):
        try:
            line = json.loads("\n".join(event.data))
        except json.JSONDecodeError:
            continue
        if isinstance(line, dict):
            yield line
