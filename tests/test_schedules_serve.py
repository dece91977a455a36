"""Schedules in a real `jarvis serve` (the gateway with its API, in this process; the agent on
the session's Xvfb; only the model scripted): a run missed while stopped (``catch_up:
once``) becomes a new task at start even though an open task would take it as a merge, runs
under the ``channels.schedule`` policy, its
answer lands in ``answers/NAME.md``, ``GET /api/schedules`` names the next run, and the web
panel (Debian's Chromium, Playwright) lists it. In a fleet the coordinator starts the runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jarvis.gateway.schedule_answers import answer_file
from jarvis.gateway.schedule_book import Schedule, ScheduleBook
from jarvis.gateway.schedule_clock import next_run
from jarvis.gateway.todos import TodoList
from tests.agent_harness import agent_settings
from tests.api_harness import serving_api
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_serve import coordinator_settings
from tests.test_serve import finish, is_router, responder, task_of, until
from tests.test_web_panel import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

__all__ = ["fake_model_fixture", "redis_server"]
pytestmark = pytest.mark.usefixtures("xserver")

TASK = "Download the sales report and save it as report.pdf"
MERGE = Reply(text='{"action": "merge", "task_id": "T001", "mode": "update"}')


def merge_everything(request: RecordedRequest) -> Reply:
    return MERGE  # a router asked would put the run into the open task


async def test_a_due_schedule_is_a_new_task_beside_an_open_one_and_answers_in_its_file(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    deny = {"schedule": {"tools": {"deny": ["write_file"]}}}  # its own policy block
    settings = agent_settings(tmp_path, fake_model, monkeypatch, channels=deny)
    todos = TodoList(settings.data_dir)
    todos.add("the sales report", "Download the sales report", "tui")
    todos.finish("T001", "needs_user", "which month?")  # open, waiting for an answer
    now = datetime.now(UTC)
    book = ScheduleBook(settings.data_dir)
    schedule = book.add(
        Schedule(
            "S0",
            "every hour",
            "UTC",
            TASK,
            catch_up="once",
            answer_to="file:sales",
            created=now - timedelta(hours=3),
        )
    )
    steps: list[str] = []

    def step(request: RecordedRequest) -> Reply:
        steps.append(task_of(request))
        if len(steps) == 1:
            return Reply(
                text="Save it.", tool_calls=[call("write_file", path="r.txt", content="x")]
            )
        return finish(f"did: {task_of(request)}")

    fake_model.set_default(responder(step, route=merge_everything))
    answers = answer_file(settings.data_dir, "sales")
    async with serving_api(settings) as api:
        await until(answers.exists, timeout=90)
        async with api.client() as client:
            listed = (await client.get("/api/schedules")).json()
            posing = await client.post("/api/messages", json={"text": "x", "channel": "schedule"})
        journal = api.journal()
    assert posing.status_code == 422 and "takes its messages itself" in posing.text
    [denied] = [
        r for r in journal if r["kind"] == "tool_call_finished" and r["tool_name"] == "write_file"
    ]
    assert denied["ok"] is False and "for tasks from channel 'schedule'" in denied["error_message"]
    [run, task] = [t for t in todos.all() if t.id != "T001"], todos.get("T001")
    [made] = run
    assert (made.id, made.source, made.status) == ("T002", "schedule", "completed")
    [message_id] = made.message_ids
    assert message_id.startswith("s-S1-")
    assert task is not None and task.status == "needs_user" and len(task.message_ids) == 0
    assert not any(map(is_router, fake_model.requests))  # never offered for a merge
    assert set(steps) == {TASK}
    text = answers.read_text(encoding="utf-8")
    assert "S1, task T002: done" in text and f"did: {TASK}" in text
    [row] = listed["schedules"]
    expected = next_run(schedule, datetime.now(UTC))
    assert expected is not None
    assert datetime.fromisoformat(row["next_run"]) == expected
    assert (row["id"], row["paused"], listed["problems"]) == ("S1", False, [])


BROKEN = "## S9: every blursday at 9\n- tz: UTC\n\nnever read\n"


@pytest.mark.slow
async def test_the_web_panel_lists_schedules_with_their_next_run(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    from playwright.async_api import async_playwright, expect

    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    book = ScheduleBook(settings.data_dir)
    weekday = book.add(Schedule("S0", "every weekday at 09:00", "Europe/Berlin", "the report"))
    book.add(Schedule("S0", "0 7 * * *", "UTC", "water the plants", paused=True))
    with book.path.open("a", encoding="utf-8") as file:  # a hand edit that cannot be read
        file.write("\n" + BROKEN)
    at = next_run(weekday, datetime.now(UTC))
    assert at is not None
    local = at.astimezone(weekday.rule.tz)
    fake_model.set_default(responder())
    async with serving_api(settings) as api, async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": 1500, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            await page.goto(api.service.login_url)
            box = page.locator("#schedules-box")
            await expect(box).to_be_visible(timeout=30_000)
            first = page.locator('#schedules li[data-schedule="S1"]')
            await expect(first).to_contain_text("S1 · every weekday at 09:00 (Europe/Berlin)")
            await expect(first.locator(".next-run")).to_have_text(f"next {local:%Y-%m-%d} 09:00")
            second = page.locator('#schedules li[data-schedule="S2"] .next-run')
            await expect(second).to_have_text("paused")
            await expect(page.locator("#schedules li.error")).to_contain_text(
                "'blursday' is not a day"
            )
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "panel-schedules.png"), full_page=True)
        finally:
            await browser.close()
    assert errors == []


async def test_in_a_fleet_the_coordinator_starts_the_runs(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any, redis_server: RedisServer
) -> None:
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    ScheduleBook(settings.data_dir).add(
        Schedule(
            "S0",
            "every hour",
            "UTC",
            TASK,
            catch_up="once",
            created=datetime.now(UTC) - timedelta(hours=2),
        )
    )
    fake_model.set_default(responder())
    todos = TodoList(settings.data_dir)
    async with serving_api(settings, fleet_url=redis_server.url):
        await until(lambda: todos.get("T001") is not None, timeout=60)
    made = todos.get("T001")
    assert made is not None and made.source == "schedule" and made.description == TASK
    assert made.is_open  # handed to the fleet's workers (none here)
