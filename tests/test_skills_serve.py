"""`jarvis serve` with a skills folder: a good skill, a broken one and one changed while the
daemon runs (picked up without a restart); and the channel policy on real tasks: a task
that came by email is not offered write_file. The agent runs for real on Xvfb; only the
model is scripted."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, EventRecorder, ToolCallFinished
from jarvis.gateway.gateway import Gateway, GatewayOptions
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.runner import EmbeddedRunner
from tests.agent_harness import agent_settings
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_serve import archived_today, finish, is_step, responder, until
from tests.test_skills import GOOD, VERSIONED


def step(request: RecordedRequest) -> Reply:
    """Call `which` once, then finish with what it said."""
    text = request.all_text()
    if '"version"' in text:
        return finish("which answered")
    return Reply(text="Thought: ask the skill.", tool_calls=[call("which")])


async def test_skills_load_break_and_reload_while_serving(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(
        tmp_path,
        fake_model,
        monkeypatch,
        settle_ceiling_ms=300,
        toolbox={"skills": {"reload_interval_s": 0.1}},
    )
    skills = settings.data_dir / "skills"
    skills.mkdir(parents=True)
    (skills / "good_skill.py").write_text(GOOD)
    (skills / "broken_skill.py").write_text("import no_such_module_for_jarvis\n")
    versioned = skills / "version_skill.py"
    versioned.write_text(VERSIONED.format(name="which", version=1))
    queue = MessageQueue(settings.data_dir)
    fake_model.set_default(responder(step))
    bus = EventBus()
    events = EventRecorder(bus)
    gateway = Gateway(
        settings,
        bus,
        options=GatewayOptions(poll_interval_s=0.1, settle_s=0.05),
        where=XDisplay.from_env(),
    )
    run = asyncio.create_task(gateway.run())
    try:
        await until(gateway.ready.is_set)
        queue.append("run which")
        await until(lambda: len(archived_today(queue)) == 1)
        assert isinstance(gateway.runner, EmbeddedRunner)
        registry = gateway.runner.worker.agent.cerebellum.registry  # type: ignore[attr-defined]
        old = registry.get("which")

        versioned.write_text(VERSIONED.format(name="which", version=2))
        stat = versioned.stat()
        os.utime(versioned, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        await until(lambda: registry.get("which") not in (None, old))
        queue.append("run which again")
        await until(lambda: len(archived_today(queue)) == 2)

        queue.append("run which by mail", sender="ada@example.com", channel="email")
        await until(lambda: len(archived_today(queue)) == 3)
    finally:
        gateway.stop()
        await asyncio.wait_for(run, timeout=20)

    answers = [e.data for e in events.of(ToolCallFinished) if e.tool_name == "which"]
    assert answers == [{"version": 1}, {"version": 2}, {"version": 2}]
    steps = [r for r in fake_model.requests if is_step(r)]
    offered = set(steps[0].tool_names)
    assert {"shout", "whisper", "which", "read_file", "write_file", "web_fetch"} <= offered
    assert "no_such_module" not in json.dumps(steps[0].tools)
    by_mail = [r for r in steps if "run which by mail" in r.all_text()]
    assert by_mail and all("write_file" not in r.tool_names for r in by_mail)
    assert all("read_file" in r.tool_names for r in by_mail)
    assert [m.outcome for m in archived_today(queue)] == ["completed"] * 3
