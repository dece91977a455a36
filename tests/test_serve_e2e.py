"""End to end: a file dropped into messages/drop/ becomes a task that `serve` runs on the
Tk app (click the box, type, press OK, finished, verified) and is archived with its result.

The gateway runs as the daemon does (watchdog, router loop, worker) in this process; the
desktop is the session's Xvfb and only the model is scripted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, EventRecorder, ReplyReady, TaskFinished
from jarvis.gateway.gateway import Gateway, GatewayOptions
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from tests.agent_harness import model_point
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.test_serve import archived_today, is_step, responder, serve_settings, task_of, until
from tests.tkdriver import TkApp

__all__ = ["fake_model_fixture"]

TASK = "Type hello into the box of the test app and press OK."
DROP = f"---\nsender: ada\nreply_to: ada@example.com\npriority: high\n---\n{TASK}\n"
SUMMARY = "typed hello into the box and pressed OK"


async def test_a_dropped_file_is_run_on_the_desktop_and_archived_with_its_result(
    xserver: Any, tkapp: TkApp, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    box, ok = model_point(tkapp, "box", settings), model_point(tkapp, "ok", settings)
    acts = Reply(
        text="Reflection: the app is open.\nThought: click the box, type hello, press OK.",
        tool_calls=[
            call("click", x=box[0], y=box[1]),
            call("type", text="hello"),
            call("click", x=ok[0], y=ok[1]),
        ],
    )
    done = Reply(text="Thought: OK was pressed.", tool_calls=[call("finished", summary=SUMMARY)])
    steps = iter([acts, done])

    def step(request: RecordedRequest) -> Reply:
        return next(steps)

    fake_model.set_default(responder(step))
    bus = EventBus()
    events = EventRecorder(bus)
    queue, todos = MessageQueue(settings.data_dir), TodoList(settings.data_dir)
    options = GatewayOptions(poll_interval_s=0.2, settle_s=0.2)
    gateway = Gateway(settings, bus, options=options, where=XDisplay.from_env())
    serving = asyncio.create_task(gateway.run())
    try:
        await until(gateway.ready.is_set)  # the drop folder is watched
        queue.drop_dir.mkdir(parents=True, exist_ok=True)
        (queue.drop_dir / "hello.md").write_text(DROP, encoding="utf-8")
        await until(lambda: archived_today(queue), timeout=60)
    finally:
        gateway.stop()
        report = await asyncio.wait_for(serving, timeout=30)

    assert tkapp.ok_pressed() == "hello"
    assert [task_of(r) for r in fake_model.requests if is_step(r)] == [TASK, TASK]
    assert [r.status for r in report.runs] == ["completed"]
    [todo] = todos.all()
    assert (todo.status, todo.summary, todo.priority) == ("completed", SUMMARY, 1)
    assert todo.completed is not None and todo.reply_to == "ada@example.com"
    text = todos.path.read_text(encoding="utf-8")
    assert "- status: completed" in text and f"- summary: {SUMMARY}" in text
    [entry] = archived_today(queue)
    assert (entry.outcome, entry.task_id, entry.result) == ("completed", todo.id, SUMMARY)
    assert (entry.sender, entry.source, entry.text) == ("ada", "drop/hello.md", TASK)
    assert todo.message_ids == [entry.id]
    assert queue.processing() == [] and queue.pending() == []
    assert (queue.drop_dir / "processed" / "hello.md").read_text(encoding="utf-8") == DROP
    [reply] = events.of(ReplyReady)
    assert (reply.channel, reply.reply_to, reply.task_id) == ("inbox", "ada@example.com", todo.id)
    assert (reply.status, reply.text, reply.message_ids) == ("completed", SUMMARY, [entry.id])
    assert events.of(TaskFinished)[-1].task_id == todo.id
