"""Teach by showing: a person's actions on Chromium (played through XTEST with xdotool, as
a person's hands) are recorded with XRecord and become a skill file whose steps name their
targets from the accessibility tree; the password typed meanwhile is in no file; the skill
is kept in long-term memory and a later task recalls it; `jarvis replay --recording`
repeats it without the model."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.desktop.a11y.reader import A11yReader
from jarvis.desktop.a11y.session import A11ySession
from jarvis.desktop.x11 import XDisplay
from jarvis.memory.long_term import LongTermMemory
from jarvis.recording.actions import SECRET_TYPED
from jarvis.recording.recorder import Recorder, Recording
from jarvis.recording.session import remember_recording
from jarvis.recording.skill_file import load_recording, write_recording
from tests.a11yapps import publishing_env, start_chromium
from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, Reply, call
from tests.login_site import LoginSite
from tests.realapps import App
from tests.xserver import Xvfb

PASSWORD = "S3cret-typed-while-recording"
NAME = "Sign in to Example"
PAUSE_S = 0.6
"""How long the person rests between actions (longer than the recorder's IDLE_S)."""


@pytest.fixture(scope="module")
def session(xserver: Xvfb) -> Iterator[A11ySession]:
    with A11ySession(xserver.env()) as started:
        yield started


@pytest.fixture
def login(xserver: Xvfb, session: A11ySession, tmp_path: Path) -> Iterator[tuple[LoginSite, App]]:
    site = LoginSite(PASSWORD)
    work = tmp_path / "work"
    work.mkdir()
    app = start_chromium(work, publishing_env(work, xserver.env(), session), site.url)
    try:
        site.wait("rects")
        yield site, app
    finally:
        app.close()
        site.close()


def record(xserver: Xvfb, session: A11ySession, site: LoginSite) -> Recording:
    where = XDisplay.from_env()
    recorder = Recorder(where, A11yReader(session.address, timeout=2.0))
    stop = threading.Event()
    done: list[Recording] = []
    thread = threading.Thread(target=lambda: done.append(recorder.run(stop)))
    thread.start()
    try:
        assert recorder.started.wait(10)
        ux, uy = site.centre("user")
        px, py = site.centre("pw")
        for commands in (
            [f"mousemove {ux} {uy}", "click 1"],
            ["key ctrl+a", "type me@example.org"],
            [f"mousemove {px} {py}", "click 1"],
            [f"type {PASSWORD}"],
            ["key Return"],
            ["key ctrl+alt+r"],  # the stop chord
        ):
            _xdotool(xserver, commands)
            stop.wait(PAUSE_S)  # a person's pace: the recorder cuts steps at pauses
        thread.join(20)
        assert not thread.is_alive(), "the stop chord did not end the recording"
    finally:
        stop.set()
        thread.join(5)
        recorder.close()
    return done[0]


def _xdotool(xserver: Xvfb, commands: list[str]) -> None:
    argv = ["xdotool"]
    for command in commands:
        argv += command.split(" ")
    subprocess.run(argv, env=xserver.env(), check=True, timeout=30)


def test_a_person_s_login_becomes_a_skill_with_targets_and_no_password(
    xserver: Xvfb,
    session: A11ySession,
    login: tuple[LoginSite, App],
    tmp_path: Path,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site, _ = login
    recording = record(xserver, session, site)
    assert recording.stopped_by == "stop chord"
    site.wait("logins")
    assert site.logins == [True]  # the person really signed in
    settings = agent_settings(tmp_path, fake_model, monkeypatch, long_term_memory=True)
    data_dir = settings.data_dir
    skill = write_recording(data_dir, NAME, recording)
    folder, data = load_recording(data_dir, NAME)
    kinds = [s.action.kind for s in data.steps]
    assert kinds == ["click", "hotkey", "type", "click", "type", "press_key"], kinds
    words = [s.words for s in data.steps]
    assert 'the entry "Email"' in words[0] and "Example login" in words[0], words[0]
    assert data.steps[1].action.keys == "ctrl+a"
    assert "'me@example.org'" in words[2]
    assert 'the password text "Password"' in words[3]
    assert SECRET_TYPED in words[4] and "type_secret" in words[4], words[4]
    assert data.steps[5].action.keys == "enter" and "Press enter" in words[5], words[5]
    text = skill.read_text()
    assert "](001-target.png)" in text and (folder / "001-target.png").is_file()
    assert (folder / "001-before.jpg").is_file() and (folder / "006-after.jpg").is_file()
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path

    # kept as a skill memory, recalled by a later task as it recalls its own skills
    assert remember_recording(settings, data) == "kept in long-term memory as a skill"
    with LongTermMemory.from_settings(settings) as memory:
        [kept] = memory.list(types=["skill"])
    assert kept.task_ids == [f"recording:{data.slug}"] and SECRET_TYPED in kept.content
    fake_model.script(
        Reply(tool_calls=[call("finished", summary="signed in as recorded")]),
        Reply(text='{"done": true, "reason": "signed in"}'),
    )
    outcome, _ = asyncio.run(run_agent(settings, "Sign in to the Example site"))
    assert outcome.status == "finished", outcome
    first = fake_model.requests[0].all_text()
    assert f"How to: {NAME}" in first and 'the entry "Email"' in first
    assert "[skill, importance" in first
