"""A task that runs more than once keeps every run: a ``call_user`` task answered through
the API has both runs' steps in its report, its tokens and cost are the sum of both runs,
the answer shows in the thread (the API's journal, the TUI's state, the report) and the
title stays the task's own. A task cancelled while the model streams counts the tokens the
provider had already reported. The real daemon, API, agent and journal; only the model is
replaced."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from jarvis.cli import main
from jarvis.runs.reader import find_run, list_runs
from jarvis.runs.report import report_for
from jarvis.runs.run_info import RunInfo
from jarvis.runs.step_file import load_steps
from jarvis.tui.state import Cockpit
from jarvis.tui.task_runs import Note
from jarvis.usage import Usage
from tests.agent_harness import agent_settings
from tests.api_harness import NEW_TASK, is_router, is_skill, is_step, is_verify, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

pytestmark = pytest.mark.usefixtures("xserver")
STEP, VERIFY, SKILL = (1000, 50), (200, 20), (100, 10)
"""Input and output tokens the scripted model reports for each kind of call."""


def status(api: Any, todo_id: str) -> str | None:
    todo = api.gateway.todos.get(todo_id)
    return todo.status if todo is not None else None


def answering(request: RecordedRequest) -> Reply:
    if is_router(request):
        return NEW_TASK
    if is_verify(request):
        return Reply(text='{"done": true, "reason": "red is open"}', input_tokens=VERIFY[0],
                     output_tokens=VERIFY[1])  # fmt: skip
    if is_skill(request):
        return Reply(text="1. Open it.", input_tokens=SKILL[0], output_tokens=SKILL[1])
    if "the red one" in request.all_text():
        reply = Reply(text="Thought: red it is.", tool_calls=[call("finished", summary="red")])
    else:
        reply = Reply(text="Thought: ask.", tool_calls=[call("call_user", message="Which file?")])
    reply.input_tokens, reply.output_tokens = STEP
    return reply


def spent(requests: list[RecordedRequest]) -> Usage:
    """What the model reported for every call of the task (all but the router's)."""
    total = Usage()
    for request in requests:
        kind = VERIFY if is_verify(request) else SKILL if is_skill(request) else STEP
        if not is_router(request):
            total = total + Usage(input_tokens=kind[0], output_tokens=kind[1])
    return total


async def test_an_answered_task_keeps_both_runs_and_counts_them_all(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any, capsys: pytest.CaptureFixture
) -> None:
    fake_model.set_default(answering)
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    async with serving_api(settings) as api, api.client() as client:
        await client.post("/api/messages", json={"text": "open the file", "channel": "tui"})
        await until(lambda: status(api, "T001") == "needs_user", 60)
        first = RunInfo.load(find_run(api.data_dir, "T001"))  # type: ignore[arg-type]
        sent = await client.post("/api/tasks/T001/answer", json={"text": "the red one"})
        assert sent.status_code == 202
        await until(lambda: status(api, "T001") == "completed", 60)
        await until(lambda: api.journal("T001")[-1]["kind"] == "reply_ready", 10)
        view = (await client.get("/api/tasks/T001")).json()
        lines = api.journal("T001")
        todo = api.gateway.todos.get("T001")
    assert todo is not None and todo.title == "open the file"  # the title stays its own

    folder = find_run(api.data_dir, "T001")
    assert folder is not None
    info = RunInfo.load(folder)
    assert [p.run for p in info.runs] == [1, 2] and info.task == "open the file"
    one, two = info.runs
    assert (one.status, one.summary, one.answer) == ("needs_user", "Which file?", "")
    assert one.tokens == first.tokens and one.cost_usd == first.cost_usd  # kept, not rewritten
    assert (two.status, two.summary, two.answer) == ("completed", "red", "the red one")
    assert two.tokens.input_tokens > 0 and one.tokens.input_tokens == STEP[0]
    total = spent([r for r in fake_model.requests if not is_router(r)])
    assert info.tokens == one.tokens + two.tokens == total
    assert info.cost_usd == pytest.approx(one.cost_usd + two.cost_usd)
    assert info.cost_usd > two.cost_usd > 0

    steps = load_steps(folder)  # both runs' steps are on disk, none written over
    assert [(s.run, s.step) for _, s in steps] == [(1, 1), (2, 1)]
    assert [f.name for f, _ in steps] == ["0001", "r2-0001"]

    page = report_for(api.data_dir, "T001").read_text()
    assert "<h1>open the file</h1>" in page and "Update (" not in page
    assert 'id="step-1"' in page and 'id="step-r2-1"' in page
    assert "You answered: the red one" in page
    assert f"{total.input_tokens} in · {total.output_tokens} out" in page
    assert f"${info.cost_usd:.4f}" in page

    # the thread: the API's journal and steps, and the TUI's state built from the lines
    [again] = [r for r in lines if r["kind"] == "task_started" and r.get("run") == 2]
    assert again["answer"] == "the red one"
    assert [(s["run"], s["step"]) for s in view["steps"]] == [(1, 1), (2, 1)]
    assert view["run"]["tokens"]["input_tokens"] == total.input_tokens
    end = [r for r in lines if r["kind"] == "task_finished"][-1]
    assert end["task_tokens"]["input_tokens"] == total.input_tokens
    assert end["input_tokens"] == two.tokens.input_tokens  # the event's own: this run's
    cockpit = Cockpit()
    for line in lines:
        cockpit.apply(line)
    run = cockpit.runs["T001"]
    assert run.task == "open the file"
    assert Note("run 2 started · you answered: the red one") in run.items
    assert (run.input_tokens, run.output_tokens) == (total.input_tokens, total.output_tokens)
    assert run.cost_usd == pytest.approx(info.cost_usd)

    capsys.readouterr()
    assert main(["runs", "--data-dir", str(api.data_dir)]) == 0
    [listed] = [line for line in capsys.readouterr().out.splitlines() if " T001 " in line]
    assert f"{total.input_tokens + total.output_tokens} tok ${info.cost_usd:.4f}" in listed
    assert "completed: red (verified: red is open) (2 runs)" in listed


async def test_a_task_cancelled_mid_stream_counts_the_tokens_it_used(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    hold = threading.Event()

    def model(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        return Reply(text="Thought: " + "hmm " * 50, hold=hold, hold_after=4, input_tokens=777)

    fake_model.set_default(model)
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    try:
        async with serving_api(settings) as api, api.client() as client:
            await client.post("/api/messages", json={"text": "think forever"})
            await until(lambda: any(map(is_step, fake_model.requests)), 60)
            await until(lambda: any(r["kind"] == "model_text_delta" for r in api.journal()), 30)
            assert (await client.post("/api/tasks/T001/cancel", json={"by": "web"})).is_success
            await until(lambda: any(r["kind"] == "task_finished" for r in api.journal("T001")))
            assert not hold.is_set()  # cut while the model was still streaming
            lines = api.journal("T001")
    finally:
        hold.set()
    [end] = [r for r in lines if r["kind"] == "task_finished"]
    assert (end["status"], end["stopped_by"], end["input_tokens"]) == ("cancelled", "web", 777)
    [step] = [r for r in lines if r["kind"] == "step_finished"]
    assert step["input_tokens"] == 777  # the cut step carries what it used
    [run] = list_runs(api.data_dir).runs
    assert run.tokens.input_tokens == 777 and run.ending == "cancelled by web"


MERGE_T001 = Reply(text='{"action": "merge", "task_id": "T001", "mode": "update", "text": ""}')


async def test_a_task_updated_by_a_merged_message_keeps_both_runs_and_its_title(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    """Not an answer through the API: a new message the router merges into the waiting
    task. It runs again as run 2; run 1 stays, the totals cover both, the title stays."""

    def model(request: RecordedRequest) -> Reply:
        if is_router(request):
            return MERGE_T001 if "the red one" in request.all_text() else NEW_TASK
        return answering(request)

    fake_model.set_default(model)
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    async with serving_api(settings) as api, api.client() as client:
        await client.post("/api/messages", json={"text": "open the file", "channel": "tui"})
        await until(lambda: status(api, "T001") == "needs_user", 60)
        sent = await client.post("/api/messages", json={"text": "the red one", "channel": "tui"})
        assert sent.status_code == 201
        await until(lambda: status(api, "T001") == "completed", 60)
        await until(lambda: api.journal("T001")[-1]["kind"] == "reply_ready", 10)
        todo = api.gateway.todos.get("T001")
        assert api.gateway.todos.get("T002") is None  # merged, not a task of its own
    assert todo is not None and todo.title == "open the file"
    folder = find_run(api.data_dir, "T001")
    assert folder is not None
    info = RunInfo.load(folder)
    assert info.task == "open the file" and [p.run for p in info.runs] == [1, 2]
    one, two = info.runs
    assert (one.status, two.status, two.answer) == ("needs_user", "completed", "the red one")
    total = spent([r for r in fake_model.requests if not is_router(r)])
    assert info.tokens == one.tokens + two.tokens == total
    assert info.cost_usd == pytest.approx(one.cost_usd + two.cost_usd)
    assert [f.name for f, _ in load_steps(folder)] == ["0001", "r2-0001"]
    page = report_for(api.data_dir, "T001").read_text()
    assert "<h1>open the file</h1>" in page and "Update (" not in page
