"""Flat token cost: a 30-step task's request at step 30 is not much bigger than at step 5.

The stable context policy (the default) lets the screenshot window grow from K to K + C
and then drops C at once, so request sizes cycle with period C instead of staying equal;
they never grow beyond one cycle's largest (bench/context_cost.py measures the cost).
"""

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
    keep, chunk = settings.keep_screenshots, 5  # C of the Claude profile
    cycle = max(r.size for r in steps[4 : 4 + chunk + 1])
    assert step30.size <= 1.3 * cycle, (cycle, step30.size)
    counts = [r.image_count() for r in steps]
    assert all(min(n, keep) <= c <= keep + chunk for n, c in enumerate(counts, 1)), counts
    assert max(counts) == keep + chunk and min(counts[keep:]) == keep  # grows, then drops
    assert step30.cache_markers() >= 2
    assert step5.cache_markers() >= 2
