"""A reply cut off at max_tokens in the middle of a tool call, through the real agent on
Xvfb and the real SDKs: the cut call is never run, the model is told its reply was cut
off, and the next request gets room to finish."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.events import ToolCallStarted
from jarvis.memory.short_term import StepRecord
from tests.agent_harness import agent_settings, model_point, run_agent, step_files
from tests.fake_model import FakeModel, Reply, ToolUse, call, text_call
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")


@pytest.mark.parametrize(("provider", "stop"), [("anthropic", "max_tokens"), ("openai", "length")])
async def test_a_call_cut_off_by_max_tokens_is_not_run_and_the_next_reply_gets_room(
    tkapp: TkApp,
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    stop: str,
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, provider=provider)
    x, y = model_point(tkapp, "box", settings)
    cut = ToolUse(name="type", raw='{"text": "Grüße and the rest of the sent')
    fake_model.script(
        Reply(
            text="Thought: click the box and type",
            tool_calls=[call("click", x=x, y=y), cut],
            stop_reason=stop,
            omit_message_stop=True,  # as endpoints do after a max_tokens stop
        ),
        Reply(text="Thought: type it whole", tool_calls=[call("type", text="hello")]),
        Reply(text="Thought: ask", tool_calls=[call("call_user", message="done?")]),
    )
    outcome, events = await run_agent(settings, "type a greeting into the box")

    assert outcome.status == "needs_user", outcome.summary
    assert tkapp.entry_text() == "hello"  # nothing of the cut call arrived
    assert [e.tool_name for e in events.of(ToolCallStarted)] == ["click", "type", "call_user"]
    limits = [
        r.body.get("max_tokens") or r.body.get("max_completion_tokens") for r in fake_model.requests
    ]
    assert limits == [4096, 8192, 4096]  # room once, then back to the setting
    told = fake_model.requests[1].all_text()
    assert "cut off at the output limit of 4096 tokens" in told
    assert "the `type` call, which was not run" in told and "up to 8192 tokens" in told
    assert fake_model.requests[2].all_text().count("Your last reply was cut off") == 1  # as sent
    first = StepRecord.model_validate_json(step_files(settings)[0].read_text())
    assert [r.ok for r in first.results] == [True, False]
    error = first.results[1].error
    assert error is not None and "cut off" in error.message and "not run" in error.message


async def test_a_text_mode_call_cut_off_by_max_tokens_is_not_run_either(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text tool mode: the limit cuts a ``<tool_call>`` block; the same rule holds."""
    settings = agent_settings(tmp_path, fake_model, monkeypatch, tool_mode="text")
    x, y = model_point(tkapp, "box", settings)
    cut_block = '<tool_call>{"name": "type", "arguments": {"text": "Grüße and the re'
    fake_model.script(
        Reply(
            text=f"Thought: click and type.\n{text_call('click', x=x, y=y)}\n{cut_block}",
            stop_reason="max_tokens",
        ),
        Reply(text=f"Thought: again.\n{text_call('type', text='hello')}"),
        Reply(text=f"Thought: ask.\n{text_call('call_user', message='done?')}"),
    )
    outcome, events = await run_agent(settings, "type a greeting into the box")

    assert outcome.status == "needs_user", outcome.summary
    assert tkapp.entry_text() == "hello"
    assert [e.tool_name for e in events.of(ToolCallStarted)] == ["click", "type", "call_user"]
    assert [r.body["max_tokens"] for r in fake_model.requests] == [4096, 8192, 4096]
    assert "cut off at the output limit of 4096 tokens" in fake_model.requests[1].all_text()
