"""A fleet task's held call answered in the web panel (Debian's chromium via Playwright):
the answer reaches the worker that asked and the task goes on; a forged control message
sent to another worker for that task is ignored there with a warning; malformed entries
on ``jarvis:tasks`` and ``jarvis:events`` are skipped with a warning by the real worker
and coordinator, which go on working."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.fleet import control, keys
from jarvis.fleet.connection import client
from jarvis.fleet.redis_queue import text
from tests.agent_harness import agent_settings
from tests.api_harness import NEW_TASK, is_router, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_worker import Fleet, other
from tests.test_web_panel_approvals import WAIT, give_task, journal_of, panel

__all__ = ["fake_model_fixture", "redis_server"]

pytestmark = pytest.mark.usefixtures("xserver")


@pytest.fixture
def fleet(tmp_path: Path, fake_model: FakeModel, redis_server: RedisServer) -> Iterator[Fleet]:
    made = Fleet(tmp_path, fake_model, redis_server.url)
    yield made
    made.stop()


@pytest.mark.slow
async def test_an_approval_allowed_in_the_panel_reaches_the_worker_and_forgeries_are_ignored(
    fleet: Fleet,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from playwright.async_api import expect

    risky = Reply(text="Thought: elevate.", tool_calls=[call("type", text="sudo true")])
    script = iter([risky, Reply(tool_calls=[call("finished", summary="typed it")])])

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        return other(request) or next(script)

    fake_model.set_default(answer)
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, fleet={"lease_s": 3}, takeover={"enabled": False}
    )
    redis = client(redis_server.url)
    try:
        async with serving_api(settings, fleet_url=redis_server.url) as api:
            for name in ("w1", "w2"):
                fleet.start(name)
            for name in ("w1", "w2"):
                await fleet.said(name, "waiting for tasks")
            await redis.xadd(keys.TASKS, {"nonsense": "1"})  # malformed: no task, no text
            bad_event: Any = {"type": "event", "task": "T001", "worker": "w9", "data": "{broken"}
            await redis.xadd(keys.EVENTS, bad_event)
            async with asyncio.timeout(60):
                while "malformed" not in fleet.err("w1") + fleet.err("w2"):
                    await asyncio.sleep(0.05)
            await until(lambda: "refused" in caplog.text, 30)

            async with panel(api, "fleet-approval") as page:
                await give_task(page, "type sudo true in the terminal")
                card = page.locator(".approval")
                await expect(card).to_have_count(1, timeout=WAIT)
                [request] = journal_of(api, "approval_requested")
                await expect(card).to_have_attribute("data-id", request["approval_id"])
                lease: Any = await redis.hgetall(keys.lease_key("T001"))
                runner = text(lease[b"worker"])
                bystander = "w2" if runner == "w1" else "w1"
                forged = control.Control(
                    "approval", "T001", approval_id=request["approval_id"], decision="allow_once"
                )
                await control.send(redis, bystander, forged)  # to a worker not running T001
                warning = "control approval for task T001 ignored: this worker runs nothing"
                await fleet.said(bystander, warning, timeout=30)
                assert journal_of(api, "approval_resolved") == []  # still waiting
                await expect(card).not_to_have_attribute("data-state", "resolved")

                await card.locator("button[data-decision='allow_once']").click()
                await expect(card).to_have_attribute("data-state", "resolved")
                await expect(card.locator(".outcome")).to_have_text("Allowed once")
                await until(lambda: journal_of(api, "task_finished"), 90)
    finally:
        await redis.aclose()
    [resolved] = journal_of(api, "approval_resolved")
    assert (resolved["approval_id"], resolved["decision"]) == (request["approval_id"], "allow_once")
    assert resolved["by"] == "web"
    typed = [r for r in journal_of(api, "tool_call_finished") if r["tool_name"] == "type"]
    [ran] = typed  # the allowed call ran on the worker's desktop (an empty one: nothing
    # there takes keys, so it says so; a denied call would not have reached it)
    assert "keyboard focus" in (ran["error_message"] or "") or ran["ok"], ran
    [finished] = journal_of(api, "task_finished")
    assert (finished["status"], finished["summary"]) == ("completed", "typed it")
    assert "approval answer ignored" not in fleet.err(runner)
    assert "entry" in caplog.text and "from 'w9' refused" in caplog.text
