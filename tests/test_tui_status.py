"""The cockpit's status line, help and recordings with Textual's pilot: the status line
shows the running task's tokens and cost (the verification call included), not the sum of
every run on screen; Esc closes the F1 help before it cancels anything; a recorded journal
(`jarvis tui --replay`) does not call itself live and shows its run's screenshot; cards show
the daemon's rendering of characters that do not show."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from textual.widgets._help_panel import HelpPanel

from jarvis.events import ToolCallStarted
from jarvis.tui.app import JarvisApp
from jarvis.tui.backend import ReplayBackend
from jarvis.tui.cards import ToolCard
from jarvis.tui.settings import TuiSettings
from jarvis.tui.task_runs import Verification
from tests.tui_fixtures import JOURNAL, SCREEN, journal, relabel, replay_app, task_lines, until

SIZE = (120, 40)


async def started(app: Any, pilot: Any, word: str = "live") -> None:
    await app.history_loaded.wait()
    await until(lambda: app.connection == word, pilot)
    await pilot.pause()


def status(app: Any) -> str:
    return str(app.status.render())


async def test_the_status_line_shows_the_running_task_not_the_sum_of_all_runs() -> None:
    app, backend = replay_app()  # T001 (48 in / 28 out), T002 (12 / 7), T003 (0 / 0) done
    live = relabel(task_lines("T001"), "T009", 500)
    second = next(i for i, line in enumerate(live) if line.get("step") == 2)
    step_1, rest = live[:second], live[second:]
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*step_1)  # T009 runs: its first step only
        await until(lambda: "T009 in progress" in status(app), pilot)
        [step] = [line for line in step_1 if line["kind"] == "step_finished"]
        want = f"T009 tokens {step['input_tokens']} in / {step['output_tokens']} out"
        await until(lambda: want in status(app), pilot)
        assert f"${step['cost_usd']:.4f}" in status(app)

        # the rest; its verification line carries the verification call's own usage
        for line in rest:
            if line["kind"] == "verification_finished":
                line.update(input_tokens=12, output_tokens=7, cost_usd=0.000141)
        before_end = [line for line in rest if line["kind"] != "task_finished"]
        backend.push(*before_end)
        await until(lambda: isinstance(app.cockpit.runs["T009"].items[-1], Verification), pilot)
        # 3 steps of 12 / 7 and the verification: what the task's end will say
        [end] = [line for line in rest if line["kind"] == "task_finished"]
        await until(lambda: "T009 tokens 48 in / 28 out" in status(app), pilot)
        assert (end["input_tokens"], end["output_tokens"]) == (48, 28)
        assert f"${end['cost_usd']:.4f}" in status(app)
        backend.push(end)
        await until(lambda: "idle" in status(app), pilot)
        assert "T009 tokens 48 in / 28 out" in status(app)  # the last task, not 108 in


async def test_escape_closes_the_help_and_does_not_cancel() -> None:
    app, backend = replay_app()
    live = relabel(task_lines("T001"), "T009", 500)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*live[:3])  # T009 runs
        await until(lambda: "T009 in progress" in status(app), pilot)
        await pilot.press("f1")
        await until(lambda: app.screen.query(HelpPanel), pilot)
        await pilot.press("escape")
        await until(lambda: not app.screen.query(HelpPanel), pilot)
        assert backend.cancelled == []  # the help closed; the task goes on
        await pilot.press("escape")  # now Esc is the brake again
        await until(lambda: backend.cancelled == ["T009"], pilot)


async def test_a_recorded_run_is_not_live_and_shows_its_screenshots(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run = data / "runs" / "2026-01-01" / "T001"
    (run / "steps" / "0001").mkdir(parents=True)
    (run / "steps" / "0002").mkdir(parents=True)
    lines = [line for line in journal() if line.get("task_id") == "T001"]
    (run / "events.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (run / "steps" / "0001" / "after.jpg").write_bytes(b"not the last one")
    shutil.copy(SCREEN, run / "steps" / "0002" / "after.jpg")
    backend = ReplayBackend.from_file(run / "events.jsonl")
    app = JarvisApp(backend, TuiSettings(thumbnail="halfblocks"))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot, "recorded, not live")
        assert status(app).startswith("recorded, not live · replay events.jsonl")
        assert not status(app).startswith("live")
        assert not app.status.has_class("offline")
        await until(lambda: app.side.thumb.image is not None, pilot)
        assert backend.screen_requests  # the side panel asked, and got the run's last step
        assert await backend.screen() == SCREEN.read_bytes()


def test_a_journal_without_steps_finds_its_screenshot_under_the_data_dir(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "2026-01-01" / "T001"
    run.mkdir(parents=True)
    shutil.copy(JOURNAL, run / "events.jsonl")
    shutil.copy(SCREEN, tmp_path / "screen.png")  # step_finished names "screen.png"
    backend = ReplayBackend.from_file(run / "events.jsonl")
    assert backend.recorded and backend._screen == SCREEN.read_bytes()
    outside = ReplayBackend.from_file(JOURNAL)  # no data dir around it: no picture, no error
    assert outside._screen is None


async def test_cards_show_the_daemons_rendering_of_hidden_characters() -> None:
    sneaky = "a\u200bb\U000e0001c\U0001d173d"
    event = ToolCallStarted(
        task_id="T009", call_id="c-1", tool_name="type", arguments={"text": sneaky}
    )
    shown = event.model_dump(mode="json")
    start = relabel(task_lines("T001")[:2], "T009", 500)
    app, backend = replay_app(history=[])
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*start, {**shown, "seq": 600})
        await until(lambda: app.query(ToolCard), pilot)
        card = app.query_one(ToolCard)
        want = 'type(text="a\\u{200b}b\\u{e0001}c\\u{1d173}d")'
        assert str(card.title) == f"◌ {want}"
        assert '"text": "a\\u{200b}b\\u{e0001}c\\u{1d173}d"' in str(card.body.render())
