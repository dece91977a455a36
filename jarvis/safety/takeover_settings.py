"""Settings of the takeover (``takeover`` in settings.json; see :mod:`jarvis.safety.takeover`)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TakeoverSettings(BaseModel):
    """``takeover`` in settings.json."""

    enabled: bool = Field(True, description="serve a live view (x11vnc) of the daemon's display")
    idle_end_s: float = Field(
        300.0, gt=0, description="a takeover with no input for this long ends by itself"
    )
