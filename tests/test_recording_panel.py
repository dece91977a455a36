"""The Record button: the web panel (Debian's Chromium through Playwright) and the TUI (a
Textual pilot) start and stop a recording through the real `jarvis serve` API; the daemon
records its own Xvfb desk with XRecord while the test acts on a login page in Chromium
through XTEST (xdotool), as a person would; the skill file names the page's fields. The
API refuses a second recording, a stop with none running, a name without letters, and a
recording while a task acts on the desktop (held at an approval)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.desktop.a11y.session import A11ySession
from jarvis.recording.skill_file import load_recording
from jarvis.tui.app import JarvisApp
from jarvis.tui.client import ApiBackend
from jarvis.tui.recording import RecordName
from jarvis.tui.settings import TuiSettings
from tests.a11yapps import publishing_env, start_chromium
from tests.agent_harness import agent_settings
from tests.api_harness import Api, scripted, serving_api, until
from tests.fake_model import FakeModel, Reply, call
from tests.login_site import LoginSite
from tests.test_web_panel import ARTIFACTS
from tests.test_web_panel_approvals import panel
from tests.xserver import Xvfb

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]
PASSWORD = "never-in-a-recording-42"
PAUSE_S = 0.6
"""A person's pace: the recorder cuts steps at pauses (its IDLE_S is 0.25 s)."""


@pytest.fixture(scope="module")
def session(xserver: Xvfb) -> Iterator[A11ySession]:
    with A11ySession(xserver.env()) as started:
        yield started


@pytest.fixture(scope="module")
def site(xserver: Xvfb, session: A11ySession, tmp_path_factory: Any) -> Iterator[LoginSite]:
    login = LoginSite(PASSWORD)
    work = tmp_path_factory.mktemp("chromium")
    app = start_chromium(work, publishing_env(work, xserver.env(), session), login.url)
    try:
        login.wait("rects")
        yield login
    finally:
        app.close()
        login.close()


def settings_for(tmp: Path, fake_model: FakeModel, mp: Any, session: A11ySession) -> Any:
    return agent_settings(tmp, fake_model, mp, a11y_session_bus=session.address)


async def act_as_a_person(xserver: Xvfb, site: LoginSite) -> None:
    """Click the email field, type an address, click the password field, type it."""
    ux, uy = site.centre("user")
    px, py = site.centre("pw")
    for commands in (
        [f"mousemove {ux} {uy}", "click 1"],
        ["key ctrl+a", "type me@example.org"],
        [f"mousemove {px} {py}", "click 1"],
        ["key ctrl+a", f"type {PASSWORD}"],
    ):
        argv = ["xdotool"] + [w for c in commands for w in c.split(" ")]
        await asyncio.to_thread(subprocess.run, argv, env=xserver.env(), check=True, timeout=30)
        await asyncio.sleep(PAUSE_S)


def check_skill(api: Api, name: str) -> str:
    folder, data = load_recording(api.data_dir, name)
    words = [s.words for s in data.steps]
    assert [s.action.kind for s in data.steps][:3] == ["click", "hotkey", "type"], words
    assert 'the entry "Email"' in words[0] and "Example login" in words[0], words
    assert any("'me@example.org'" in w for w in words), words
    assert any('the password text "Password"' in w for w in words), words
    assert any("[secret typed]" in w for w in words), words
    text = (folder / "skill.md").read_text()
    assert text.startswith(f"# {name}\n") and (folder / "001-target.png").is_file()
    for path in api.data_dir.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
    return text


async def test_the_panel_s_record_button_makes_a_skill_of_what_a_person_does(
    xserver: Xvfb,
    session: A11ySession,
    site: LoginSite,
    tmp_path: Path,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from playwright.async_api import expect

    name = "Sign in to Example"
    settings = settings_for(tmp_path, fake_model, monkeypatch, session)
    async with serving_api(settings) as api, panel(api, "recording") as page:
        async with api.client() as client:  # the API's refusals, one line each
            bad = await client.post("/api/recordings", json={"name": "?!"})
            assert bad.status_code == 422 and "letters or digits" in bad.json()["detail"]
            none = await client.post("/api/recordings/stop")
            assert none.status_code == 409 and none.json()["detail"] == "no recording runs"
        await page.fill("#rec-name", name)
        await page.click("#rec-start")
        await expect(page.locator("#recording-box")).to_have_attribute(
            "data-state", "recording", timeout=20_000
        )
        await expect(page.locator("#rec-status")).to_contain_text(f'Recording "{name}"')
        async with api.client() as client:
            again = await client.post("/api/recordings", json={"name": "another"})
            assert again.status_code == 409 and "already recording" in again.json()["detail"]
            listed = (await client.get("/api/recordings")).json()
            assert listed["recording"]["slug"] == "sign-in-to-example"
        await act_as_a_person(xserver, site)
        await page.click("#rec-stop")
        status = page.locator("#rec-status")
        await expect(status).to_contain_text(
            "steps in recordings/sign-in-to-example/skill.md", timeout=60_000
        )
        await expect(page.locator("#recording-box")).to_have_attribute("data-state", "idle")
        await expect(page.locator("#recordings li[data-slug='sign-in-to-example']")).to_have_count(
            1
        )
        skill = page.locator("#rec-skill")
        await expect(skill.locator("li").first).to_contain_text('the entry "Email"')
        await page.wait_for_function(
            "() => { const i = document.querySelector('#rec-skill img');"
            " return !!i && i.naturalWidth > 0; }"
        )
        await page.locator("#side").screenshot(path=str(ARTIFACTS / "recording-panel.png"))
        check_skill(api, name)


async def test_f6_in_the_tui_starts_and_stops_a_recording(
    xserver: Xvfb,
    session: A11ySession,
    site: LoginSite,
    tmp_path: Path,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = "Fill the Example form"
    settings = settings_for(tmp_path, fake_model, monkeypatch, session)
    async with serving_api(settings) as api:
        backend = ApiBackend(api.base, api.token)
        app = JarvisApp(backend, TuiSettings())
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("f6")
            await until(lambda: isinstance(app.screen, RecordName))
            await pilot.press(*name, "enter")
            await until(lambda: "F6 stops it" in app.recording_note, 20)
            assert app.recording_note.startswith(f"recording {name!r} on :")
            await act_as_a_person(xserver, site)
            await pilot.press("f6")
            await until(lambda: app.recording_note.startswith("recorded "), 60)
            assert "in recordings/fill-the-example-form/skill.md" in app.recording_note
        await backend.aclose()
        check_skill(api, name)


async def test_no_recording_starts_while_a_task_acts_on_the_desktop(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = Reply(tool_calls=[call("type", text="sudo rm -rf /tmp/x")])  # waits for approval
    fake_model.set_default(scripted([held]))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, takeover={"enabled": False})
    async with serving_api(settings) as api, api.client() as client:
        sent = await client.post("/api/messages", json={"text": "clean up", "channel": "api"})
        assert sent.status_code == 201
        await until(lambda: any(r["kind"] == "approval_requested" for r in api.journal()), 60)
        [task_id] = {r["task_id"] for r in api.journal() if r["kind"] == "task_started"}
        refused = await client.post("/api/recordings", json={"name": "while busy"})
        assert refused.status_code == 409, refused.text
        assert refused.json()["detail"] == f"not recording: task {task_id} acts on this desktop now"
        assert (await client.get("/api/recordings")).json() == {"recording": None, "recordings": []}
        assert (await client.post("/api/stop", json={"by": "api"})).json()["stopping"] is True


async def test_a_recording_running_when_the_daemon_stops_is_written(
    xserver: Xvfb,
    session: A11ySession,
    site: LoginSite,
    tmp_path: Path,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_for(tmp_path, fake_model, monkeypatch, session)
    async with serving_api(settings) as api, api.client() as client:
        started = await client.post("/api/recordings", json={"name": "Left running"})
        assert started.status_code == 201, started.text
        ux, uy = site.centre("user")
        argv = ["xdotool", "mousemove", str(ux), str(uy), "click", "1"]
        await asyncio.to_thread(subprocess.run, argv, env=xserver.env(), check=True)
        await asyncio.sleep(PAUSE_S)
    _, data = load_recording(settings.data_dir, "Left running")
    assert [s.action.kind for s in data.steps] == ["click"]
    assert 'the entry "Email"' in data.steps[0].words
