"""The cockpit against a real gateway with its control API (uvicorn on a free loopback
port, in the test's loop), the real agent on Xvfb, only the model scripted: give a task
and watch cards appear while the model streams, cancel, answer call_user, allow a held
call from its approval card, and reconnect after the daemon restarts."""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.api.server import HttpService
from jarvis.api.settings import HttpAddress
from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.gateway.gateway import Gateway, GatewayOptions
from jarvis.runs.reader import events_after
from jarvis.tui.app import JarvisApp
from jarvis.tui.approvals import ApprovalCard, call_text
from jarvis.tui.cards import NeedsUser, TaskView, ToolCard
from jarvis.tui.client import ApiBackend
from jarvis.tui.launcher import free_port
from jarvis.tui.settings import TuiSettings
from tests.agent_harness import agent_settings, model_point
from tests.api_harness import NEW_TASK, VERIFIED, finish, is_router, is_verify, moves
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.tkdriver import TkApp
from tests.tui_fixtures import until

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]
SIZE = (120, 40)


@asynccontextmanager
async def gateway_on(settings: Settings, port: int) -> AsyncIterator[HttpService]:
    opts = GatewayOptions(poll_interval_s=0.2, settle_s=0.05, watch_interval_s=0.1)
    gateway = Gateway(settings, options=opts, where=XDisplay.from_env())
    service = HttpService(gateway, HttpAddress(host="127.0.0.1", port=port), announce=str)
    gateway.services.append(service.running)
    run = asyncio.create_task(gateway.run())
    try:
        await until(lambda: gateway.ready.is_set() or run.done(), timeout=60)
        if run.done():
            run.result()
        yield service
    finally:
        gateway.stop()
        await asyncio.wait_for(run, timeout=30)


def settings_for(tmp_path: Path, fake_model: FakeModel, monkeypatch: Any) -> Settings:
    return agent_settings(
        tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200, settle_floor_ms=0
    )


def model(steps: list[Reply]) -> Any:
    queue = list(steps)

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if is_verify(request):
            return VERIFIED
        if "short, general procedures" in request.all_text():
            return Reply(text="1. Do it.")
        return queue.pop(0) if queue else finish("all done")

    return answer


def cockpit(service: HttpService) -> JarvisApp:
    assert service.daemon is not None
    backend = ApiBackend(service.url, service.daemon.token, label="test serve")
    return JarvisApp(backend, TuiSettings(thumbnail="halfblocks"))


async def test_a_task_from_the_prompt_streams_cards_and_finishes(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    slow = Reply(
        text="Moving the pointer to the *corner* first. " * 6,
        tool_calls=[call("mouse_move", x=40, y=40), call("click", x=5000, y=5)],
        text_chunk=4,
        delay_s=0.03,
    )
    fake_model.set_default(model([slow]))
    settings = settings_for(tmp_path, fake_model, monkeypatch)
    async with gateway_on(settings, free_port()) as service:
        app = cockpit(service)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.connection == "live", pilot, 30)
            await pilot.press(*"move the pointer", "enter")
            # the thought is on screen while the model still streams (no card yet)
            await until(lambda: app.query(TaskView) and app.query(".thought"), pilot, 60)
            run = app.cockpit.runs["T001"]
            assert run.running
            await until(lambda: len(app.query(ToolCard)) >= 2, pilot, 60)
            await until(lambda: not run.running, pilot, 60)
            assert run.task == "move the pointer" and run.status == "completed"
            cards = list(app.query(ToolCard))
            assert [c.call.tool_name for c in cards][:2] == ["mouse_move", "click"]
            assert cards[0].call.status == "ok" and cards[1].call.status == "error"
            assert not cards[1].collapsed
            assert app.query(".verification.ok-True") and app.query(".ending.completed")
            await until(lambda: "T001" in str(app.side.todos.render()), pilot, 10)
            await until(lambda: app.side.thumb.image is not None, pilot, 10)
            assert "tokens" in str(app.status.render()) and "live" in str(app.status.render())


async def test_escape_cancels_the_running_task_through_the_api(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    # the second answer stays held mid-stream until the test ends: the task is surely still
    # running when Esc is pressed (repeated moves on a still screen would end it as stuck)
    gate = threading.Event()
    held = Reply(text="Thought: waiting.", tool_calls=[call("mouse_move", x=40, y=40)])
    held.hold, held.hold_after = gate, 2
    fake_model.set_default(model([moves(1), held]))
    settings = settings_for(tmp_path, fake_model, monkeypatch)
    try:
        async with gateway_on(settings, free_port()) as service:
            app = cockpit(service)
            async with app.run_test(size=SIZE) as pilot:
                await until(lambda: app.connection == "live", pilot, 30)
                await pilot.press(*"keep moving", "enter")
                await until(lambda: app.query(ToolCard), pilot, 60)
                await until(lambda: len(fake_model.requests) >= 3, pilot, 60)  # router, 2 steps
                await pilot.press("escape")
                await until(lambda: app.cockpit.runs["T001"].status == "cancelled", pilot, 60)
                assert not [n for n in app._notifications if n.severity == "error"]
                await until(lambda: app.query(".ending.cancelled"), pilot, 10)
                assert "idle" in str(app.status.render())
                ends = [
                    r for r in events_after(settings.data_dir, 0) if r["kind"] == "task_finished"
                ]
                assert ends[-1]["stopped_by"] == "tui"  # the brake is named
    finally:
        gate.set()


async def test_a_call_user_question_is_answered_from_its_card(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    ask = Reply(text="I need a code.", tool_calls=[call("call_user", message="Which code?")])
    fake_model.set_default(model([ask, finish("typed the code")]))
    settings = settings_for(tmp_path, fake_model, monkeypatch)
    async with gateway_on(settings, free_port()) as service:
        app = cockpit(service)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.connection == "live", pilot, 30)
            await pilot.press(*"log in", "enter")
            await until(lambda: app.query(NeedsUser), pilot, 60)
            assert "Which code?" in str(app.query_one(NeedsUser).query_one(".question").render())
            await pilot.press("ctrl+r", *"4711", "enter")
            # the answer goes to T001 as a message; the task runs again and finishes
            await until(lambda: app.cockpit.runs["T001"].status == "completed", pilot, 60)
            asked = [r.all_text() for r in fake_model.requests if not is_router(r)]
            assert any("4711" in text for text in asked)
            assert app.query_one(NeedsUser).has_class("done")


async def test_a_held_call_runs_after_allow_once_on_its_card(
    tkapp: TkApp, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    """A typed `sudo rm -rf` waits for a person: the card shows the exact call and the
    status line the task's budget; "a" allows it once, the text is typed and the task
    finishes."""
    settings = agent_settings(
        tmp_path,
        fake_model,
        monkeypatch,
        settle_ceiling_ms=200,
        settle_floor_ms=0,
        safety={"max_cost_usd": 0.05},
    )
    box = model_point(tkapp, "box", settings)
    click = Reply(text="Into the box.", tool_calls=[call("click", x=box[0], y=box[1])])
    held = Reply(text="Now the command.", tool_calls=[call("type", text="sudo rm -rf /tmp/x")])
    fake_model.set_default(model([click, held, finish("typed the command")]))
    async with gateway_on(settings, free_port()) as service:
        app = cockpit(service)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.connection == "live", pilot, 30)
            await pilot.press(*"clear the scratch folder", "enter")
            await until(lambda: app.query(ApprovalCard), pilot, 60)
            card = app.query_one(ApprovalCard)
            assert call_text(card.approval) == 'type {"text": "sudo rm -rf /tmp/x"}'
            assert "rm -rf" in card.approval.reason and card.approval.open
            assert "budget $" in str(app.status.render())  # after the click's step
            assert "/$0.05 · " in str(app.status.render())
            tkapp.sync()
            assert tkapp.entry_text() == ""  # nothing typed while it waits
            # the screen at the request, and the display as it is now, through the API
            shot = await app.backend.approval_screenshot(card.approval.approval_id)
            live = await app.backend.screen(live=True)
            assert shot is not None and live is not None
            with Image.open(io.BytesIO(shot)) as at_request, Image.open(io.BytesIO(live)) as now:
                assert now.format == "JPEG" and now.size == at_request.size
            await pilot.press("ctrl+g")  # to the card (the focus stays while one types)
            await until(lambda: app.focused is card, pilot, 10)
            await pilot.press("a")
            await until(lambda: card.has_class("done"), pilot, 30)
            assert card.approval.decision == "allow_once" and card.approval.by == "tui"
            assert "allowed once" in str(card.outcome.render())
            await until(lambda: app.cockpit.runs["T001"].status == "completed", pilot, 60)
            typed = [c.call for c in app.query(ToolCard) if c.call.tool_name == "type"]
            assert [c.status for c in typed] == ["ok"]
            assert not [n for n in app._notifications if n.severity == "error"]
    assert tkapp.wait_for(lambda e: e["kind"] == "text" and e["text"] == "sudo rm -rf /tmp/x")
    tkapp.sync()
    assert tkapp.entry_text() == "sudo rm -rf /tmp/x"


async def test_reconnects_after_the_daemon_restarts_and_misses_nothing(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(model([moves(1)]))
    settings = settings_for(tmp_path, fake_model, monkeypatch)
    port = free_port()
    first = gateway_on(settings, port)
    service = await first.__aenter__()
    app = cockpit(service)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.connection == "live", pilot, 30)
            await pilot.press(*"first task", "enter")
            await until(lambda: app.cockpit.runs.get("T001") and app.query(".ending"), pilot, 60)
            seen = app.cockpit.last_seq
            await first.__aexit__(None, None, None)
            first = None
            await until(lambda: app.connection == "reconnecting", pilot, 30)
            async with gateway_on(settings, port):
                await until(lambda: app.connection == "live", pilot, 30)
                await pilot.press(*"second task", "enter")
                await until(lambda: app.cockpit.runs.get("T002") is not None, pilot, 60)
                await until(lambda: app.cockpit.runs["T002"].ending is not None, pilot, 60)
            assert app.cockpit.last_seq > seen
            assert [v.run.task_id for v in app.query(TaskView)] == ["T001", "T002"]
            assert len(app.query(".ending")) == 2  # nothing shown twice
    finally:
        if first is not None:
            await first.__aexit__(None, None, None)
