"""One vocabulary on every face (issue 41 point 4): one task that asks a question, read
through the control API, MCP's get_task, A2A's task metadata, ``jarvis runs`` and the TUI
(pilot, on the real API), all in the API's status words and shown in the words of
:mod:`jarvis.task_words`, which the web panel gets from ``GET /api/task-words``; and runs
recorded before the words were one (``running`` and ``finished`` in ``run.json`` and the
journal) read and shown in the new words."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from a2a.types import TaskState
from google.protobuf.json_format import MessageToDict
from mcp import Client

from jarvis.a2a.states import task_of
from jarvis.cli import main
from jarvis.gateway.todo_format import STATUSES as TODO_STATUSES
from jarvis.mcp_server.link import DaemonLink
from jarvis.mcp_server.shapes import STATUSES as MCP_STATUSES
from jarvis.mcp_server.tools import build_server
from jarvis.runs.folder import load_run, read_events
from jarvis.runs.reader import find_run, list_runs
from jarvis.task_words import SHOWN, STATUSES, shown, status_word
from jarvis.tui.app import JarvisApp
from jarvis.tui.cards import TaskView
from jarvis.tui.client import ApiBackend
from jarvis.tui.settings import TuiSettings
from tests.agent_harness import agent_settings
from tests.api_harness import is_step, routed, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.run_folders import write_run
from tests.tui_fixtures import until as until_in_app

QUESTION = "Which file?"
ASKS = "waiting for you"


def asks(request: RecordedRequest) -> Reply:
    return Reply(text="Thought: ask.", tool_calls=[call("call_user", message=QUESTION)])


def test_the_words_are_the_api_words_and_each_is_shown_once() -> None:
    assert STATUSES == TODO_STATUSES == MCP_STATUSES
    assert set(STATUSES) < set(SHOWN)
    assert (shown("in_progress"), shown("needs_user")) == ("in progress", ASKS)
    assert (status_word("running"), status_word("finished")) == ("in_progress", "completed")
    assert (shown("running"), shown("finished")) == ("in progress", "completed")


@pytest.mark.usefixtures("xserver")
async def test_every_face_says_the_same_words_for_one_task(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any, capsys: pytest.CaptureFixture
) -> None:
    fake_model.set_default(routed(asks))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    async with serving_api(settings) as api, api.client() as client:
        posted = await client.post("/api/messages", json={"text": "open it", "channel": "mcp"})
        assert posted.status_code == 201
        await until(lambda: any(r["kind"] == "reply_ready" for r in api.journal("T001")), 60)
        assert any(map(is_step, fake_model.requests))

        # the API: the todo, the run, the journal's ending, the words the panel shows
        [todo] = (await client.get("/api/todos")).json()["todos"]
        assert (todo["id"], todo["status"], todo["summary"]) == ("T001", "needs_user", QUESTION)
        task = (await client.get("/api/tasks/T001")).json()
        assert task["run"]["status"] == "needs_user"
        assert task["run"]["ending"] == f"{ASKS}: {QUESTION}"
        [end] = [r for r in api.journal("T001") if r["kind"] == "task_finished"]
        assert end["status"] == "needs_user"
        [run] = (await client.get("/api/runs")).json()["runs"]
        assert run["status"] == "needs_user"
        words = (await client.get("/api/task-words")).json()
        assert words == {"statuses": list(STATUSES), "shown": SHOWN}

        # MCP's get_task
        link = DaemonLink(api.data_dir, api.base, api.token)
        try:
            async with Client(build_server(link)) as mcp:
                got = await mcp.call_tool("get_task", {"task_id": "T001"})
        finally:
            await link.aclose()
        assert not got.is_error
        mcp_task = got.structured_content
        assert mcp_task is not None
        assert (mcp_task["id"], mcp_task["status"], mcp_task["summary"]) == (
            "T001",
            "needs_user",
            QUESTION,
        )
        assert mcp_task["ending"] == task["run"]["ending"]

        # A2A: the protocol's state, and Jarvis's own words in the metadata
        records = api.journal("T001")
        a2a = task_of("m-1", "ctx", api.gateway.todos.get("T001"), records)
        assert a2a.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        meta = MessageToDict(a2a.metadata)
        assert meta["jarvis"] == {
            "id": "T001",
            "title": todo["title"],
            "status": "needs_user",
            "summary": QUESTION,
        }

        # the TUI on the same API
        app = JarvisApp(ApiBackend(api.base, api.token, label="test"), TuiSettings())
        async with app.run_test(size=(120, 40)) as pilot:
            await app.history_loaded.wait()
            await until_in_app(lambda: app.conversation.view_of("T001") is not None, pilot)
            view = app.conversation.view_of("T001")
            assert view is not None and isinstance(view, TaskView)
            await until_in_app(lambda: view.query(".ending"), pilot)
            [ending] = [str(s.render()) for s in view.query(".ending")]
            assert ending.startswith(f"? {ASKS} after"), ending
            header = str(view.header.render())
            assert f"[{ASKS}]" in header, header

        data_dir = api.data_dir

    # the command line
    capsys.readouterr()
    assert main(["runs", "--data-dir", str(data_dir)]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if " T001 " in x]
    assert f" {ASKS} " in line and line.rstrip().endswith(f"{ASKS}: {QUESTION}"), line
    assert main(["runs", "--data-dir", str(data_dir), "show", "T001"]) == 0
    said = capsys.readouterr().out
    assert f"  {ASKS}, " in said and f"task {ASKS}: {QUESTION}" in said, said


def test_runs_recorded_with_the_older_words_read_in_the_new_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    runs = tmp_path / "runs" / "2026-01-01"
    old = write_run(runs / "T001", "T001", 1767225600.0, 1)  # run.json and journal: finished
    assert json.loads((old.folder / "run.json").read_text())["status"] == "finished"
    going = write_run(runs / "T002", "T002", 1767225700.0, 3)
    info = json.loads((going.folder / "run.json").read_text())
    for part in (info, *info["runs"]):
        part["status"] = "running"  # a run written by an older version, its process gone
    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    info["pid"] = int(dead.stdout)
    (going.folder / "run.json").write_text(json.dumps(info))

    ending = [r for r in read_events(old.folder / "events.jsonl") if r["kind"] == "task_finished"]
    assert [r["status"] for r in ending] == ["completed"]
    first = load_run(tmp_path, old.folder)
    assert (first.status, first.runs[0].status, first.ending) == (
        "completed",
        "completed",
        "completed: done",
    )
    assert load_run(tmp_path, going.folder).status == "interrupted"
    listed = {r.task_id: r.status for r in list_runs(tmp_path).runs}
    assert listed == {"T001": "completed", "T002": "interrupted"}

    capsys.readouterr()
    assert main(["runs", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "finished" not in out and "running" not in out, out
    assert main(["runs", "--data-dir", str(tmp_path), "show", "T001"]) == 0
    show = capsys.readouterr().out
    assert "  completed, 1 steps" in show and "task completed: done" in show, show
    assert find_run(tmp_path, "T001") == old.folder
    assert json.loads((old.folder / "run.json").read_text())["status"] == "finished"  # as is
