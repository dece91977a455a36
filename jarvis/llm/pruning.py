"""Keep the request small and its shape stable: only the most recent screenshots stay.

Older images are replaced in place by a short text placeholder, so every message
keeps its parts in the same positions from step to step and cache markers on
later messages still line up.
"""

from __future__ import annotations

from jarvis.llm.types import ImagePart, Message, Part, TextPart

IMAGE_PLACEHOLDER = "[screenshot omitted]"


def count_images(messages: list[Message]) -> int:
    return sum(isinstance(p, ImagePart) for m in messages for p in m.content)


def prune_images(
    messages: list[Message], keep: int, placeholder: str = IMAGE_PLACEHOLDER
) -> list[Message]:
    """A copy of ``messages`` in which only the last ``keep`` images remain.

    Messages without a dropped image are returned as the same objects; the input
    is never modified.
    """
    if keep < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    to_drop = count_images(messages) - keep
    if to_drop <= 0:
        return list(messages)
    out: list[Message] = []
    for message in messages:
        if to_drop <= 0 or not any(isinstance(p, ImagePart) for p in message.content):
            out.append(message)
            continue
        parts: list[Part] = []
        for part in message.content:
            if isinstance(part, ImagePart) and to_drop > 0:
                parts.append(TextPart(text=placeholder))
                to_drop -= 1
            else:
                parts.append(part)
        out.append(message.model_copy(update={"content": parts}))
    return out
