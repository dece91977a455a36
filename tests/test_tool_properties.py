"""What a tool needs beyond its arguments is a property of the tool (DESIGN section 3):
only a call that moves input is followed by a settle wait, whatever its name or origin
(zoom, MCP, skill, preset); a call that was not run carries one code wherever it was
stopped; a timed-out call says it may still have happened. On Xvfb with the Tk app, the
MCP demo server over stdio and the real agent against the scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.cerebellum import Cerebellum
from jarvis.config import load_settings
from jarvis.desktop.input import Input
from jarvis.desktop.screen import Screen
from jarvis.desktop.settle import Settler, SettleResult
from jarvis.desktop.x11 import XDisplay
from jarvis.events import ApprovalRequested, EventBus
from jarvis.llm.types import ToolCall
from jarvis.memory.short_term import StepRecord
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.mcp_bridge import McpManager
from jarvis.tools.presets import Preset
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import MAY_HAVE_HAPPENED, NOT_RUN, TIMEOUT, ToolResult
from jarvis.tools.skills import SkillManager
from jarvis.tools.zoom import register_zoom_tool
from tests.agent_harness import agent_settings, model_point, run_agent, step_files
from tests.fake_model import FakeModel, Reply, ToolUse, call
from tests.mcp_fixtures import stdio_entry, write_mcp_json
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")

SKILL = """
from pydantic import BaseModel, ConfigDict, Field
from jarvis.tools.skills import skill_tool

class WordArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    word: str = Field(max_length=50, description="a word")

@skill_tool()
def count_letters(args: WordArgs, ctx) -> dict:
    "Count the letters of a word."
    return {"letters": len(args.word)}
"""

LOOK = Preset.model_validate(
    {
        "name": "pause_and_look",
        "description": "Wait a moment, then wait again.",
        "steps": [{"tool": "wait", "args": {"ms": 10}}, {"tool": "wait", "args": {"ms": 10}}],
    }
)
GREET = Preset.model_validate(
    {
        "name": "greet",
        "description": "Type a greeting at the keyboard focus.",
        "steps": [{"tool": "type", "args": {"text": "hi"}}],
    }
)


class CountedSettle:
    """The agent's settle (the real Settler on the display), counting how often it ran."""

    def __init__(self, settler: Settler) -> None:
        self.settler = settler
        self.calls = 0

    async def __call__(self) -> SettleResult:
        self.calls += 1
        return await asyncio.to_thread(self.settler.wait)


@dataclass
class Rig:
    registry: ToolRegistry
    ctx: ToolContext
    cerebellum: Cerebellum
    settle: CountedSettle

    async def act(self, name: str, args: dict[str, Any]) -> tuple[ToolResult, int]:
        """The call's result and how many settle waits followed it."""
        before = self.settle.calls
        action = await self.cerebellum.act(
            [ToolCall(id=f"c-{name}", name=name, arguments=args)], self.ctx, self.settle
        )
        (result,) = action.results
        return result, self.settle.calls - before


@pytest.fixture
async def rig(tmp_path: Path, tkapp: TkApp) -> AsyncIterator[Rig]:
    data = tmp_path / "data"
    write_mcp_json(data, {"demo": stdio_entry(tmp_path / "starts.txt", timeout=1.0)})
    (data / "skills").mkdir(parents=True)
    (data / "skills" / "letters_skill.py").write_text(SKILL)
    settings = load_settings(data, toolbox={"mcp": {"health_interval_s": 0.5}})
    registry = build_registry(settings, [LOOK, GREET])
    register_zoom_tool(registry)
    skills = SkillManager(settings, registry)
    skills.scan()
    assert skills.problems == [] and "count_letters" in registry
    with Screen.from_settings(settings) as screen:
        ctx = ToolContext.for_task(
            settings, "t-props", screen=screen, input=Input(display=XDisplay.from_env())
        )
        settle = CountedSettle(Settler(screen, settings))
        async with McpManager.running(settings) as manager:
            manager.attach(registry)
            assert await manager.wait_ready(20) == {"demo": True}
            yield Rig(registry, ctx, Cerebellum(registry, "anthropic"), settle)


async def test_only_calls_that_move_input_are_followed_by_a_settle(rig: Rig, tkapp: TkApp) -> None:
    still = {
        "zoom": {"x1": 10, "y1": 10, "x2": 110, "y2": 60},
        "demo__echo": {"text": "hello"},
        "count_letters": {"word": "jarvis"},
        "pause_and_look": {},
    }
    for name, args in still.items():
        result, settles = await rig.act(name, args)
        assert result.ok, (name, result.error)
        assert settles == 0, f"{name} moves no input but was followed by a settle"
    assert (await rig.act("demo__echo", {"text": "x"}))[0].data["content"][0]["text"] == "echo: x"

    tkapp.focus("box")
    typed, settles = await rig.act("greet", {})
    assert typed.ok, typed.error
    assert settles == 1  # the preset types, so the screen settles after it
    tkapp.sync()
    assert tkapp.entry_text() == "hi"
    assert (await rig.act("mouse_move", {"x": 600, "y": 300}))[1] == 1


async def test_calls_cut_off_by_their_step_are_not_run_with_one_code(rig: Rig) -> None:
    move = ToolCall(id="m", name="mouse_move", arguments={"x": 600, "y": 300})
    for first, why in (
        (ToolCall(id="bad", name="mouse_move", arguments={"x": -50, "y": 1}), "failed"),
        (ToolCall(id="shot", name="screenshot"), "screenshot"),
        (ToolCall(id="ask", name="call_user", arguments={"message": "which one?"}), "ended"),
    ):
        action = await rig.cerebellum.act([first, move], rig.ctx, rig.settle)
        skipped = action.results[1]
        assert skipped.error is not None and skipped.error.code == NOT_RUN, why
        assert skipped.error.message.startswith("not run: ") and why in skipped.error.message
        assert action.executed == 1
        rig.ctx.take_control()


async def test_a_call_a_person_denies_is_not_run_with_the_same_code(rig: Rig) -> None:
    bus = EventBus()
    store = ApprovalStore(bus, attended=True)
    rig.registry.approvals = ApprovalGate(rig.ctx.settings.safety, store)
    ctx = ToolContext.for_task(rig.ctx.settings, "t-deny", screen=rig.ctx.screen, bus=bus)
    asked: asyncio.Queue[str] = asyncio.Queue()
    bus.subscribe(lambda e: asked.put_nowait(getattr(e, "approval_id", "")), ApprovalRequested)
    pending = asyncio.create_task(rig.registry.execute("hotkey", {"keys": "alt+f4"}, ctx))
    store.resolve(await asyncio.wait_for(asked.get(), 10), "deny", "not now")
    denied = await pending
    assert denied.error is not None and denied.error.code == NOT_RUN
    assert denied.error.message.startswith("not run: the user denied it")

    unattended = ApprovalGate(rig.ctx.settings.safety, ApprovalStore(EventBus()))
    rig.registry.approvals = unattended  # nobody can answer: refused at once
    refused = await rig.registry.execute("hotkey", {"keys": "alt+f4"}, ctx)
    assert refused.error is not None and refused.error.code == NOT_RUN
    assert refused.error.message.count("not run:") == 1


async def test_calls_the_agent_did_not_run_carry_one_code(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held with nobody to approve, after a failed call, cut off by the output limit and
    over the task's tool-call limit: four ways, one code, all said as "not run"."""
    settings = agent_settings(tmp_path, fake_model, monkeypatch, max_tool_calls=4)
    x, y = model_point(tkapp, "box", settings)
    fake_model.script(
        Reply(
            text="Thought: close it, then type",
            tool_calls=[
                call("mouse_move", x=x, y=y),
                call("hotkey", keys="alt+f4"),
                call("mouse_move", x=x + 5, y=y),
                ToolUse(name="type", raw='{"text": "and the rest of'),
            ],
            stop_reason="max_tokens",
            omit_message_stop=True,
        ),
        Reply(
            text="Thought: move three times",
            tool_calls=[call("mouse_move", x=x, y=y + d) for d in (3, 6, 9)],
        ),
        Reply(text="I stopped at the limit."),
    )
    outcome, _ = await run_agent(settings, "close the window")
    assert outcome.status == "failed" and outcome.tool_calls == 4
    first, second = (StepRecord.model_validate_json(p.read_text()) for p in step_files(settings))
    assert [r.ok for r in first.results] == [True, False, False, False]
    assert [r.ok for r in second.results] == [True, True, False]
    skipped = first.results[1:] + second.results[2:]
    reasons = ["no one can approve it", "an earlier call (hotkey) failed", "cut off", "limit"]
    for result, reason in zip(skipped, reasons, strict=True):
        assert result.error is not None and result.error.code == NOT_RUN, reason
        assert result.error.message.startswith("not run: ") and reason in result.error.message


async def test_a_timed_out_call_says_it_may_still_have_happened(rig: Rig) -> None:
    """The demo server's `hang` got the call and never answers: whatever it does may have
    happened, and the model is told so rather than that it failed."""
    hung, settles = await rig.act("demo__hang", {})
    assert hung.error is not None and hung.error.code == TIMEOUT
    assert "within 1s" in hung.error.message and MAY_HAVE_HAPPENED in hung.error.message
    assert settles == 0
