"""MessageRouter: the model's merge decisions, and every way of falling back to a new task."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from jarvis.events import AgentWarning, EventBus, EventRecorder
from jarvis.gateway.message_format import Message
from jarvis.gateway.router import (
    MessageRouter,
    Routed,
    RoutingError,
    derive_title,
    parse_decision,
)
from jarvis.gateway.todos import TodoList
from jarvis.llm.anthropic import AnthropicProvider
from jarvis.llm.base import ProviderAuthError, ProviderError
from jarvis.llm.retry import RetryPolicy
from jarvis.llm.types import LLMRequest, LLMResponse, ResponseDone, StreamEvent, TextDelta
from tests.fake_model import FakeModel, Reply

T = TypeVar("T")
HANG = object()


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class ScriptedModel:
    """An in-process model at our own interface: each request gets the next scripted answer."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.requests: list[LLMRequest] = []

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if answer is HANG:
            await asyncio.Event().wait()
        assert isinstance(answer, str)
        yield TextDelta(text=answer)
        yield ResponseDone(response=LLMResponse(text=answer))


def message(text: str, mid: str = "m-new", **fields: Any) -> Message:
    base = {"id": mid, "timestamp": datetime(2026, 2, 1, 16, 0), "text": text, "channel": "tui"}
    return Message.model_validate(base | fields)


@pytest.fixture
def todos(tmp_path: Path) -> TodoList:
    todo_list = TodoList(tmp_path)
    todo_list.add("Open Chrome and search the weather", "search the weather", "tui", ["m-1"])
    todo_list.add("Print page 3 of the report", "print page 3", "email", ["m-2"], "high")
    done = todo_list.add("An old finished task", message_ids=["m-3"])
    todo_list.finish(done.id, "completed", "done")
    return todo_list


def test_merge_update(todos: TodoList) -> None:
    model = ScriptedModel('{"action": "merge", "task_id": "T001", "mode": "update", "text": "x"}')
    routed = run(MessageRouter(todos, model).route(message("Berlin, not Paris")))
    assert routed.action == "update" and routed.fallback is None
    assert routed.todo.id == "T001" and routed.todo.message_ids == ["m-1", "m-new"]
    assert todos.get("T001").description.endswith("Update (m-new):\nBerlin, not Paris")  # type: ignore[union-attr]
    assert len(todos.all()) == 3
    prompt = model.requests[0].messages[0].text
    assert "T001 (pending, from tui): Open Chrome and search the weather" in prompt
    assert "T002 (pending, priority high" in prompt
    assert "An old finished task" not in prompt  # only open tasks are offered
    assert "Berlin, not Paris" in prompt and "{{" not in prompt


def test_merge_subtask(todos: TodoList) -> None:
    answer = '```json\n{"action":"merge","task_id":"t2","mode":"subtask","text":"Staple it"}\n```'
    routed = run(MessageRouter(todos, ScriptedModel(answer)).route(message("and staple it")))
    assert routed.action == "subtask"
    assert (routed.todo.id, routed.todo.parent, routed.todo.title) == ("T004", "T002", "Staple it")
    assert routed.todo.priority == 1 and routed.todo.description == "and staple it"


def test_new_task_with_title_and_priority(todos: TodoList) -> None:
    answer = 'Sure. {"action": "new", "title": "Open the calculator", "priority": "high"}'
    routed = run(MessageRouter(todos, ScriptedModel(answer)).route(message("calc please!!")))
    assert routed.action == "new" and routed.fallback is None
    t = routed.todo
    assert (t.id, t.title, t.priority, t.source) == ("T004", "Open the calculator", 1, "tui")
    assert (t.description, t.message_ids) == ("calc please!!", ["m-new"])


def test_senders_priority_beats_the_models(todos: TodoList) -> None:
    model = ScriptedModel('{"action": "new", "title": "t", "priority": "high"}')
    routed = run(MessageRouter(todos, model).route(message("x", priority=-1)))
    assert routed.todo.priority == -1


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ('{"action": "merge", "task_id": "T099", "mode": "update"}', "T099"),
        ('{"action": "merge", "task_id": "T003", "mode": "update"}', "T003"),  # closed task
        ("I would merge it into T001.", "no JSON"),
        ('{"action": "merge", "task_id": "T001", "mode": "replace"}', "does not fit"),
        ('{"action": "delete"}', "does not fit"),
        ('{"action": "merge", "task_id": "T001", "mode": "update",}', "no JSON"),  # trailing comma
        ('```json\n{"action": "merge", "task_id": "T0', "no JSON"),  # cut off mid-answer
        ("{'action': 'merge', 'task_id': 'T001'}", "no JSON"),  # single quotes
        ('{"action": "merge", "task_id": T001, "mode": "update"}', "no JSON"),  # bare word
    ],
)
def test_unusable_decisions_become_new_tasks(todos: TodoList, answer: str, why: str) -> None:
    text = "Take a screenshot of the desktop\nand save it"
    routed = run(MessageRouter(todos, ScriptedModel(answer)).route(message(text)))
    assert routed.action == "new" and why in (routed.fallback or "")
    assert routed.todo.title == "Take a screenshot of the desktop"
    assert routed.todo.id == "T004" and todos.get("T001").message_ids == ["m-1"]  # type: ignore[union-attr]


def test_model_errors_and_timeouts_become_new_tasks(todos: TodoList) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    model = ScriptedModel(ProviderError("overloaded", retryable=True), HANG)
    router = MessageRouter(todos, model, timeout_s=0.05, bus=bus)
    first = run(router.route(message("one", "m-a")))
    second = run(router.route(message("two", "m-b")))
    assert "overloaded" in (first.fallback or "") and "did not answer" in (second.fallback or "")
    assert [first.todo.id, second.todo.id] == ["T004", "T005"]
    assert len(recorder.of(AgentWarning)) == 2
    none = run(MessageRouter(todos, None).route(message("three", "m-c")))
    assert none.action == "new" and none.fallback == "no model configured"


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ProviderAuthError("rejected the credentials (HTTP 401)", status=401), "HTTP 401"),
        (ProviderError("model not found", status=404), "model not found"),
        (KeyError("a bug in routing"), "a bug in routing"),
    ],
)
def test_auth_errors_and_bugs_are_not_hidden_in_a_new_task(
    todos: TodoList, error: Exception, said: str
) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    router = MessageRouter(todos, ScriptedModel(error), bus=bus)
    raised = RoutingError if isinstance(error, ProviderError) else KeyError
    with pytest.raises(raised, match=said):
        run(router.route(message("one", "m-a")))
    assert len(todos.all()) == 3 and recorder.of(AgentWarning) == []


def test_routing_is_idempotent(todos: TodoList) -> None:
    model = ScriptedModel('{"action": "new", "title": "t"}')
    router = MessageRouter(todos, model)
    first = run(router.route(message("x")))
    again = run(router.route(message("x")))
    assert again.action == "existing" and again.todo == first.todo
    assert len(model.requests) == 1 and len(todos.all()) == 4


def test_parse_decision_and_titles() -> None:
    decision = parse_decision('{"note": 1} then {"action": "new", "title": "a"} {"action": "x"}')
    assert decision.action == "new"
    with pytest.raises(ValueError):
        parse_decision('{"action": "merge"}')  # no task_id
    assert derive_title("\n\n  first   line  \nsecond") == "first line"
    long = derive_title("word " * 40)
    assert len(long) == 80 and long.endswith("…")


def test_router_with_the_real_sdk_on_the_wire(todos: TodoList, fake_model: FakeModel) -> None:
    fake_model.script(
        Reply(text='{"action": "merge", "task_id": "T002", "mode": "update", "text": "HP"}'),
        Reply.server_error(),
    )
    fast = RetryPolicy(max_retries=0, base_delay_s=0.001, max_delay_s=0.01)
    provider = AnthropicProvider(
        "claude-test", api_key="sk-ant-test", base_url=fake_model.base_url, retry=fast
    )
    router = MessageRouter(todos, provider, timeout_s=10)

    async def both() -> tuple[Routed, Routed]:  # one loop: the SDK client lives in it
        merged = await router.route(message("Use the HP printer", "m-hp"))
        return merged, await router.route(message("Then email it to Bob", "m-bob"))

    merged, failed = run(both())
    assert merged.action == "update" and merged.todo.message_ids == ["m-2", "m-hp"]
    assert failed.action == "new" and "failed" in (failed.fallback or "")
    [request, _] = fake_model.requests
    assert "Use the HP printer" in request.all_text() and "T002" in request.all_text()
