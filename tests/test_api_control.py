"""Driving the daemon through the API: a message becomes a task run with its steps on
record, a cancel stops a task while the model is still streaming, an answer to a
``call_user`` question reaches the task through the inbox and the router; and the model's
API key is in no response at all."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agent_harness import agent_settings
from tests.api_harness import (
    Received,
    is_router,
    is_step,
    listen,
    moves,
    scripted,
    serving_api,
    until,
)
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

pytestmark = pytest.mark.usefixtures("xserver")
SENTINEL = "sk-ant-api03-SENTINEL-never-in-a-response-0123456789"


def status(api: Any, todo_id: str) -> str | None:
    todo = api.gateway.todos.get(todo_id)
    return todo.status if todo is not None else None


def settings_for(tmp_path: Path, fake_model: FakeModel, monkeypatch: Any) -> Any:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL)
    return settings


async def test_a_message_runs_as_a_task_and_no_response_carries_the_key(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    chatty = Reply(
        text=f"Thought: my key is {SENTINEL}.", tool_calls=[call("mouse_move", x=50, y=60)]
    )
    fake_model.set_default(scripted([chatty, moves(1)]))
    bodies: list[bytes] = []

    async def keep(response: httpx.Response) -> None:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return  # read by the test itself, below
        await response.aread()
        bodies.append(response.content + str(response.headers).encode())

    settings = settings_for(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api, api.client(event_hooks={"response": [keep]}) as client:
        for bad in ({"text": ""}, {"text": "x", "channel": "email"}, {"channel": "web"},
                    {"text": "x", "priority": "urgent!"}):  # fmt: skip
            assert (await client.post("/api/messages", json=bad)).status_code == 422, bad
        seen = Received()
        stream = asyncio.create_task(listen(client, seen))
        await seen.connected.wait()
        posted = await client.post("/api/messages", json={"text": "point at it", "channel": "web"})
        assert posted.status_code == 201 and posted.json()["channel"] == "web"
        await asyncio.wait_for(stream, 60)
        await until(lambda: api.journal("T001")[-1]["kind"] == "reply_ready")
        [todo] = (await client.get("/api/todos")).json()["todos"]
        assert (todo["id"], todo["status"], todo["source"]) == ("T001", "completed", "web")
        task = (await client.get("/api/tasks/T001")).json()
        assert task["run"]["status"] == "completed" and task["run"]["channel"] == "web"
        assert task["verification"] == {"done": True, "reason": "looks done"}
        first, _, last = task["steps"]
        assert "[REDACTED]" in first["thought"]
        [move] = first["tool_calls"]
        assert (move["tool_name"], move["state"], move["arguments"]) == (
            "mouse_move",
            "ok",
            {"x": 50, "y": 60},
        )
        assert move["latency_ms"] > 0 and first["finished"] and first["screenshot"]
        assert [c["tool_name"] for c in last["tool_calls"]] == ["finished"]
        assert [e["seq"] for e in task["events"]] == [r["seq"] for r in api.journal("T001")]
        lean = (await client.get("/api/tasks/T001?events=false")).json()
        assert lean["events"] is None and len(lean["steps"]) == 3
        shot = await client.get(f"/api/screenshots/{first['screenshot']}")
        assert shot.status_code == 200 and shot.headers["content-type"].startswith("image/")
        latest = await client.get("/api/screen/latest")
        assert latest.status_code == 200 and latest.content[:4] in (b"\xff\xd8\xff\xe0",
                                                                    b"\xff\xd8\xff\xdb",
                                                                    b"\x89PNG")  # fmt: skip
        [run] = (await client.get("/api/runs")).json()["runs"]
        assert run["task_id"] == "T001" and run["tokens"]["input_tokens"] > 0
        assert (await client.get("/api/tasks/T404")).status_code == 404
        assert (await client.get("/api/tasks/..%2F..%2Fconfig")).status_code == 404
        health = (await client.get("/api/health")).json()
        assert health["last_seq"] == api.journal()[-1]["seq"] and health["running"] is None
        for path in ("/docs", "/openapi.json"):
            assert (await client.get(path)).status_code == 200
    streamed = "".join(str(d) for _, _, d in seen.events)
    assert SENTINEL not in streamed and "[REDACTED]" in streamed
    assert bodies and all(SENTINEL.encode() not in body for body in bodies)
    for path in [*(api.data_dir / "runs").rglob("*"), *(api.data_dir / "logs").rglob("*")]:
        if path.is_file():  # the journal, run.json and the logs
            assert SENTINEL not in path.read_text(errors="replace"), path


async def test_cancel_stops_a_task_while_the_model_is_still_streaming(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    hold = threading.Event()
    fake_model.set_default(
        scripted([Reply(text="Thought: " + "hmm " * 50, hold=hold, hold_after=4)])
    )
    try:
        async with (
            serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api,
            api.client() as client,
        ):
            await client.post("/api/messages", json={"text": "think forever"})
            await until(lambda: any(map(is_step, fake_model.requests)), 60)
            cancelled = await client.post("/api/tasks/T001/cancel")
            assert cancelled.status_code == 202
            answer = cancelled.json()  # the task, in the shape of GET /api/todos
            assert (answer["id"], answer["status"]) == ("T001", "cancelled")
            assert answer["title"] and "task_id" not in answer
            await until(lambda: any(r["kind"] == "task_finished" for r in api.journal("T001")), 10)
            assert not hold.is_set()  # stopped while the model was still streaming
            [end] = [r for r in api.journal("T001") if r["kind"] == "task_finished"]
            assert end["status"] == "cancelled"
            await until(lambda: api.journal("T001")[-1]["kind"] == "reply_ready")
            [todo] = (await client.get("/api/todos")).json()["todos"]
            assert todo["status"] == "cancelled"
            again = await client.post("/api/tasks/T001/cancel")
            assert again.status_code == 409 and "cancelled" in again.json()["detail"]
            assert (await client.post("/api/tasks/T777/cancel")).status_code == 404
    finally:
        hold.set()


async def test_an_answer_to_call_user_goes_through_the_inbox_to_its_task(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    def step(request: RecordedRequest) -> Reply:
        if "the red one" in request.all_text():
            return Reply(text="Thought: red it is.", tool_calls=[call("finished", summary="red")])
        return Reply(text="Thought: ask.", tool_calls=[call("call_user", message="Which file?")])

    answers = scripted([])

    def answer(request: RecordedRequest) -> Reply:
        return step(request) if is_step(request) else answers(request)

    fake_model.set_default(answer)
    async with (
        serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api,
        api.client() as client,
    ):
        await client.post("/api/messages", json={"text": "open the file", "channel": "tui"})
        await until(lambda: status(api, "T001") == "needs_user", 60)
        todo = (await client.get("/api/tasks/T001")).json()["todo"]
        assert todo["summary"] == "Which file?"
        routed_before = sum(map(is_router, fake_model.requests))
        sent = await client.post("/api/tasks/T001/answer", json={"text": "the red one"})
        assert sent.status_code == 202 and sent.json()["task_id"] == "T001"
        await until(lambda: status(api, "T001") == "completed", 60)
        assert sum(map(is_router, fake_model.requests)) == routed_before  # no model call
        [task] = api.gateway.todos.all()  # merged, not a new task
        assert "the red one" in task.description and len(task.message_ids) == 2
        assert task.summary == "red"
        late = await client.post("/api/tasks/T001/answer", json={"text": "too late"})
        assert late.status_code == 409
        assert (await client.post("/api/tasks/T404/answer", json={"text": "x"})).status_code == 404
        empty = await client.post("/api/tasks/T001/answer", json={"text": ""})
        assert empty.status_code == 422


async def test_a_call_cut_short_by_a_cancel_is_shown_cancelled_by_its_face_not_as_an_error(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    """Issue 41 point 3: the web's cancel during a ten-second ``wait`` is ``cancelled`` on
    the call (journal, API, step record, report, ``jarvis runs show``) and ``cancelled by
    web`` on the task and in its reply, never "error None" or "cancelled in todos.md"."""
    from jarvis.runs.commands import readable
    from jarvis.runs.report import report_for
    from jarvis.tui.cards import card_body, card_title
    from jarvis.tui.state import Cockpit

    fake_model.set_default(
        scripted([Reply(text="Thought: wait.", tool_calls=[call("wait", ms=10000)])])
    )
    async with (
        serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api,
        api.client() as client,
    ):
        await client.post("/api/messages", json={"text": "wait a while", "channel": "web"})
        await until(lambda: any(r["kind"] == "tool_call_started" for r in api.journal("T001")), 60)
        cancelled = await client.post("/api/tasks/T001/cancel", json={"by": "web"})
        assert cancelled.status_code == 202
        await until(lambda: api.journal("T001")[-1]["kind"] == "reply_ready", 20)
        journal = api.journal("T001")
        [finished] = [r for r in journal if r["kind"] == "tool_call_finished"]
        assert finished["cancelled"] is True and finished["ok"] is False
        assert finished["error_code"] is None
        [end] = [r for r in journal if r["kind"] == "task_finished"]
        assert (end["status"], end["stopped_by"]) == ("cancelled", "web")
        [reply] = [r for r in journal if r["kind"] == "reply_ready"]
        assert "cancelled by web" in reply["text"] and "todos.md" not in reply["text"]
        todo = (await client.get("/api/tasks/T001")).json()
        assert todo["todo"]["summary"] == "cancelled by web"
        [wait] = [c for s in todo["steps"] for c in s["tool_calls"] if c["tool_name"] == "wait"]
        assert wait["state"] == "cancelled" and wait["error_code"] is None
        shown = "\n".join(readable(journal))
        assert "wait cancelled" in shown and "error" not in shown
        report = report_for(api.data_dir, "T001").read_text()
        assert "the task was stopped during this call" in report and "error None" not in report
    cockpit = Cockpit()  # the TUI's view of the same journal
    for line in journal:
        cockpit.apply(line)
    tui_call = cockpit.runs["T001"].call(finished["call_id"])
    assert tui_call is not None and tui_call.status == "cancelled"
    assert card_title(tui_call).startswith("⊘") and "error" not in card_body(tui_call)
