"""Run records: steps/NNNN/ written by the real agent on the Tk app (scripted model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from jarvis.desktop.screen import Size, fit_size, model_to_screen
from jarvis.runs.records import crop_box
from jarvis.runs.step_file import load_steps
from jarvis.usage import Usage
from tests.agent_harness import TEST_KEY, agent_settings, model_point, run_agent
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")

SECRET = "hunter42"


def run_folders(data_dir: Path) -> list[Path]:
    return sorted(p.parent for p in (data_dir / "runs").glob("*/*/steps"))


@pytest.mark.parametrize(
    ("x", "y", "box"),
    [
        (100, 100, (52, 52, 148, 148)),
        (10, 5, (0, 0, 96, 96)),
        (1279, 719, (1184, 624, 1280, 720)),
        (640, 0, (592, 0, 688, 96)),
    ],
)
def test_crop_box_stays_inside_the_image(x: int, y: int, box: tuple[int, ...]) -> None:
    assert crop_box(x, y, 96, 1280, 720) == box


async def test_agent_writes_step_records(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, runs={"secret_patterns": [r"hunter\d+"]}
    )
    box, ok = model_point(tkapp, "box", settings), model_point(tkapp, "ok", settings)
    typed = f"pw {SECRET} key {TEST_KEY}"
    fake_model.script(
        Reply(
            text=f"Reflection: the app is open.\nThought: log in with {SECRET}.",
            tool_calls=[
                call("click", x=box[0], y=box[1]),
                call("type", text=typed),
                call("click", x=ok[0], y=ok[1]),
            ],
            input_tokens=100,
            output_tokens=20,
        ),
        Reply(text="Thought: done.", tool_calls=[call("finished", summary="typed it")]),
        Reply(text='{"done": true, "reason": "the box shows the text"}'),
    )
    outcome, _ = await run_agent(settings, "log in")
    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == typed

    [folder] = run_folders(settings.data_dir)
    assert folder.name == outcome.task_id
    steps = load_steps(folder)
    assert [s.step for _, s in steps] == [1, 2]
    (one_dir, one), (two_dir, two) = steps

    screen = Size(*tkapp.screen)
    model = fit_size(screen, settings.max_side)
    assert one.monitor.screen == (screen.width, screen.height)
    assert one.monitor.model == (model.width, model.height)
    assert one.scale == (screen.width / model.width, screen.height / model.height)
    assert [c.name for c in one.calls] == ["click", "type", "click"]
    click, typing, ok_click = one.calls
    assert click.model_points == [box]
    assert click.screen_points == [model_to_screen(*box, model, screen)]
    cx, cy = tkapp.widget_center("box")
    assert abs(click.screen_points[0][0] - cx) <= 1 and abs(click.screen_points[0][1] - cy) <= 1
    assert click.window is not None and click.window.wm_class == "Tk"
    assert click.window.box == (0, 0, screen.width, screen.height)
    assert typing.focus is not None and typing.focus.same_as(click.window)
    assert all(c.ok for c in one.calls) and all(c.latency_ms is not None for c in one.calls)
    assert one.tokens == Usage(input_tokens=100, output_tokens=20)
    assert set(one.timings_ms) >= {"capture", "model", "act", "settle"}

    # pictures: before in model space, after = the next step's before, crops around targets
    with Image.open(one_dir / "before.jpg") as before:
        assert before.size == (model.width, model.height)
    assert (one_dir / "after.jpg").is_file() and (two_dir / "after.jpg").is_file()
    assert one.phash.after == two.phash.before
    assert click.target is not None and click.target.file == "target.png"
    assert ok_click.target is not None and ok_click.target.file == "target-3.png"
    with Image.open(one_dir / "target.png") as crop:
        assert crop.size == (96, 96)
    assert click.target.box == crop_box(*click.screen_points[0], 96, screen.width, screen.height)
    assert len(click.target.phash) == 16

    # secrets: the typed key and the text matching the user's pattern never hit the disk
    assert typing.redacted and "[REDACTED]" in typing.arguments["text"]
    assert SECRET not in one.thought
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert TEST_KEY.encode() not in data, path
            assert SECRET.encode() not in data, path
    assert json.loads((one_dir / "step.json").read_text())["calls"][1]["redacted"] is True


async def test_record_steps_off_writes_no_step_folders(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, runs={"record_steps": False})
    box = model_point(tkapp, "box", settings)
    fake_model.script(
        Reply(text="Thought: click.", tool_calls=[call("click", x=box[0], y=box[1])]),
        Reply(text="Thought: done.", tool_calls=[call("finished", summary="clicked")]),
        Reply(text='{"done": true, "reason": "clicked"}'),
    )
    outcome, _ = await run_agent(settings, "click the box")
    assert outcome.status == "finished"
    assert tkapp.events("click")
    assert run_folders(settings.data_dir) == []
