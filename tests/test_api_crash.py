"""kill -9 of `jarvis serve` in the middle of a task: the journal still parses, the run
reads as interrupted, and after a restart the API and the web panel show the task's whole
history (the interrupted run and the run that finished it)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from jarvis.runs.reader import list_runs, read_events
from tests.api_harness import NEW_TASK, VERIFIED, is_router, is_skill, is_verify
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_serve import jarvis, serve_env, wait_until
from tests.test_web_panel import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


class Model:
    def __init__(self) -> None:
        self.hold = threading.Event()
        self.crashed = False
        self.steps = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if is_verify(request):
            return VERIFIED
        if is_skill(request):
            return Reply(text="1. Do it.")
        self.steps += 1
        if not self.crashed and self.steps == 1:
            return Reply(
                text="Thought: before the crash.", tool_calls=[call("mouse_move", x=9, y=9)]
            )
        if not self.crashed:  # step 2 hangs mid-answer until the daemon is killed
            return Reply(text="Thought: this answer never ends", hold=self.hold, hold_after=5)
        return Reply(
            text="Thought: after the restart.", tool_calls=[call("finished", summary="ok")]
        )


def start(env: dict[str, str], data: Path, out: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """`jarvis serve` on a free port; returns the process, the base URL and the login URL."""
    sink = out.open("w")
    daemon = subprocess.Popen(
        jarvis("serve", "--data-dir", str(data), "--poll", "0.2"),
        env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
    )  # fmt: skip
    sink.close()
    try:
        wait_until(lambda: "one-time login" in out.read_text() or daemon.poll() is not None, 60)
        assert daemon.poll() is None, out.read_text()
        text = out.read_text()
        base = re.search(r"control API on (http://127\.0\.0\.1:\d+)/api", text)
        login = re.search(r"one-time login: (\S+)", text)
        assert base and login, text
    except BaseException:  # a daemon that never said where it listens is not left running
        daemon.kill()
        daemon.wait()
        raise
    return daemon, base.group(1), login.group(1)


async def test_kill_9_mid_task_leaves_a_journal_that_parses_and_the_history_after_restart(
    xserver: Any, tmp_path: Path, fake_model: FakeModel
) -> None:
    from playwright.async_api import async_playwright, expect

    model = Model()
    fake_model.set_default(model)
    env = serve_env(xserver, fake_model) | {"JARVIS_SETTLE_CEILING_MS": "200"}
    data = tmp_path / "data"
    daemon, base, _ = start(env, data, tmp_path / "serve1.out")
    try:
        token = (data / "config" / "api_token").read_text().strip()
        auth = {"authorization": f"Bearer {token}"}
        posted = httpx.post(f"{base}/api/messages", json={"text": "move then hang"}, headers=auth)
        assert posted.status_code == 201
        wait_until(lambda: model.steps >= 2 and journal_has(data, "this an"), 60)
        os.kill(daemon.pid, signal.SIGKILL)
        daemon.wait(10)
    finally:
        if daemon.poll() is None:
            daemon.kill()
        model.hold.set()
    journals = list((data / "runs").rglob("events.jsonl"))
    assert len(journals) == 1
    lines = journals[0].read_bytes().splitlines()
    records = list(read_events(journals[0]))
    assert len(records) >= len(lines) - 1  # at most a torn last line
    assert [r["seq"] for r in records] == sorted({r["seq"] for r in records})
    assert "task_finished" not in [r["kind"] for r in records]
    [run] = list_runs(data).runs
    assert run.status == "interrupted" and run.task_id == "T001"
    first_run = [r["seq"] for r in records]

    model.crashed = True
    daemon, base, login = start(env, data, tmp_path / "serve2.out")
    try:
        token = (data / "config" / "api_token").read_text().strip()
        auth = {"authorization": f"Bearer {token}"}
        wait_until(lambda: list(read_events(journals[0]))[-1]["kind"] == "reply_ready", 60)
        task = httpx.get(f"{base}/api/tasks/T001", headers=auth).json()
        seqs = [e["seq"] for e in task["events"]]
        assert seqs[: len(first_run)] == first_run and len(seqs) > len(first_run)
        kinds = [e["kind"] for e in task["events"]]
        assert kinds.count("task_started") == 2 and kinds[-2:] == ["task_finished", "reply_ready"]
        assert task["todo"]["status"] == "completed"
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(login)
            message = page.locator("#message")
            await expect(message).to_contain_text("before the crash")
            await expect(message).to_contain_text("after the restart")
            await expect(page.locator("#summary")).to_contain_text("completed: ok")
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "panel-5-restart.png"))
            await browser.close()
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)


def journal_has(data: Path, text: str) -> bool:
    return any(text in json.dumps(list(read_events(p))) for p in (data / "runs").rglob("*.jsonl"))
