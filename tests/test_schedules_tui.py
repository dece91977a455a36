"""The TUI's side panel lists the schedules with their next run, from ``GET
/api/schedules`` through its API client against a real `jarvis serve`; hidden while there
are none."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from jarvis.gateway.schedule_book import Schedule, ScheduleBook
from jarvis.gateway.schedule_clock import next_run
from jarvis.tui.app import JarvisApp
from jarvis.tui.client import ApiBackend
from jarvis.tui.settings import TuiSettings
from tests.agent_harness import agent_settings
from tests.api_harness import serving_api
from tests.fake_model import FakeModel, fake_model_fixture
from tests.test_serve import responder
from tests.tui_fixtures import replay_app, until

__all__ = ["fake_model_fixture"]

SIZE = (160, 40)


def listed(app: JarvisApp) -> str:
    return str(app.side.schedule_list.render()) if app.side.schedule_list.display else ""


@pytest.mark.usefixtures("xserver")
async def test_the_side_panel_lists_schedules_with_their_next_run(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    book = ScheduleBook(settings.data_dir)
    weekday = book.add(Schedule("S0", "every weekday at 09:00", "Europe/Berlin", "the report"))
    book.add(Schedule("S0", "0 7 * * *", "UTC", "water the plants", paused=True))
    at = next_run(weekday, datetime.now(UTC))
    assert at is not None
    local = at.astimezone(weekday.rule.tz)
    fake_model.set_default(responder())
    async with serving_api(settings) as api:
        backend = ApiBackend(api.base, api.token, label="daemon")
        app = JarvisApp(backend, TuiSettings(thumbnail="halfblocks"))
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: "S2" in listed(app), pilot, 30)
            assert listed(app).splitlines() == [
                f"◷ S1 every weekday at 09:00 (Europe/Berlin) · next {local:%Y-%m-%d} 09:00",
                "◷ S2 0 7 * * * (UTC) · paused",
            ]
            assert app.side.schedules_title.display


async def test_the_schedules_list_is_hidden_while_there_are_none() -> None:
    app, backend = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.history_loaded.wait()
        await pilot.pause(0.1)
        assert not app.side.schedule_list.display and not app.side.schedules_title.display
        backend.schedule_rows = [
            {"id": "S3", "when": "every hour", "tz": "UTC", "next_run": "2026-11-29T01:00:00+00:00"}
        ]
        app.feed.schedules()
        await until(lambda: bool(listed(app)), pilot, 15)
        assert listed(app) == "◷ S3 every hour (UTC) · next 2026-11-29 01:00"
