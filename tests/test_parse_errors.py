"""A call that cannot be read is answered with the reason, through the agent loop.

A grammar reply that does not parse (an off-screen point, no Action line), a text-mode
block whose JSON is broken before its name, and an action of Claude's computer tool that
Jarvis cannot run all become calls with ``parse_error`` set, under a name no tool has
(``unknown``, ``computer``). The model must read why (the parse error's reason) in its
next request, never "unknown tool"; the task goes on and finishes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.llm.types import ToolCall
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INVALID_PARAMS
from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, Reply, call, text_call
from tests.tkdriver import TkApp

VERIFIED = Reply(text='{"done": true, "reason": "the model was told why"}')


async def test_the_registry_answers_an_unreadable_call_with_its_reason(tmp_path: Path) -> None:
    from jarvis.tools.computer import build_registry

    settings = Settings(data_dir=tmp_path)
    registry: ToolRegistry = build_registry(settings)
    ctx = ToolContext(task_id="t1", settings=settings, data_dir=tmp_path)
    why = "(5000, 300) is outside the 1316x728 picture: x must be in 0..1315 and y in 0..727"
    for name in ("unknown", "computer", "click"):
        result = await registry.execute_call(ToolCall(id="c1", name=name, parse_error=why), ctx)
        assert result.error is not None and result.error.code == INVALID_PARAMS
        assert why in result.error.message and "unknown tool" not in result.error.message
    plain = await registry.execute_call(ToolCall(id="c2", name="teleport"), ctx)
    assert plain.error is not None and "unknown tool 'teleport'" in plain.error.message


async def run_and_read(
    fake: FakeModel, settings: Settings, replies: list[Reply]
) -> tuple[str, list]:
    fake.script(*replies, VERIFIED)
    outcome, _ = await run_agent(settings, "do the thing")
    assert outcome.status == "finished", outcome.summary
    return json.dumps(fake.requests[1].body), fake.requests


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        # UI-TARS-1.5 answers pixels of its 1316x728 image: 5000 is far off it
        (
            "Thought: click it.\nAction: click(start_box='(5000,300)')",
            "(5000, 300) is outside the 1316x728 picture: x must be in 0..1315 and y in 0..727",
        ),
        ("Thought: I am not sure what to do.", "the reply has no 'Action:' line"),
    ],
)
async def test_a_grammar_parse_error_reaches_the_model_with_its_reason(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch, reply: str, reason: str
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai",
        openai_model="ByteDance-Seed/UI-TARS-1.5-7B",
    )  # fmt: skip
    after, _ = await run_and_read(
        fake_model,
        settings,
        [Reply(text=reply), Reply(text="Thought: done.\nAction: finished(content='told why')")],
    )
    assert reason in after
    assert "the call could not be read" in after
    assert "unknown tool" not in after
    assert [e for e in tkapp.events("click")] == []  # nothing was clicked


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_a_text_mode_block_broken_before_its_name_reaches_the_model_with_its_reason(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, tool_mode="text")
    after, _ = await run_and_read(
        fake_model,
        settings,
        [
            Reply(text="Thought: click.\n<tool_call>click(1, 2)</tool_call>"),
            Reply(text="Thought: done.\n" + text_call("finished", summary="told why")),
        ],
    )
    assert "tool call is not valid JSON" in after and "unknown tool" not in after


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_an_unmappable_claude_computer_action_reaches_the_model_with_its_reason(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, native_computer_tool=True)
    after, _ = await run_and_read(
        fake_model,
        settings,
        [
            Reply(tool_calls=[call("computer", action="left_click", coordinate=[10])]),
            Reply(tool_calls=[call("finished", summary="told why")]),
        ],
    )
    assert "coordinate must be [x, y], got [10]" in after and "unknown tool" not in after
