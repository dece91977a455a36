"""jarvis replay on the Tk app: exact, with the window moved 40 px, and refused when
another window is in front."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from jarvis.cli import main
from jarvis.config import Settings
from jarvis.desktop.screen import Size, fit_size, screen_to_model
from jarvis.desktop.windows import Windows
from jarvis.desktop.x11 import XDisplay
from jarvis.events import ApprovalRequested, Event, EventBus
from jarvis.runs.replay_run import replay_task
from jarvis.runs.report import locate
from jarvis.runs.step_file import load_steps
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from tests.agent_harness import TEST_KEY, agent_settings, model_point
from tests.fake_model import FakeModel, Reply, call
from tests.runs_harness import run_journaled
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")

TEXT = "replayed words"


@dataclass
class Recording:
    settings: Settings
    task_id: str
    points: list[tuple[int, int]]
    """The recorded screen points of the two clicks (box, then OK)."""


@pytest.fixture(scope="module")
def recording(_tkapp_holder, tmp_path_factory) -> Iterator[Recording]:
    import asyncio

    app: TkApp = _tkapp_holder.get()
    app.reset()
    model = FakeModel().start()
    with pytest.MonkeyPatch.context() as mp:
        settings = agent_settings(tmp_path_factory.mktemp("replay"), model, mp)
        box, ok = model_point(app, "box", settings), model_point(app, "ok", settings)
        model.script(
            Reply(
                text="Thought: type into the box and press OK.",
                tool_calls=[
                    call("click", x=box[0], y=box[1]),
                    call("type", text=TEXT),
                    call("click", x=ok[0], y=ok[1]),
                ],
            ),
            Reply(text="Thought: done.", tool_calls=[call("finished", summary="done")]),
            Reply(text='{"done": true, "reason": "OK pressed"}'),
        )
        try:
            outcome = asyncio.run(run_journaled(settings, "type into the box and press OK"))
        finally:
            model.stop()
        assert outcome.status == "finished", outcome.summary
        assert app.ok_pressed() == TEXT
        [(_, step), *_] = load_steps(locate(settings.data_dir, outcome.task_id))
        points = [step.calls[0].screen_points[0], step.calls[2].screen_points[0]]
        yield Recording(settings, outcome.task_id, points)


def clicks(app: TkApp, since: int) -> list[dict]:
    return [e for e in app.events("click", since=since)]


def pointer() -> tuple[int, int]:
    out = subprocess.run(
        ["xdotool", "getmouselocation", "--shell"], capture_output=True, text=True, check=True
    ).stdout
    values = dict(line.split("=", 1) for line in out.split())
    return int(values["X"]), int(values["Y"])


def test_replay_repeats_exactly(tkapp: TkApp, recording: Recording, capsys) -> None:
    mark = tkapp.mark()
    data_dir = str(recording.settings.data_dir)
    assert main(["replay", recording.task_id, "--data-dir", data_dir, "--report"]) == 0
    said, report = capsys.readouterr().out.strip().splitlines()
    assert said.endswith(f"of {recording.task_id}: 3/3 actions repeated; done")
    outcome_folder = Path(report).parent
    tkapp.sync()
    assert tkapp.ok_pressed() == TEXT
    assert [(e["x"], e["y"]) for e in clicks(tkapp, mark)] == recording.points
    replayed = load_steps(outcome_folder)
    methods = [c["method"] for _, s in replayed for c in (s.replay or {}).get("calls", [])]
    assert methods == ["exact", "window", "exact"]
    info = json.loads((outcome_folder / "run.json").read_text())
    assert info["status"] == "completed" and info["channel"] == "replay"
    assert json.loads((outcome_folder / "replay.json").read_text())["of"] == recording.task_id
    # the replay's report shows how each action was placed against the recording
    html = Path(report).read_text()
    assert "Replay of step 1" in html and 'id="replay-note"' in html


async def test_replay_follows_a_moved_window(tkapp: TkApp, recording: Recording) -> None:
    windows = Windows(XDisplay.from_env())
    try:
        app_window = windows.at(5, 5)
        assert app_window.wm_class == "Tk"
        subprocess.run(["xdotool", "windowmove", str(app_window.id), "40", "40"], check=True)
        deadline = time.monotonic() + 5
        while windows.at(5, 5).id == app_window.id and time.monotonic() < deadline:
            time.sleep(0.02)
        mark = tkapp.mark()
        outcome = await replay_task(
            recording.settings, recording.task_id, where=XDisplay.from_env()
        )
        assert outcome.stopped is None, outcome.stopped
        tkapp.sync()
        assert tkapp.ok_pressed() == TEXT
        got = clicks(tkapp, mark)
        assert [e["widget"] for e in got] == ["box", "ok"]
        for event, (x, y) in zip(got, recording.points, strict=True):
            assert abs(event["x"] - (x + 40)) <= 2 and abs(event["y"] - (y + 40)) <= 2
        placed = [c for _, s in load_steps(outcome.folder) for c in s.replay["calls"]]
        assert placed[0]["method"] == "template"
        assert placed[0]["offset"] == [40, 40]  # screen pixels, found by the crop
        dx, dy = placed[0]["model_offset"]
        assert abs(dx - 40 / 1.5) <= 1 and abs(dy - 40 / 1.5) <= 1
    finally:
        subprocess.run(["xdotool", "windowmove", str(app_window.id), "0", "0"], check=True)
        deadline = time.monotonic() + 5
        while windows.at(5, 5).id != app_window.id and time.monotonic() < deadline:
            time.sleep(0.02)
        windows.close()


@pytest.fixture
def xterm_in_front() -> Iterator[None]:
    assert shutil.which("xterm")
    proc = subprocess.Popen(
        ["xterm", "-geometry", "90x12+0+0", "-e", "sleep", "60"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    windows = Windows(XDisplay.from_env())
    try:
        deadline = time.monotonic() + 10
        while windows.at(60, 50).wm_class != "XTerm":
            assert time.monotonic() < deadline, "xterm did not appear"
            time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        windows.close()


@pytest.mark.usefixtures("xterm_in_front")
async def test_replay_stops_when_another_window_is_in_front(
    tkapp: TkApp, recording: Recording
) -> None:
    mark = tkapp.mark()
    before = pointer()
    outcome = await replay_task(recording.settings, recording.task_id, where=XDisplay.from_env())
    assert outcome.stopped is not None
    assert "not on the screen" in outcome.stopped and "not acting blind" in outcome.stopped
    assert outcome.done == 0
    tkapp.sync()
    assert [e for e in tkapp.events(since=mark) if e["kind"] in ("click", "key", "text")] == []
    assert pointer() == before
    info = json.loads((outcome.folder / "run.json").read_text())
    assert info["status"] == "failed" and "not on the screen" in info["summary"]
    [(_, step)] = load_steps(outcome.folder)
    assert step.replay is not None and step.replay["stopped"] == outcome.stopped
    assert step.calls == []


@contextmanager
def moved(dx: int) -> Iterator[None]:
    """The Tk app's window moved right by ``dx`` screen pixels, for the block."""
    windows = Windows(XDisplay.from_env())
    app_window = windows.at(5, 5)
    assert app_window.wm_class == "Tk"
    try:
        subprocess.run(["xdotool", "windowmove", str(app_window.id), str(dx), "0"], check=True)
        deadline = time.monotonic() + 5
        while windows.at(5, 5).id == app_window.id and time.monotonic() < deadline:
            time.sleep(0.02)
        yield
    finally:
        subprocess.run(["xdotool", "windowmove", str(app_window.id), "0", "0"], check=True)
        deadline = time.monotonic() + 5
        while windows.at(5, 5).id != app_window.id and time.monotonic() < deadline:
            time.sleep(0.02)
        windows.close()


FAR = 330  # screen pixels: beyond the 200 px a replay searches around the recorded point


async def test_the_model_regrounds_a_target_out_of_reach(
    tkapp: TkApp, recording: Recording, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_model.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    screen = Size(*tkapp.screen)
    model = fit_size(screen, recording.settings.max_side)
    with moved(FAR):
        box = screen_to_model(*tkapp.widget_center("box"), model, screen)
        box = (box[0] + round(FAR / 1.5), box[1])
        fake_model.script(Reply(tool_calls=[call("point", x=box[0], y=box[1])]))
        # without --model the replay refuses
        mark = tkapp.mark()
        refused = await replay_task(
            recording.settings, recording.task_id, where=XDisplay.from_env()
        )
        assert refused.stopped is not None and "not acting blind" in refused.stopped
        assert clicks(tkapp, mark) == []
        outcome = await replay_task(
            recording.settings, recording.task_id, use_model=True, where=XDisplay.from_env()
        )
        assert outcome.stopped is None, outcome.stopped
        tkapp.sync()
        assert tkapp.ok_pressed() == TEXT
    placed = [c["method"] for _, s in load_steps(outcome.folder) for c in s.replay["calls"]]
    assert placed == ["model", "window", "template"]  # OK found near where the box went
    [request] = fake_model.requests
    assert request.image_count() == 2 and set(request.tool_names) == {"point", "not_found"}


async def test_the_model_saying_not_found_stops_the_replay(
    tkapp: TkApp, recording: Recording, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_model.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    fake_model.script(Reply(tool_calls=[call("not_found", reason="no such box")]))
    with moved(FAR):
        mark = tkapp.mark()
        outcome = await replay_task(
            recording.settings, recording.task_id, use_model=True, where=XDisplay.from_env()
        )
    assert outcome.stopped is not None
    assert "neither the recording nor the model found the target" in outcome.stopped
    assert clicks(tkapp, mark) == [] and outcome.done == 0


def test_replay_with_the_model_but_no_key_says_which_variable(
    tkapp: TkApp, recording: Recording, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    mark = tkapp.mark()
    data_dir = str(recording.settings.data_dir)
    assert main(["replay", recording.task_id, "--data-dir", data_dir, "--model"]) == 1
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert clicks(tkapp, mark) == []


def _holding(settings: Settings) -> Settings:
    """The recording's settings with a rule that holds typing the recorded words."""
    approve = settings.safety.approve.model_copy(update={"text_patterns": [r"\breplayed\b"]})
    safety = settings.safety.model_copy(update={"approve": approve})
    return settings.model_copy(update={"safety": safety})


def _attended(settings: Settings, answer: Callable[[ApprovalStore, ApprovalRequested], None]):
    """A bus and a gate someone answers (``answer`` runs at each request)."""
    bus = EventBus()
    store = ApprovalStore(bus, attended=True)
    asked: list[ApprovalRequested] = []

    def on_request(event: Event) -> None:
        assert isinstance(event, ApprovalRequested)
        asked.append(event)
        answer(store, event)

    bus.subscribe(on_request, ApprovalRequested)
    return bus, ApprovalGate(settings.safety, store), asked


async def test_a_recorded_held_call_is_held_again_and_a_denial_stops_the_replay(
    tkapp: TkApp, recording: Recording
) -> None:
    settings = _holding(recording.settings)
    deny = lambda store, event: store.resolve(event.approval_id, "deny", "not again", via="tui")  # noqa: E731
    bus, gate, asked = _attended(settings, deny)
    mark = tkapp.mark()
    outcome = await replay_task(
        settings, recording.task_id, bus=bus, approvals=gate, where=XDisplay.from_env()
    )
    assert [(a.tool_name, a.arguments) for a in asked] == [("type", {"text": TEXT})]
    assert outcome.stopped is not None and "the user denied it" in outcome.stopped
    assert "not again" in outcome.stopped and outcome.done == 1  # the first click only
    tkapp.sync()
    assert [e for e in tkapp.events(since=mark) if e["kind"] in ("key", "text")] == []
    assert len(clicks(tkapp, mark)) == 1
    # allowed, the same replay goes on to the end
    tkapp.reset()
    allow = lambda store, event: store.resolve(event.approval_id, "allow_once", via="tui")  # noqa: E731
    bus, gate, asked = _attended(settings, allow)
    outcome = await replay_task(
        settings, recording.task_id, bus=bus, approvals=gate, where=XDisplay.from_env()
    )
    assert outcome.stopped is None and len(asked) == 1
    tkapp.sync()
    assert tkapp.ok_pressed() == TEXT


def test_with_nobody_to_answer_the_command_line_refuses_a_held_call(
    tkapp: TkApp, recording: Recording, tmp_path: Path, capsys
) -> None:
    """`jarvis replay` has `jarvis run`'s gate: nobody can answer, so it is refused."""
    data = recording.settings.data_dir
    config = data / "config" / "settings.json"
    saved = config.read_text() if config.exists() else None
    values = json.loads(saved) if saved else {}
    values["safety"] = {**values.get("safety", {}), "approve": {"text_patterns": ["replayed"]}}
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(values))
    try:
        mark = tkapp.mark()
        assert main(["replay", recording.task_id, "--data-dir", str(data)]) == 1
        said = capsys.readouterr().out
        assert "1/3 actions repeated; stopped:" in said and "no one can approve it" in said
        tkapp.sync()
        assert [e for e in tkapp.events(since=mark) if e["kind"] in ("key", "text")] == []
    finally:
        if saved is None:
            config.unlink()
        else:
            config.write_text(saved)


async def test_the_kill_switch_stops_a_replay(tkapp: TkApp, recording: Recording) -> None:
    """The hotkey pressed while the replay waits at a held call: cancelled, by the hotkey."""
    settings = _holding(recording.settings)

    def press(store: ApprovalStore, event: ApprovalRequested) -> None:
        subprocess.run(["xdotool", "key", "ctrl+alt+Escape"], check=True, timeout=10)

    bus, gate, asked = _attended(settings, press)
    mark = tkapp.mark()
    outcome = await asyncio.wait_for(
        replay_task(
            settings, recording.task_id, bus=bus, approvals=gate, where=XDisplay.from_env()
        ),
        30,
    )
    assert outcome.stopped == "cancelled by hotkey" and outcome.done == 1 and len(asked) == 1
    info = json.loads((outcome.folder / "run.json").read_text())
    assert info["status"] == "cancelled"
    tkapp.sync()
    typed = [e for e in tkapp.events(since=mark) if e["kind"] == "text" or e.get("char")]
    assert typed == []  # only the chord's own modifier keys reached the app
