"""More endings of the loop on a real display: the tool-call bound, a cancel while a tool
types, and the cost of a run counting every model call (steps, verification, skill)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from jarvis.agent.factory import build_agent
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, EventRecorder, TaskFinished, ToolCallStarted
from jarvis.memory.short_term import StepRecord
from tests.agent_harness import agent_settings, model_point, run_agent, step_files
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")


async def test_tool_call_bound_warns_then_wraps_up_without_tools(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, max_tool_calls=4, wrap_up_margin=1)
    moves = [call("mouse_move", x=100 + i, y=120) for i in range(5)]
    fake_model.script(
        Reply(text="Thought: two moves", tool_calls=moves[:2]),
        Reply(text="Thought: three more", tool_calls=moves[2:]),
        Reply(text="I moved the mouse four times and stopped at the limit."),
    )
    outcome, events = await run_agent(settings, "move the mouse around")

    assert outcome.status == "failed" and outcome.tool_calls == 4
    assert "limit of 4 tool calls" in outcome.summary and "stopped at the limit" in outcome.summary
    assert "tool call(s) left" not in fake_model.requests[0].all_text()
    assert "Only 2 tool call(s) left" in fake_model.requests[1].all_text()
    wrap_up = fake_model.requests[2]
    assert wrap_up.tool_names == [] and wrap_up.body.get("stream") is True
    assert "limit of 4 tool calls" in wrap_up.all_text()
    # the fifth call was not run; the model is told why
    assert [e.tool_name for e in events.of(ToolCallStarted)] == ["mouse_move"] * 4
    second = StepRecord.model_validate_json(step_files(settings)[1].read_text())
    assert [r.ok for r in second.results] == [True, True, False]
    assert second.results[2].error is not None and second.results[2].error.code == -32006


def lets_go(lock: threading.RLock) -> bool:
    """True once ``lock`` is free (the input action holding it has ended)."""
    if not lock.acquire(timeout=5.0):
        return False
    lock.release()
    return True


async def test_cancel_stops_a_tool_that_is_typing(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, type_method="xdotool")
    box = model_point(tkapp, "box", settings)
    long_text = "a" * 4000  # about ten seconds of xdotool typing
    fake_model.script(
        Reply(
            text="Thought: type a lot",
            tool_calls=[call("click", x=box[0], y=box[1]), call("type", text=long_text)],
        )
    )
    bus = EventBus()
    recorder = EventRecorder(bus)
    async with build_agent(settings, bus, where=XDisplay.from_env()) as agent:
        run = asyncio.create_task(agent.run("type forever"))
        while not tkapp.entry_text():  # typing has begun
            assert not run.done()
            await asyncio.sleep(0.02)
        agent.cancel()
        outcome = await asyncio.wait_for(run, timeout=3)
        # the typing thread lets go of the input within one chunk
        input_ = agent.context_factory("probe").input
        assert await asyncio.to_thread(lets_go, input_._lock), "the typing did not stop"  # type: ignore[union-attr]
    tkapp.sync()
    typed = tkapp.entry_text()
    assert outcome.status == "cancelled"
    assert recorder.of(TaskFinished)[-1].status == "cancelled"
    assert 0 < len(typed) < len(long_text) and set(typed) == {"a"}
    tkapp.sync()
    assert tkapp.entry_text() == typed  # nothing more arrives
    # the interrupted step is on disk, with the calls it was making
    [path] = step_files(settings)
    record = StepRecord.model_validate_json(path.read_text())
    assert record.result == "failed" and "(cancelled here)" in record.thought
    assert [c.name for c in record.tool_calls] == ["click", "type"]


async def test_cancel_stops_settle_waiting_on_a_busy_screen(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=20_000)
    fake_model.script(Reply(text="Thought: move", tool_calls=[call("mouse_move", x=50, y=50)]))
    tkapp.animate(30_000)  # the screen keeps changing: settle would wait for its ceiling
    async with build_agent(settings, EventBus(), where=XDisplay.from_env()) as agent:
        settling, settled = threading.Event(), threading.Event()
        wait = agent.settler.wait

        def watched(stop: threading.Event | None = None):  # type: ignore[no-untyped-def]
            settling.set()
            try:
                return wait(stop)
            finally:
                settled.set()

        agent.settler.wait = watched  # type: ignore[method-assign]
        run = asyncio.create_task(agent.run("move and wait"))
        while not settling.is_set():
            await asyncio.sleep(0.01)
        agent.cancel()
        outcome = await asyncio.wait_for(run, timeout=3)
        # the settle thread itself ends, long before its 20 s ceiling
        assert await asyncio.to_thread(settled.wait, 3.0), "settle did not stop"
    assert outcome.status == "cancelled"


async def test_cost_counts_verification_and_skill_calls(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    done = Reply(
        text="Thought: done",
        tool_calls=[call("finished", summary="nothing to do")],
        input_tokens=100,
        output_tokens=10,
    )
    verdict = Reply(text='{"done": true, "reason": "ok"}', input_tokens=1000, output_tokens=20)
    fake_model.script(done, verdict)
    outcome, _ = await run_agent(settings, "do nothing")
    assert outcome.status == "finished"
    assert outcome.usage.input_tokens == 1100 and outcome.usage.output_tokens == 30
    assert outcome.cost_usd is not None and outcome.cost_usd > 0


async def test_calls_after_a_screenshot_wait_for_the_new_picture(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    fake_model.script(
        Reply(
            text="Thought: move, look, then click",
            tool_calls=[
                call("mouse_move", x=200, y=200),
                call("screenshot"),
                call("click", x=210, y=210),
            ],
        ),
        Reply(text="Thought: ask", tool_calls=[call("call_user", message="what now?")]),
    )
    mark = tkapp.mark()
    outcome, events = await run_agent(settings, "look around")
    assert outcome.status == "needs_user"
    assert [e.tool_name for e in events.of(ToolCallStarted)] == [
        "mouse_move", "screenshot", "call_user",
    ]  # fmt: skip
    tkapp.sync()
    assert tkapp.events("click", since=mark) == []  # the click decided blind was not made
    first = StepRecord.model_validate_json(step_files(settings)[0].read_text())
    assert [r.ok for r in first.results] == [True, True, False]
    assert "decide again with the new one" in fake_model.requests[1].all_text()
    assert fake_model.requests[1].image_count() >= 1
