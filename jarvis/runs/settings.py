"""Settings of run records and replay (``settings.runs``)."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator


class RunsSettings(BaseModel):
    """``runs`` in settings.json, e.g. ``{"runs": {"secret_patterns": ["hunter\\\\d+"]}}``."""

    record_steps: bool = Field(True, description="write steps/NNNN/ beside the journal")
    crop_px: int = Field(96, ge=16, le=512, description="side of the crop around a target")
    secret_patterns: list[str] = Field(
        default_factory=list,
        description="regular expressions for text you mark secret: never written to a record",
    )
    replay_phash_distance: int = Field(
        10, ge=0, le=64, description="pHash bits a replay's screen may differ from the recording"
    )
    replay_match_score: float = Field(
        0.9, gt=0, le=1, description="least normalised correlation of a target-crop match"
    )
    replay_search_px: int = Field(
        200, ge=0, description="how far from the recorded point a replay looks for its target"
    )

    @field_validator("secret_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"secret pattern {pattern!r} is not a regex: {exc}") from exc
        return patterns
