"""Settings of the books (``settings.todos``) and of routing (``settings.router``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


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
