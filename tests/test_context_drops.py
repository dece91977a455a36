"""A stable context pays for nothing it does not use: through the real Anthropic SDK against
the scripted model, the request before a drop writes no cache on its newest message, the
screenshots kept across a drop go at half size (the current one whole), and one-off calls
(verification, wrap-up) write no cache at all."""

from __future__ import annotations

import asyncio
import base64
import io
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from jarvis.agent.brain import Brain
from jarvis.agent.context import ContextPolicy, Turn, scaled
from jarvis.agent.state import RunState
from jarvis.config import load_settings
from jarvis.desktop.screen import Observation, Size, encode_image, phash_hex
from jarvis.events import EventBus
from jarvis.llm.anthropic import AnthropicProvider
from jarvis.llm.pricing import Block, PromptCache
from jarvis.llm.types import ImagePart
from jarvis.tools.computer import build_registry
from tests.context_steps import context_for, think_step
from tests.fake_model import FakeModel, Reply, call
from tests.fake_model import fake_model_fixture as fake_model_fixture
from tests.llm_cases import FAST

SIZE = Size(1280, 720)


def shot(step: int) -> Observation:
    image = Image.new("RGB", (SIZE.width, SIZE.height), (236, 236, 236))
    ImageDraw.Draw(image).text((20, 30), f"window {step}", fill=(0, 0, 0))
    data = encode_image(image, "jpeg", 80)
    return Observation(image, data, "image/jpeg", phash_hex(image), SIZE, SIZE, (0, 0))


def sizes(body: dict[str, Any]) -> list[tuple[int, int]]:
    found = []
    for message in body["messages"]:
        for block in message["content"]:
            inner = block.get("content") if block.get("type") == "tool_result" else [block]
            for part in inner if isinstance(inner, list) else []:
                if part.get("type") == "image":
                    data = base64.b64decode(part["source"]["data"])
                    found.append(Image.open(io.BytesIO(data)).size)
    return found


def newest_user_marked(body: dict[str, Any]) -> bool:
    users = [m for m in body["messages"] if m["role"] == "user"]
    return "cache_control" in users[-1]["content"][-1]


async def run_steps(brain: Brain, steps: int, max_steps: int) -> RunState:
    tools = build_registry(brain.settings).specs("anthropic")
    state = RunState(task="file the invoices", task_id="t-drops")
    for step in range(1, steps + 1):
        await think_step(brain, state, shot(step), tools, max_steps)
    return state


def brain_for(fake: FakeModel, tmp_path: Path, **kw: Any) -> Brain:
    settings = load_settings(
        tmp_path, context_policy="stable", keep_screenshots=3, long_term_memory=False, **kw
    )
    provider = AnthropicProvider(
        "claude-sonnet-4-6", api_key="sk-ant-test", base_url=fake.base_url, retry=FAST
    )
    brain = Brain(provider, screen=None, settings=settings, bus=EventBus())  # type: ignore[arg-type]
    assert brain.policy.chunk == 5  # the profile's C: the window grows from 3 to 8
    return brain


def test_the_step_before_a_drop_writes_no_cache_and_kept_shots_go_at_half_size(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.set_default(lambda _req: Reply(tool_calls=[call("click", x=5, y=6)]))
    brain = brain_for(fake_model, tmp_path)
    asyncio.run(run_steps(brain, 10, max_steps=30))
    bodies = [r.body for r in fake_model.requests]
    assert len(bodies) == 10
    # steps 1-7 mark their newest message (step 8 starts with it); step 8 is the last
    # before the drop: its newest message carries no breakpoint, the one before still does
    assert [newest_user_marked(b) for b in bodies] == [True] * 7 + [False] + [True] * 2
    users = [m for m in bodies[7]["messages"] if m["role"] == "user"]
    assert "cache_control" in users[-2]["content"][-1]
    # step 8 sees 8 whole screenshots; step 9 (after the drop) the two kept at half size
    # and its own whole; step 10 adds one more whole
    assert sizes(bodies[7]) == [(1280, 720)] * 8
    assert sizes(bodies[8]) == [(640, 360), (640, 360), (1280, 720)]
    assert sizes(bodies[9]) == [(640, 360), (640, 360), (1280, 720), (1280, 720)]


def test_the_last_step_and_one_off_calls_write_no_cache(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.set_default(lambda _req: Reply(tool_calls=[call("click", x=5, y=6)]))
    brain = brain_for(fake_model, tmp_path)
    state = asyncio.run(run_steps(brain, 3, max_steps=3))
    assert newest_user_marked(fake_model.requests[1].body)  # step 2: step 3 reads it
    assert not newest_user_marked(fake_model.requests[2].body)  # step 3 is the bound
    state.step += 1
    ctx = context_for(state, brain, shot(4), max_steps=3)
    fake_model.set_default(lambda _req: Reply(text="I filed two of them."))
    asyncio.run(brain.wrap_up(ctx, "3 steps"))
    assert fake_model.requests[-1].cache_markers() == 0


def test_scale_one_keeps_the_kept_shots_whole(fake_model: FakeModel, tmp_path: Path) -> None:
    fake_model.set_default(lambda _req: Reply(tool_calls=[call("click", x=5, y=6)]))
    profiles = {"whole-shots": {"extends": "claude", "history": {"chunk": 5, "resend_scale": 1}}}
    brain = brain_for(fake_model, tmp_path, model_profiles=profiles, model_profile="whole-shots")
    asyncio.run(run_steps(brain, 9, max_steps=30))
    assert sizes(fake_model.requests[8].body) == [(1280, 720)] * 3


def test_a_screenshot_is_made_smaller_once_and_keeps_its_format() -> None:
    jpeg = ImagePart.from_bytes(encode_image(shot(1).image, "jpeg", 80), "image/jpeg")
    png = ImagePart.from_bytes(encode_image(shot(1).image, "png"), "image/png")
    for part, kind in ((jpeg, "JPEG"), (png, "PNG")):
        small = Image.open(io.BytesIO(base64.b64decode(scaled(part, 0.5).data_b64)))
        assert (small.size, small.format) == ((640, 360), kind)
    policy = ContextPolicy("stable", keep=3, chunk=0, resend_scale=0.5)
    turns = [Turn(step=i, screenshot=jpeg, prompt="", text="") for i in (1, 2, 3)]
    once = policy.trim(turns)  # 3 turns + the current one exceed K + C = 3: drop
    assert [t.step for t in once] == [2, 3] and all(t.resent for t in once)
    twice = policy.trim([*once, Turn(step=4, screenshot=jpeg, prompt="", text="")])
    assert [t.step for t in twice] == [3, 4]
    assert twice[0].screenshot is once[1].screenshot  # turn 3 is not halved again
    assert ContextPolicy("sliding", 3).trim(turns)[0].screenshot is jpeg  # sliding: whole


def test_a_cache_write_no_later_request_reads_is_counted() -> None:
    cache = PromptCache("anthropic")
    cache.cost([Block("tools", 1500, True), Block("m1", 2000, True)])
    assert cache.unread_writes() == [3500]
    cache.cost([Block("tools", 1500, True), Block("m1", 2000, True), Block("m2", 900, True)])
    assert cache.unread_writes() == [900]  # m1's prefix was read back; m2's not yet
    cache.cost([Block("tools", 1500, True), Block("m9", 1200, False)])  # a drop: tools only
    assert cache.unread_writes() == [900]
