"""Settings of the fleet (``fleet`` in settings.json; ``JARVIS_FLEET__REDIS_URL`` and so
on): where its Redis is, and the times and counts its queue and workers live by.

Side: both (the coordinator and the workers)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FleetSettings(BaseModel):
    """``{"fleet": {"redis_url": "redis://HOST:6379/0"}}`` makes ``jarvis serve`` the
    fleet's coordinator (as ``--fleet URL`` does)."""

    redis_url: str | None = Field(
        None,
        description="the fleet's Redis (redis:// or rediss://); the password may come from "
        "$JARVIS_REDIS_PASSWORD rather than the URL",
    )
    lease_s: float = Field(
        30.0, gt=0, description="a worker's lease on its task, renewed while it runs"
    )
    max_attempts: int = Field(
        3, ge=1, description="a task that lost its desktop this many times fails"
    )
    heartbeat_ttl_s: int = Field(
        15, ge=2, description="a worker that sent no heartbeat for this long is gone"
    )
