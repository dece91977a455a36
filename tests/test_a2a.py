"""Jarvis as an A2A agent, driven by the real a2a-sdk client against a live ``jarvis serve``
(the agent on Xvfb, only the model scripted): the card, a streamed task with its artifacts,
GetTask and ListTasks, cancel, an INPUT_REQUIRED round trip, AUTH_REQUIRED while a person's
approval waits, the token, and a dropped stream resumed without loss."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2AClientError
from a2a.client.card_resolver import parse_agent_card
from a2a.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError

from jarvis.gateway.runner import EmbeddedRunner
from tests.a2a_harness import S, Seen, a2a_client, request, take
from tests.agent_harness import agent_settings
from tests.api_harness import is_step, moves, scripted, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

pytestmark = pytest.mark.usefixtures("xserver")


def settings_for(tmp_path: Path, fake_model: FakeModel, monkeypatch: Any, **extra: Any) -> Any:
    return agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200, **extra)


async def test_the_card_is_public_and_valid_and_the_extended_card_needs_the_token(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([]))
    async with serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api:
        async with httpx.AsyncClient(base_url=api.base) as anon:
            got = await anon.get("/.well-known/agent-card.json")
            assert got.status_code == 200
            card = parse_agent_card(got.json())  # the SDK's own parser and validation
            assert (await anon.post("/a2a", json={"jsonrpc": "2.0", "id": 1,
                    "method": "ListTasks", "params": {}})).status_code == 401  # fmt: skip
            evil = await anon.get("/.well-known/agent-card.json", headers={"host": "evil.test"})
            assert evil.status_code == 403
        assert card.name == "Jarvis" and card.capabilities.streaming
        assert not card.capabilities.push_notifications and card.capabilities.extended_agent_card
        [iface] = card.supported_interfaces
        assert iface.url == api.base + "/a2a" and iface.protocol_binding == "JSONRPC"
        assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
        ids = [s.id for s in card.skills]
        assert ids[0] == "desktop-task" and card.skills[0].examples
        assert any(i.startswith("preset:") for i in ids), ids  # the shipped presets
        assert "model" not in got.text
        async with a2a_client(api) as client:
            extended = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
        [ext] = extended.capabilities.extensions
        assert ext.params["model"] == api.gateway.settings.active_model and ext.params["profile"]


async def test_a_task_streams_to_completed_with_artifacts_and_get_and_list_show_it(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([moves(1), moves(2)]))
    async with (
        serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api,
        a2a_client(api) as client,
    ):
        seen = await take(client.send_message(request("point at the corner")), Seen())
        assert S.Name(seen.tasks[0].status.state) == "TASK_STATE_SUBMITTED"
        assert seen.states()[-1] == "TASK_STATE_COMPLETED"
        assert set(seen.states()[:-1]) == {"TASK_STATE_WORKING"}
        texts = seen.texts()
        assert "step 1" in texts and any(t.startswith("step 2 done: mouse_move") for t in texts)
        assert seen.seqs() == sorted(seen.seqs())
        names = [a.name for a in seen.artifacts]
        assert names == ["summary", "final screenshot", "report"]
        shot = seen.artifacts[1].parts[0]
        assert shot.media_type == "image/jpeg" and shot.raw[:2] == b"\xff\xd8"
        assert b"<html" in seen.artifacts[2].parts[0].raw.lower()
        [todo] = api.gateway.todos.all()
        assert todo.source == "a2a" and todo.message_ids == [seen.task_id]
        assert todo.reply_to == seen.tasks[0].context_id

        task = await client.get_task(GetTaskRequest(id=seen.task_id))
        assert task.status.state == S.TASK_STATE_COMPLETED and len(task.artifacts) == 3
        assert task.history[0].parts[0].text == "point at the corner"
        # a follow-up in the same context is its own task, never merged
        ctx = seen.tasks[0].context_id
        more = await take(client.send_message(request("and again", context_id=ctx)), Seen())
        assert more.task_id != seen.task_id and more.last_state() == S.TASK_STATE_COMPLETED
        assert len(api.gateway.todos.all()) == 2
        listed = await client.list_tasks(ListTasksRequest(context_id=ctx))
        assert [t.id for t in listed.tasks] == [more.task_id, seen.task_id]
        assert await client.list_tasks(ListTasksRequest(context_id="other")) == type(listed)(
            page_size=50
        )
        with pytest.raises(TaskNotFoundError, match="no A2A task"):
            await client.get_task(GetTaskRequest(id="m-nope"))


async def test_cancel_mid_task(tmp_path: Path, fake_model: FakeModel, monkeypatch: Any) -> None:
    walk = [Reply(text="Thought: on.", tool_calls=[call("mouse_move", x=10 + 5 * i, y=40)])
            for i in range(40)]  # fmt: skip
    fake_model.set_default(scripted(walk))
    async with (
        serving_api(settings_for(tmp_path, fake_model, monkeypatch, max_steps=60)) as api,
        a2a_client(api) as client,
    ):
        stream = client.send_message(request("keep moving"))
        seen = await take(stream, Seen(), lambda s: "step 2" in s.texts())
        cancelled = await client.cancel_task(CancelTaskRequest(id=seen.task_id))
        assert cancelled.status.state == S.TASK_STATE_CANCELED
        runner = api.gateway.runner
        assert isinstance(runner, EmbeddedRunner)
        await until(lambda: runner.worker.current is None)
        assert api.gateway.todos.all()[0].status == "cancelled"
        steps = sum(map(is_step, fake_model.requests))
        assert steps < 20
        with pytest.raises(TaskNotCancelableError, match="cannot be cancelled"):
            await client.cancel_task(CancelTaskRequest(id=seen.task_id))


async def test_input_required_round_trip(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    def step(request: RecordedRequest) -> Reply:
        if "the red one" in request.all_text():
            return Reply(text="Thought: red.", tool_calls=[call("finished", summary="red")])
        return Reply(text="Thought: ask.", tool_calls=[call("call_user", message="Which file?")])

    base = scripted([])
    fake_model.set_default(lambda r: step(r) if is_step(r) else base(r))
    async with (
        serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api,
        a2a_client(api) as client,
    ):
        first = await take(client.send_message(request("open the file")), Seen())
        assert first.last_state() == S.TASK_STATE_INPUT_REQUIRED
        assert first.texts()[-1] == "Which file?"
        answer = request("the red one", task_id=first.task_id)
        second = await take(client.send_message(answer), Seen())
        assert second.task_id == first.task_id
        assert second.last_state() == S.TASK_STATE_COMPLETED
        assert min(second.seqs()) > max(first.seqs())  # only what came after the answer
        [todo] = api.gateway.todos.all()
        assert todo.summary == "red" and len(todo.message_ids) == 2
        late = request("too late", task_id=first.task_id)
        with pytest.raises(UnsupportedOperationError, match="takes no message"):
            await take(client.send_message(late), Seen())


async def test_auth_required_while_a_person_decides_then_completed(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([moves(1)]))
    held = {"channels": {"a2a": {"approve": {"tools": ["mouse_move"]}}}}
    async with (
        serving_api(settings_for(tmp_path, fake_model, monkeypatch, **held)) as api,
        a2a_client(api) as client,
        api.client() as person,
    ):
        stream = client.send_message(request("move it"))
        seen = await take(stream, Seen(), lambda s: s.last_state() == S.TASK_STATE_AUTH_REQUIRED)
        assert "waiting for a person to approve mouse_move" in seen.texts()[-1]
        task = await client.get_task(GetTaskRequest(id=seen.task_id))
        assert task.status.state == S.TASK_STATE_AUTH_REQUIRED
        [pending] = (await person.get("/api/approvals")).json()["pending"]
        ok = await person.post(f"/api/approvals/{pending['approval_id']}",
                               json={"decision": "allow_once", "by": "web"})  # fmt: skip
        assert ok.status_code == 200, ok.text
        rest = await take(client.subscribe(SubscribeToTaskRequest(id=seen.task_id)), Seen())
        assert rest.last_state() == S.TASK_STATE_COMPLETED
        assert "approval: allow_once by web" in rest.texts()


async def test_no_token_and_a_wrong_token_are_refused(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([]))
    async with serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api:
        for token in ("", "x" * 43):
            async with a2a_client(api, token) as client:
                with pytest.raises(A2AClientError, match="401"):
                    await take(client.send_message(request("do it")), Seen())
                with pytest.raises(A2AClientError, match="401"):
                    await client.list_tasks(ListTasksRequest())
        assert api.gateway.todos.all() == [] and api.gateway.queue.pending() == []


async def test_a_dropped_stream_resumes_with_nothing_lost(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    walk = [Reply(text="Thought: on.", tool_calls=[call("mouse_move", x=30 * i, y=40)])
            for i in range(1, 7)]  # fmt: skip
    fake_model.set_default(scripted(walk))
    async with (
        serving_api(settings_for(tmp_path, fake_model, monkeypatch, max_steps=20)) as api,
        a2a_client(api) as client,
    ):
        first = await take(client.send_message(request("six steps")), Seen(),
                           lambda s: len(s.updates) >= 3)  # fmt: skip
        await asyncio.sleep(0)  # the connection is closed; the task runs on
        rest = await take(client.subscribe(SubscribeToTaskRequest(id=first.task_id)), Seen())
        assert rest.last_state() == S.TASK_STATE_COMPLETED, rest.texts()
        got = sorted(set(first.seqs()) | set(rest.seqs()))
        todo = api.gateway.todos.all()[0]
        kinds = {"task_started", "step_started", "step_finished", "reply_ready"}
        wanted = [r["seq"] for r in api.journal(todo.id) if r["kind"] in kinds]
        assert got == wanted and rest.seqs() == sorted(rest.seqs())
        assert len([s for s in rest.states() if s == "TASK_STATE_COMPLETED"]) == 1
