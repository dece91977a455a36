"""The ``tui`` settings (``{"tui": {...}}`` in settings.json, ``JARVIS_TUI__*`` in the env)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class TuiSettings(BaseModel):
    """How ``jarvis tui`` looks and which keys it uses (it finds the daemon through
    ``DATA/serve.lock``: :mod:`jarvis.discovery`)."""

    keys: dict[str, str] = Field(
        default_factory=dict,
        description="binding id -> keys, e.g. {'cancel': 'ctrl+x', 'quit': 'ctrl+q,f10'}",
    )
    thumbnail: Literal["auto", "halfblocks"] = Field(
        "auto", description="auto picks Kitty graphics, Sixel or half-blocks; halfblocks forces it"
    )
    theme: str = "textual-dark"
    screen_panel: bool = Field(True, description="show the side panel with the screen")
    stream_refresh_ms: int = Field(
        100, ge=10, le=1000, description="streamed thought text is redrawn at most this often"
    )
    history_runs: int = Field(5, ge=0, le=100, description="recent runs shown at start")
    live_screen_s: float = Field(
        1.0,
        ge=0,
        le=60,
        description="while a task runs, the side panel shows the display live, this often "
        "(seconds; 0: only after each step)",
    )
