"""The whole agent on a real display: Tk app on Xvfb, scripted model behind the real SDKs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jarvis.desktop.x11 import XDisplay
from jarvis.events import TaskFinished, ToolCallFinished, VerificationFinished
from jarvis.memory.short_term import StepRecord
from tests.agent_harness import (
    TEST_KEY,
    agent_settings,
    model_point,
    run_agent,
    screenshot_files,
    step_files,
)
from tests.fake_model import FakeModel, Reply, call, text_call
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")

VERIFIED = Reply(text='{"done": true, "reason": "the box shows hello and OK was pressed"}')


def hello_script(app: TkApp, settings, text_mode: bool = False) -> list[Reply]:
    box = model_point(app, "box", settings)
    ok = model_point(app, "ok", settings)
    acts = [
        ("click", {"x": box[0], "y": box[1]}),
        ("type", {"text": "hello"}),
        ("click", {"x": ok[0], "y": ok[1]}),
    ]
    done = ("finished", {"summary": "typed hello into the box and pressed OK"})
    thought = "Reflection: the app is open.\nThought: click the box, type hello, press OK."
    if text_mode:
        return [
            Reply(text=thought + "\n" + "\n".join(text_call(n, **a) for n, a in acts)),
            Reply(text="Thought: done.\n" + text_call(done[0], **done[1])),
            VERIFIED,
        ]
    return [
        Reply(text=thought, tool_calls=[call(n, **a) for n, a in acts]),
        Reply(
            text="Reflection: OK was pressed.\nThought: done.",
            tool_calls=[call(done[0], **done[1])],
        ),
        VERIFIED,
    ]


def assert_hello_run(app: TkApp, fake_model: FakeModel, settings, outcome) -> None:
    assert outcome.status == "finished", outcome.summary
    assert app.ok_pressed() == "hello"
    # the last request is the verification: a fresh screenshot, no tools
    verify = fake_model.requests[-1]
    assert verify.image_count() == 1
    assert verify.tool_names == []
    assert "type hello in the box" in verify.all_text()
    records = [StepRecord.model_validate_json(p.read_text()) for p in step_files(settings)]
    assert [r.step for r in records] == [1, 2]
    assert [c.name for c in records[0].tool_calls] == ["click", "type", "click"]
    assert all(r.ok for r in records[0].results)
    assert records[0].reflection == "the app is open."
    for record in records:
        assert record.screenshot is not None
        assert (settings.data_dir / record.screenshot.path).is_file()
        assert set(record.timings_ms) >= {"capture", "model", "act", "settle"}


TASK = "type hello in the box and press OK"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_hello_end_to_end(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch, provider: str
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, provider=provider)
    fake_model.script(*hello_script(tkapp, settings))
    outcome, events = await run_agent(settings, TASK)
    assert_hello_run(tkapp, fake_model, settings, outcome)
    assert {r.api for r in fake_model.requests} == {provider}
    first = fake_model.requests[0]
    assert first.image_count() == 1
    assert {"click", "type", "finished", "call_user"} <= set(first.tool_names)
    assert [e.ok for e in events.of(ToolCallFinished)] == [True, True, True, True]
    assert events.of(TaskFinished)[-1].status == "finished"


async def test_hello_in_text_mode(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, tool_mode="text")
    fake_model.script(*hello_script(tkapp, settings, text_mode=True))
    outcome, _ = await run_agent(settings, TASK)
    assert_hello_run(tkapp, fake_model, settings, outcome)
    assert fake_model.requests[0].tool_names == []  # no native tools in text mode
    assert "<tool_call>" in json.dumps(fake_model.requests[0].body["system"])


@pytest.mark.parametrize(
    ("provider", "tool_mode"),
    [("anthropic", "native"), ("openai", "native"), ("anthropic", "text")],
)
def test_cli_run_exit_code_and_records(
    xserver, tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch, provider, tool_mode
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    skill = "1. Click the box.\n2. Type the text.\n3. Press OK."
    fake_model.script(
        *hello_script(tkapp, settings, text_mode=tool_mode == "text"), Reply(text=skill)
    )
    env = {
        **xserver.env(),
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "OPENAI_API_KEY": TEST_KEY,
        "OPENAI_BASE_URL": fake_model.openai_base_url,
        "JARVIS_MAX_RETRIES": "0",
        "PATH": __import__("os").environ["PATH"],
    }
    flags = ["--provider", provider, "--tool-mode", tool_mode]
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis", "run", TASK, *flags, "--data-dir", str(settings.data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tkapp.ok_pressed() == "hello"
    assert {r.api for r in fake_model.requests} == {provider}
    verify = fake_model.requests[-2]  # before the skill: the verification, on a new screenshot
    assert verify.image_count() == 1 and "type hello in the box" in verify.all_text()
    before = fake_model.requests[0].body  # the screen before any action
    assert _last_image(verify.body) and _last_image(verify.body) != _last_image(before)
    assert "completed after" in proc.stdout
    assert TEST_KEY not in proc.stdout + proc.stderr
    assert len(step_files(settings)) == 2
    # the CLI runs with long-term memory: the distilled skill is kept
    skills = settings.data_dir / "memory" / "long_term" / "skills.json"
    assert "Press OK." in json.loads(skills.read_text())["memories"][0]["content"]
    assert fake_model.pending == 0
    logs = list(settings.data_dir.joinpath("logs").glob("*"))
    assert logs, "the run writes a log and an audit trail"
    for path in [*step_files(settings), *logs]:
        assert TEST_KEY not in path.read_text(errors="replace")


async def test_failed_verification_feeds_back_and_retries(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    script = hello_script(tkapp, settings)
    fake_model.script(
        Reply(text="Thought: looks done", tool_calls=[call("finished", summary="done already")]),
        Reply(text='{"done": false, "reason": "the box is still empty"}'),
        *script,
    )
    outcome, events = await run_agent(settings, TASK)
    assert outcome.status == "finished"
    assert [v.done for v in events.of(VerificationFinished)] == [False, True]
    retry_request = fake_model.requests[2]
    assert "the box is still empty" in retry_request.all_text()
    assert tkapp.ok_pressed() == "hello"


async def test_repeated_failed_verification_fails_the_task(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, max_verify_failures=1)
    claim = Reply(text="Thought: done", tool_calls=[call("finished", summary="done")])
    refuse = Reply(text='{"done": false, "reason": "nothing typed"}')
    fake_model.script(claim, refuse, claim, refuse)
    outcome, _ = await run_agent(settings, TASK)
    assert outcome.status == "failed"
    assert "nothing typed" in outcome.summary
    assert fake_model.pending == 0


async def test_call_user_needs_user(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    fake_model.script(
        Reply(
            text="Thought: I need a password", tool_calls=[call("call_user", message="password?")]
        )
    )
    outcome, _ = await run_agent(settings, "log in")
    assert outcome.status == "needs_user"
    assert outcome.summary == "password?"
    assert len(fake_model.requests) == 1


async def test_max_steps_wraps_up_without_tools(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, max_steps=3)
    fake_model.script(
        *[
            Reply(text=f"Thought: move {i}", tool_calls=[call("mouse_move", x=100 + i, y=100)])
            for i in range(3)
        ],
        Reply(text="I moved the mouse but did not finish."),
    )
    outcome, _ = await run_agent(settings, "an endless task")
    assert outcome.status == "failed"
    assert outcome.steps == 3
    assert "did not finish" in outcome.summary
    last = fake_model.requests[-1]
    assert last.tool_names == []
    assert "limit of 3 steps" in last.all_text()
    assert "step(s) left" in fake_model.requests[2].all_text()


async def test_consecutive_failures_cap(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, max_consecutive_failures=3)
    fake_model.script(
        Reply(text="Thought: click", tool_calls=[call("click", x=-50, y=10)]),  # past 1 %
        Reply(text="Thought: type", tool_calls=[call("type", raw='{"text": "unterminated')]),
        Reply(text="Thought: nothing to do"),
    )
    outcome, events = await run_agent(settings, "break things")
    assert outcome.status == "failed"
    assert "3 failed steps in a row" in outcome.summary
    errors = [e.error_code for e in events.of(ToolCallFinished)]
    assert errors == [-32602, -32602]
    # the model saw its error and could fix it
    second = fake_model.requests[1].all_text()
    assert "x" in second and "-32602" in second


async def test_stall_detector_warns_then_stops(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    same = Reply(text="Thought: move", tool_calls=[call("mouse_move", x=640, y=500)])
    fake_model.script(same, same, same)
    outcome, _ = await run_agent(settings, "move the mouse forever")
    assert outcome.status == "failed"
    assert "stuck" in outcome.summary
    assert "repeated the same action" in fake_model.requests[2].all_text()
    # the screen did not change: three records share one stored screenshot
    records = [json.loads(p.read_text()) for p in step_files(settings)]
    assert len({r["screenshot"]["path"] for r in records}) == 1
    assert len(screenshot_files(settings)) == 1


async def test_cancel_during_stream(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    import asyncio

    from jarvis.agent.factory import build_agent
    from jarvis.events import EventBus, EventRecorder, ModelTextDelta

    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    fake_model.script(Reply(text="thinking " * 200, text_chunk=4, delay_s=0.05))
    bus = EventBus()
    recorder = EventRecorder(bus)
    async with build_agent(settings, bus, where=XDisplay.from_env()) as agent:
        run = asyncio.create_task(agent.run("slow thinking"))
        while not recorder.of(ModelTextDelta):
            await asyncio.sleep(0.01)
        agent.cancel()
        outcome = await asyncio.wait_for(run, timeout=5)
    assert outcome.status == "cancelled"
    assert recorder.of(TaskFinished)[-1].status == "cancelled"
    streamed = "".join(e.text for e in recorder.of(ModelTextDelta))
    assert len(streamed) < len("thinking " * 200)


def _last_image(body: dict) -> str:
    """The base64 data of the last image in a request body (either API's shape)."""
    found = re.findall(r'"(?:data|url)": "(?:data:image/[a-z]+;base64,)?([A-Za-z0-9+/=]{200,})"',
                       json.dumps(body))  # fmt: skip
    return found[-1] if found else ""
