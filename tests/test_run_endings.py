"""How a run ended is always said: the report and ``jarvis runs`` name the ending of each
kind (completed with the summary and the verification, failed with the reason, cancelled
with who stopped it, waiting for you with the question), and the step a cancel cut short is
badged cancelled, not failed. The events go through the real JournalWriter."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from PIL import Image

from jarvis.cli import main
from jarvis.events import (
    EventBus,
    StepFinished,
    StepStarted,
    TaskFinished,
    TaskStarted,
    VerificationFinished,
)
from jarvis.runs.journal import JournalWriter
from jarvis.runs.reader import find_run, list_runs
from jarvis.runs.report import render
from jarvis.runs.run_info import RunInfo
from jarvis.runs.step_file import Monitor, StepFile, step_folder
from jarvis.task_words import shown

ENDINGS = {
    "T001": ("finished", "saved it", None, "completed: saved it (verified: it is saved)"),
    "T002": ("failed", "the window never opened", None, "failed: the window never opened"),
    "T003": ("cancelled", "cancelled by web", "web", "cancelled by web"),
    "T004": ("needs_user", "Which file?", None, "waiting for you: Which file?"),
}


def record(data: Path) -> None:
    bus = EventBus()
    journal = JournalWriter(data, bus, channel="api", model="m1")
    try:
        for task_id, (status, summary, by, _) in ENDINGS.items():
            bus.emit(TaskStarted(task_id=task_id, task=f"task {task_id}"))
            bus.emit(StepStarted(task_id=task_id, step=1))
            bus.emit(StepFinished(task_id=task_id, step=1, input_tokens=10, output_tokens=2))
            if status == "finished":
                bus.emit(VerificationFinished(task_id=task_id, done=True, reason="it is saved"))
            bus.emit(
                TaskFinished(
                    task_id=task_id,
                    status=status,
                    summary=summary,
                    steps=1,
                    stopped_by=by,
                    input_tokens=10,
                    output_tokens=2,
                )
            )
    finally:
        journal.close()
    for task_id in ENDINGS:  # each run's one step, recorded as failed (the agent's way)
        folder = find_run(data, task_id)
        assert folder is not None
        step = step_folder(folder, 1)
        step.mkdir(parents=True)
        Image.new("RGB", (64, 40), "#ddeeff").save(step / "before.jpg")
        StepFile(
            task_id=task_id,
            step=1,
            started=1.0,
            result="failed",
            thought="typing (cancelled here)" if task_id == "T003" else "it broke",
            monitor=Monitor(screen=(64, 40), model=(64, 40)),
            scale=(1.0, 1.0),
        ).save(step)


def text_of(page: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</p>', page, re.S)
    assert match is not None, element_id
    return unescape(re.sub(r"<[^>]+>", "", match[1])).strip()


def step_badge(page: str) -> str:
    match = re.search(r'<h2>Step 1 <span class="badge (\w+)">', page)
    assert match is not None
    return match[1]


@pytest.mark.parametrize("task_id", list(ENDINGS))
def test_the_report_says_how_each_kind_of_run_ended(tmp_path: Path, task_id: str) -> None:
    record(tmp_path)
    status, _, _, said = ENDINGS[task_id]
    folder = find_run(tmp_path, task_id)
    assert folder is not None
    page = render(folder)
    assert text_of(page, "ending") == f"{shown(status)} {said}"
    info = RunInfo.load(folder)
    assert info.ending == said and info.runs[0].ending == said
    if status == "cancelled":  # a person stopped it: not a failure
        assert step_badge(page) == "cancelled"
        assert 'class="step failed"' not in page
    else:
        assert step_badge(page) == "failed"
        assert 'class="step failed"' in page


def test_jarvis_runs_has_an_ending_column(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    record(tmp_path)
    capsys.readouterr()
    assert main(["runs", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    for task_id, (_, _, _, said) in ENDINGS.items():
        [line] = [line for line in lines if f" {task_id} " in line]
        assert line.rstrip().endswith(said), line
    runs = {r.task_id: r for r in list_runs(tmp_path).runs}
    assert runs["T003"].stopped_by == "web"
    assert main(["runs", "--data-dir", str(tmp_path), "show", "T003"]) == 0
    assert "task cancelled by web (1 steps)" in capsys.readouterr().out


def test_a_run_json_from_before_runs_were_kept_still_reads(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "2026-01-01" / "T009"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(
        '{"task_id": "T009", "task": "old", "status": "failed", "summary": "no window",'
        ' "steps": 2, "tokens": {"input": 40, "output": 5, "cache_read": 1}, "cost_usd": 0.5}'
    )
    [run] = list_runs(tmp_path).runs
    assert (run.tokens.input_tokens, run.tokens.output_tokens) == (40, 5)
    assert run.tokens.cache_read_tokens == 1
    assert run.run_count == 1 and run.ending == "failed: no window"
    info = RunInfo.load(folder)
    assert [p.status for p in info.runs] == ["failed"] and info.runs[0].tokens == info.tokens
