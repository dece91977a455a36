"""Archived tasks are found wherever a task is named (DESIGN section 14): a live `jarvis serve`
(its API on loopback, the agent on Xvfb, only the model scripted) that keeps one ended task
in todos.md, so the earlier ones move to todos/archive/ while it runs. The API, `jarvis runs`,
the report, A2A GetTask, a `call_user` answer after rotations, and a second start."""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from a2a.types import GetTaskRequest

from jarvis.gateway.todo_format import parse_todos
from jarvis.gateway.todos import TodoList
from jarvis.runs.report import locate, write_report
from tests.a2a_harness import S, Seen, a2a_client, request, take
from tests.agent_harness import agent_settings
from tests.api_harness import finish, routed, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_serve import task_of

pytestmark = pytest.mark.usefixtures("xserver")


def ask_once(request: RecordedRequest) -> Reply:
    """The task that says "ask me" asks until it is answered; every other one finishes."""
    text = task_of(request)
    if "ask me" in text and "the blue one" not in text:
        return Reply(text="Thought: ask.", tool_calls=[call("call_user", message="Which one?")])
    return finish()


def listed_ids(data: Path) -> list[str]:
    return [t.id for t in parse_todos((data / "todos.md").read_text(encoding="utf-8")).entries()]


async def test_archived_tasks_are_found_by_every_face(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(routed(ask_once))
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200, todos={"keep_ended": 1}
    )
    data = settings.data_dir
    async with serving_api(settings) as api, a2a_client(api) as a2a, api.client() as http:
        first = await take(a2a.send_message(request("first errand")), Seen())
        assert first.last_state() == S.TASK_STATE_COMPLETED
        posted = await http.post("/api/messages", json={"text": "ask me", "channel": "web"})
        assert posted.status_code == 201
        await until(lambda: any(t.status == "needs_user" for t in api.gateway.todos.all()), 60)
        for n in range(2):
            assert (await take(a2a.send_message(request(f"errand {n}")), Seen())).last_state() == (
                S.TASK_STATE_COMPLETED
            )
        first_id = api.gateway.todos.find_by_message(first.task_id).id  # type: ignore[union-attr]
        assert first_id not in listed_ids(data)  # it moved while the daemon ran
        archive = "".join(p.read_text() for p in (data / "todos" / "archive").glob("*.md"))
        assert f"### [{first_id}] " in archive

        got = await http.get(f"/api/tasks/{first_id}")
        assert got.status_code == 200 and got.json()["todo"]["status"] == "completed"
        assert got.json()["run"] is not None
        again = await a2a.get_task(GetTaskRequest(id=first.task_id))
        assert again.status.state == S.TASK_STATE_COMPLETED and len(again.artifacts) == 3
        refused = await http.post(f"/api/tasks/{first_id}/cancel")
        assert refused.status_code == 409 and "is completed" in refused.json()["detail"]

        asking = next(t for t in api.gateway.todos.all() if t.status == "needs_user")
        answered = await http.post(f"/api/tasks/{asking.id}/answer", json={"text": "the blue one"})
        assert answered.status_code == 202
        await until(lambda: api.gateway.todos.get(asking.id).status == "completed", 60)  # type: ignore[union-attr]
    page = write_report(locate(data, first_id), data)  # `jarvis report` of an archived task
    assert "first errand" in page.read_text(encoding="utf-8")
    later = TodoList(data, keep_ended=1)  # a second start, as a CLI or a restart reads it
    assert later.get(first_id).status == "completed"  # type: ignore[union-attr]
    assert later.find_by_message(first.task_id).id == first_id  # type: ignore[union-attr]
    assert later.add("after").id == "T005"  # four tasks ran: ids go on after the archive


async def test_an_editor_saving_stale_copies_through_a_serving_daemon_loses_nothing(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """An editor reads todos.md, waits, writes it back whole, 200 times, while tasks are
    added (API messages), started and finished by the daemon."""
    caplog.set_level(logging.WARNING, logger="jarvis.gateway.todo_outside")
    fake_model.set_default(routed(lambda request: finish()))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=100)
    todos_md = settings.data_dir / "todos.md"
    saves = 0
    stop = threading.Event()

    def editor() -> None:
        nonlocal saves
        rng = random.Random(3)
        while saves < 200 and not stop.is_set():
            text = todos_md.read_text(encoding="utf-8") if todos_md.exists() else ""
            stop.wait(rng.uniform(0.005, 0.05))  # the buffer goes stale meanwhile
            if text:
                todos_md.write_text(text, encoding="utf-8")
                saves += 1

    texts = [f"errand number {n}" for n in range(8)]
    async with serving_api(settings) as api, api.client() as http:
        thread = threading.Thread(target=editor)
        thread.start()
        try:
            for text in texts:
                posted = await http.post("/api/messages", json={"text": text, "channel": "web"})
                assert posted.status_code == 201
                await asyncio.sleep(0.3)

            def all_done() -> bool:
                tasks = api.gateway.todos.all()
                return len(tasks) == len(texts) and {t.status for t in tasks} == {"completed"}

            await until(lambda: all_done() and saves >= 200, 180)
        finally:
            stop.set()
            thread.join()
        tasks = api.gateway.todos.all()
    assert sorted(t.description for t in tasks) == sorted(texts)  # each once, none lost
    written = parse_todos(todos_md.read_text(encoding="utf-8")).entries()
    assert sorted(t.id for t in written) == sorted(t.id for t in tasks)
    assert {t.status for t in written} == {"completed"}
    said = [r.getMessage() for r in caplog.records if r.name == "jarvis.gateway.todo_outside"]
    assert all("restored" in m or "older copy" in m for m in said)
