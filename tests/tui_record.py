"""Record the TUI's fixture journal (tests/data/tui_journal.jsonl) from real runs.

The real agent runs on a private Xvfb against the scripted model, with the real
:class:`~jarvis.runs.journal.JournalWriter` on its bus: three tasks (finished and
verified with a tool error on the way, needs the user, cancelled while the model
streams). The lines of all three journals, in seq order, make the fixture; the
``ts`` fields are shifted to start at a fixed time so snapshots do not move.

    .venv/bin/python -m tests.tui_record
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

from tests.fake_model import FakeModel, Reply, call
from tests.xserver import start_xvfb

FIXTURE = Path(__file__).parent / "data" / "tui_journal.jsonl"
T0 = 1_795_000_000.0  # 2026-11-18, fixed so pictures are stable


async def record(data_dir: Path, fake: FakeModel) -> None:
    from jarvis.agent.factory import build_agent
    from jarvis.config import load_settings
    from jarvis.events import EventBus
    from jarvis.runs.journal import JournalWriter

    os.environ.update(
        ANTHROPIC_API_KEY="sk-test-record-0123456789",
        ANTHROPIC_BASE_URL=fake.anthropic_base_url,
    )
    settings = load_settings(data_dir, max_retries=0, settle_ceiling_ms=300, long_term_memory=False)
    bus = EventBus()
    journal = JournalWriter.for_settings(settings, bus, channel="tui")
    fake.script(
        Reply(
            text="I'll open the **notes** field first, then type the greeting.",
            tool_calls=[call("click", x=5000, y=120)],
            text_chunk=4,
        ),
        Reply(
            text="That point was off the screen. Clicking the field at its real place.",
            tool_calls=[call("click", x=420, y=310), call("type", text="hello world")],
            text_chunk=4,
        ),
        Reply(text="Typed it.", tool_calls=[call("finished", summary="Typed hello world")]),
        Reply(text='{"done": true, "reason": "The notes field shows hello world."}'),
        Reply(
            text="The login form asks for a one-time code.",
            tool_calls=[call("call_user", message="Which one-time code should I type?")],
        ),
        Reply(text="Reading the screen slowly " * 40, text_chunk=6, delay_s=0.01),
    )
    async with build_agent(settings, bus) as agent:
        await agent.run("Write hello world into the notes", task_id="T001")
        await agent.run("Log in to the mail account", task_id="T002")
        running = asyncio.create_task(agent.run("Describe the screen", task_id="T003"))
        await asyncio.sleep(1.5)
        agent.cancel()
        await running
    journal.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, start_xvfb(1280, 800, set_env=True):
        data_dir = Path(tmp) / "data"
        fake = FakeModel().start()
        try:
            asyncio.run(record(data_dir, fake))
        finally:
            fake.stop()
        lines = []
        for path in sorted((data_dir / "runs").rglob("events.jsonl")):
            lines += [json.loads(raw) for raw in path.read_text().splitlines() if raw]
    lines.sort(key=lambda line: line["seq"])
    start = lines[0]["ts"]
    for line in lines:
        line["ts"] = round(T0 + (line["ts"] - start), 3)
        if line.get("screenshot"):
            line["screenshot"] = "screen.png"
    FIXTURE.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"{len(lines)} lines -> {FIXTURE}")


if __name__ == "__main__":
    main()
