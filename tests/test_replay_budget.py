"""`jarvis replay --model` spends tokens like a live task and stops at the same budget:
the model call that would go past ``safety.max_tokens_total`` is never made."""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image

from jarvis.config import load_settings
from jarvis.desktop.screen import Observation, Size
from jarvis.llm.types import LLMRequest, LLMResponse, ResponseDone, StreamEvent, ToolCall
from jarvis.runs.placement import Stop
from jarvis.runs.reground import ModelRegrounder
from jarvis.runs.step_file import CallFile
from jarvis.usage import Usage


class PointingModel:
    """An in-process model at our own interface: always points at (10, 12), reporting
    ``tokens`` input tokens per call."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.requests: list[LLMRequest] = []

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        point = ToolCall(id=f"c{len(self.requests)}", name="point", arguments={"x": 10, "y": 12})
        usage = Usage(input_tokens=self.tokens, output_tokens=10)
        yield ResponseDone(response=LLMResponse(text="", tool_calls=[point], usage=usage))


def screen() -> Observation:
    image = Image.new("RGB", (64, 64), "white")
    buf = io.BytesIO()
    image.save(buf, "JPEG")
    return Observation(
        image=image,
        data=buf.getvalue(),
        media_type="image/jpeg",
        phash="0" * 16,
        model_size=Size(64, 64),
        screen_size=Size(64, 64),
        origin=(0, 0),
    )


@pytest.mark.parametrize(("budget", "calls"), [(2500, 3), (1000, 1), (None, 5)])
async def test_the_replay_stops_at_the_token_budget(
    tmp_path: Path, budget: int | None, calls: int
) -> None:
    settings = load_settings(tmp_path, safety={"max_tokens_total": budget})
    model = PointingModel(tokens=990)
    grounder = ModelRegrounder(model, settings)  # type: ignore[arg-type]
    crop = Image.new("RGB", (8, 8), "black")
    click = CallFile(id="c", name="click", model_points=[(30, 30)])
    made = 0
    with pytest.raises(Stop) if budget is not None else contextlib.nullcontext():
        for _ in range(5):
            assert await grounder.locate(screen(), crop, click) == (10, 12)
            made += 1
    assert made == calls and len(model.requests) == calls
    assert grounder.usage.input_tokens == 990 * calls
