"""The effective input cost per step of today's sliding context against the stable one.

A scripted 50-step task runs through the real :class:`jarvis.agent.brain.Brain` (its
header, step prompts, screenshot window and Anthropic wire with cache breakpoints)
twice in the same run: once with ``context_policy = "sliding"`` (keep the last K
screenshots, the window moves every step) and once with ``"stable"`` (grow to K + C,
then drop C at once). Each request is billed by :class:`jarvis.llm.pricing.PromptCache`
under Anthropic's rules (input 1x, cache write 1.25x, cache read 0.1x, breakpoints
with a 20-block lookback, 1024-token minimum) and, for comparison, OpenAI's automatic
prefix caching. Each step's screenshot is a real 1280x720 JPEG with its own content.

After the last step the run makes its wrap-up call (the loop's last request at the step
bound), billed too. Prints ONE JSON object: per step the effective input cost
(input-token equivalents) of both policies and the screenshots the model saw; ``ratio``
(new total / old total); the fewest screenshots visible from step K on; step 50's cost
over step 5's; the stable policy's cache writes that no later request read; and whether
the targets hold (ratio <= 0.5, >= K screenshots, step 50 <= 1.3 x step 5, no cache write
left unread).

Run: ``python bench/context_cost.py [--steps 50] [--keep 3] [--chunk 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jarvis.agent.brain import Brain
from jarvis.agent.context import ContextPolicy
from jarvis.agent.state import RunState
from jarvis.config import Settings, load_settings
from jarvis.desktop.screen import Observation, Size, encode_image, phash_hex
from jarvis.events import EventBus
from jarvis.llm.anthropic_wire import build_wire
from jarvis.llm.pricing import PromptCache
from jarvis.llm.types import (
    ImagePart,
    LLMRequest,
    LLMResponse,
    ResponseDone,
    StreamEvent,
    ToolCall,
)
from jarvis.llm.wire_tokens import wire_blocks
from jarvis.tools.computer import build_registry
from tests.context_steps import context_for, think_step

MODEL = "claude-sonnet-4-6"
SIZE = Size(1280, 720)
RATIO_TARGET = 0.5
GROWTH_TARGET = 1.3


class ScriptedModel:
    """An in-process Provider: records each request, answers with one click."""

    name = "anthropic"
    model = MODEL

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    async def stream(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        self.requests.append(request)
        n = len(self.requests)
        call = ToolCall(id=f"toolu_{n:04d}", name="click", arguments={"x": 10 + n, "y": 20 + n})
        text = f"Reflection: step {n - 1} worked.\nThought: click the next item in the list."
        yield ResponseDone(response=LLMResponse(text=text, tool_calls=[call]))


def screenshot(step: int) -> Observation:
    rng = random.Random(step)
    image = Image.new("RGB", (SIZE.width, SIZE.height), (236, 236, 236))
    draw = ImageDraw.Draw(image)
    for i in range(40):
        y = 30 + i * 16
        draw.text((20, y), f"row {i} of window {step}: " + "x" * rng.randint(5, 60), fill=(0, 0, 0))
    draw.rectangle((700, 100, 1200, 600), fill=(rng.randint(0, 255), 90, 160))
    data = encode_image(image, "jpeg", 80)
    return Observation(image, data, "image/jpeg", phash_hex(image), SIZE, Size(1920, 1080), (0, 0))


def bill(
    request: LLMRequest, anthropic: PromptCache, openai: PromptCache
) -> tuple[dict[str, Any], int]:
    """One request's cost under both providers' rules, and the screenshots it carried."""
    blocks = wire_blocks(build_wire(request, MODEL).params)
    cost = anthropic.cost(blocks)
    images = sum(isinstance(p, ImagePart) for m in request.messages for p in m.content)
    row = {
        "effective": round(cost.effective, 1),
        "openai_effective": round(openai.cost(blocks).effective, 1),
        "prompt_tokens": cost.input + cost.cache_read + cost.cache_write,
        "cache_read": cost.cache_read,
        "cache_write": cost.cache_write,
    }
    return row, images


async def run_policy(
    settings: Settings, steps: int, chunk: int | None = None
) -> tuple[list[dict[str, Any]], ContextPolicy, list[int]]:
    """Per step (and the wrap-up as the last row) what the requests cost; the policy; the
    tokens of each cache write no later request read."""
    model = ScriptedModel()
    brain = Brain(model, screen=None, settings=settings, bus=EventBus())  # type: ignore[arg-type]
    if chunk is not None and brain.policy.kind == "stable":
        brain.policy = dataclasses.replace(brain.policy, chunk=chunk)
    tools = build_registry(settings).specs("anthropic")
    state = RunState(task="file the 50 invoices in the inbox", task_id="t-bench")
    anthropic = PromptCache.for_model(MODEL, "anthropic")
    openai = PromptCache.for_model("gpt-4.1", "openai")
    rows = []
    for step in range(1, steps + 1):
        todos = "(none)" if step < 20 else "- [ ] invoice 37 needs a second look"
        await think_step(brain, state, screenshot(step), tools, steps, todos)
        row, images = bill(model.requests[-1], anthropic, openai)
        rows.append({"step": step, **row, "screenshots": images})
    state.step += 1
    ctx = context_for(state, brain, screenshot(steps + 1), steps, todos)
    await brain.wrap_up(ctx, f"{steps} steps")
    row, images = bill(model.requests[-1], anthropic, openai)
    rows.append({"step": "wrap_up", **row, "screenshots": images})
    return rows, brain.policy, anthropic.unread_writes()


async def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--keep", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=None, help="C (default: the profile's)")
    args = parser.parse_args()
    common = {"keep_screenshots": args.keep, "model": MODEL, "long_term_memory": False}
    data_dir = Path("/tmp/jarvis-bench-context")
    sliding = load_settings(data_dir, context_policy="sliding", **common)
    old, _, _ = await run_policy(sliding, args.steps)
    stable = load_settings(data_dir, context_policy="stable", **common)
    new, policy, unread = await run_policy(stable, args.steps, args.chunk)
    old_total = sum(r["effective"] for r in old)
    new_total = sum(r["effective"] for r in new)
    ratio = new_total / old_total
    seen = [r["screenshots"] for r in new[args.keep - 1 : args.steps]]
    last = new[args.steps - 1]["effective"]
    growth = last / new[4]["effective"] if args.steps >= 5 else 0.0
    worst = max(r["effective"] for r in new[4:-1]) / new[4]["effective"] if args.steps >= 5 else 0.0
    openai_ratio = sum(r["openai_effective"] for r in new) / sum(r["openai_effective"] for r in old)
    return {
        "model": MODEL,
        "steps": args.steps,
        "keep": args.keep,
        "chunk": policy.chunk,
        "per_step": [
            {
                "step": o["step"],
                "old": o["effective"],
                "new": n["effective"],
                "old_screenshots": o["screenshots"],
                "new_screenshots": n["screenshots"],
                "new_cache_read": n["cache_read"],
                "new_cache_write": n["cache_write"],
            }
            for o, n in zip(old, new, strict=True)
        ],
        "old_total": round(old_total, 1),
        "new_total": round(new_total, 1),
        "ratio": round(ratio, 4),
        "openai_ratio": round(openai_ratio, 4),
        "min_screenshots_from_step_k": min(seen) if seen else 0,
        "unread_cache_writes": len(unread),
        "unread_cache_write_tokens": sum(unread),
        "step50_over_step5": round(growth, 4),
        "max_step_over_step5": round(worst, 4),
        "ok": {
            "ratio": ratio <= RATIO_TARGET,
            "screenshots": bool(seen) and min(seen) >= args.keep,
            "growth": growth <= GROWTH_TARGET,
            "no_unread_writes": not unread,
        },
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
