"""`jarvis run` writes the run journal; `jarvis runs` lists runs and shows one readably."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jarvis.cli import main
from jarvis.runs.reader import list_runs, read_events
from jarvis.runs.run_info import Verdict
from tests.agent_harness import TEST_KEY
from tests.fake_model import FakeModel, Reply, call
from tests.test_cli_run import jarvis_run

VERIFIED = Reply(text='{"done": true, "reason": "the pointer moved"}', input_tokens=40)


def test_jarvis_run_writes_the_journal_and_jarvis_runs_shows_it(
    xserver: Any, fake_model: FakeModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_model.script(
        Reply(
            text="Reflection: a desktop.\nThought: move the pointer, then finish.",
            tool_calls=[call("mouse_move", x=30, y=30), call("finished", summary="moved it")],
            input_tokens=300,
            output_tokens=50,
            text_chunk=3,
        ),
        VERIFIED,
    )
    data = tmp_path / "data"
    proc = jarvis_run(xserver, fake_model, data, "move the pointer")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    [run] = list_runs(data).runs
    assert (run.status, run.channel, run.steps) == ("completed", "cli", 1)
    assert run.tokens.input_tokens == 340 and run.tokens.output_tokens == 57  # step + verification
    assert run.task == "move the pointer"
    assert run.verdict == Verdict(done=True, reason="the pointer moved")
    records = list(read_events(data / run.folder / "events.jsonl"))
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "task_started" and kinds[-1] == "task_finished"
    for kind in ("step_started", "model_text_delta", "tool_call_streaming",
                 "tool_call_started", "tool_call_finished", "step_finished",
                 "verification_finished"):  # fmt: skip
        assert kind in kinds, kind
    text = "".join(r["text"] for r in records if r["kind"] == "model_text_delta")
    assert text == "Reflection: a desktop.\nThought: move the pointer, then finish."
    streaming = [r for r in records if r["kind"] == "tool_call_streaming"]
    started = [r for r in records if r["kind"] == "tool_call_started"]
    assert [r["tool_name"] for r in streaming] == ["mouse_move", "finished"]
    assert [r["call_id"] for r in streaming] == [r["call_id"] for r in started]
    assert kinds.index("tool_call_streaming") < kinds.index("tool_call_started")
    [step] = [r for r in records if r["kind"] == "step_finished"]
    assert step["screenshot"].startswith("memory/screenshots/")
    assert (data / step["screenshot"]).is_file()
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    for path in (data / "runs").rglob("*"):
        assert not path.is_file() or TEST_KEY.encode() not in path.read_bytes()

    capsys.readouterr()
    assert main(["runs", "--data-dir", str(data)]) == 0
    listing = capsys.readouterr().out
    assert run.task_id in listing and "completed" in listing and "move the pointer" in listing
    assert "completed: moved it (verified: the pointer moved)" in listing  # the ending column

    assert main(["runs", "--data-dir", str(data), "show", run.task_id]) == 0
    shown = capsys.readouterr().out
    assert "task started: move the pointer" in shown
    assert "thought: Reflection: a desktop. Thought: move the pointer, then finish." in shown
    assert 'mouse_move {"x": 30, "y": 30}' in shown and "mouse_move ok (" in shown
    assert "verification passed: the pointer moved" in shown
    assert "task completed: moved it (1 steps)" in shown
    assert shown.count("thought:") == 1  # the coalesced pieces read as one thought

    assert main(["runs", "show", run.task_id, "--json", "--data-dir", str(data)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [r["seq"] for r in records]

    assert main(["runs", "--data-dir", str(data), "show", "T999"]) == 1
    assert "no run of T999" in capsys.readouterr().out
