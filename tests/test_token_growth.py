"""Flat token cost: a 30-step task's request at step 30 is not much bigger than at step 5."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.desktop.screen import Size, fit_size, screen_to_model
from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")

STEPS = 30


async def test_request_size_is_flat_and_cached(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, max_steps=STEPS + 2)
    screen = Size(*tkapp.screen)
    model = fit_size(screen, settings.max_side)
    px, py, pw, ph = tkapp.widget_rect("pad")
    replies = []
    for i in range(STEPS - 1):
        x, y = px + 40 + (i * 37) % (pw - 80), py + 40 + (i * 53) % (ph - 80)
        mx, my = screen_to_model(x, y, model, screen)
        text = f"Reflection: step {i} went fine.\nThought: move the pointer to spot {i}."
        replies.append(Reply(text=text, tool_calls=[call("mouse_move", x=mx, y=my)]))
    replies.append(Reply(text="Thought: done", tool_calls=[call("finished", summary="moved")]))
    replies.append(Reply(text='{"done": true, "reason": "ok"}'))
    fake_model.script(*replies)

    outcome, _ = await run_agent(settings, "move the pointer around the pad")

    assert outcome.status == "finished"
    assert outcome.steps == STEPS
    steps = [r for r in fake_model.requests if r.tool_names]  # the verify call has no tools
    assert len(steps) == STEPS
    step5, step30 = steps[4], steps[29]
    assert step30.size <= 1.3 * step5.size, (step5.size, step30.size)
    assert step30.image_count() == step5.image_count() == settings.keep_screenshots
    assert step30.cache_markers() >= 2
    assert step5.cache_markers() >= 2
