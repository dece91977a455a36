"""Settings of the books (``settings.todos``), of routing (``settings.router``) and of the
hand-edited inbox (``settings.inbox``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

MAX_MESSAGE_CHARS = 100_000
"""The longest message text taken from any channel (the API, drop files, the inbox)."""


class TodosSettings(BaseModel):
    """``todos`` in settings.json, e.g. ``{"todos": {"keep_ended": 100}}``."""

    keep_ended: int = Field(
        50,
        ge=0,
        description="ended tasks (completed, failed, cancelled) kept in todos.md, newest "
        "first; older ones move to todos/archive/YYYY-MM.md",
    )


class RouterSettings(BaseModel):
    """``router`` in settings.json, e.g. ``{"router": {"candidates": 30}}``."""

    candidates: int = Field(
        20,
        ge=1,
        description="open tasks the router shows the model for one message: the thread "
        "first, then the most similar, then the newest",
    )


class InboxSettings(BaseModel):
    """``inbox`` in settings.json, e.g. ``{"inbox": {"max_message_chars": 50000}}``."""

    max_message_chars: int = Field(
        MAX_MESSAGE_CHARS,
        ge=1,
        description="the longest message taken from messages/inbox.md: a longer one (typed or "
        "pasted by hand) is moved to messages/drop/refused/ unread, with one line in the log",
    )
