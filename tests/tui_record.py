"""Record the TUI's fixture journal (tests/data/tui_journal.jsonl) from real runs.

The real agent runs on a private Xvfb against the scripted model, with the real
:class:`~jarvis.runs.journal.JournalWriter` on its bus: three tasks (finished and
verified with a tool error on the way, needs the user, cancelled while the model
streams). The lines of all three journals, in seq order, make the fixture; the
``ts`` fields are shifted to start at a fixed time so snapshots do not move.

``approvals`` records tests/data/tui_approvals.jsonl instead: one task whose held calls
are allowed once, denied with a note, and left unanswered until the deadline (a person
answers through the approval store, as the control API does), with a cost and a token
budget, so ``budget_used`` lines are in it too.

    .venv/bin/python -m tests.tui_record [approvals]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from jarvis.desktop.x11 import XDisplay
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp
from tests.xserver import start_xvfb

FIXTURE = Path(__file__).parent / "data" / "tui_journal.jsonl"
APPROVALS_FIXTURE = Path(__file__).parent / "data" / "tui_approvals.jsonl"
ANSWERS: list[tuple[str, str] | None] = [("allow_once", ""), ("deny", "not my projects"), None]
"""How the person answers the three held calls of the approvals recording."""
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
    async with build_agent(settings, bus, where=XDisplay.from_env()) as agent:
        await agent.run("Write hello world into the notes", task_id="T001")
        await agent.run("Log in to the mail account", task_id="T002")
        running = asyncio.create_task(agent.run("Describe the screen", task_id="T003"))
        await asyncio.sleep(1.5)
        agent.cancel()
        await running
    journal.close()


async def record_approvals(data_dir: Path, fake: FakeModel) -> None:
    from jarvis.agent.factory import build_agent
    from jarvis.config import load_settings
    from jarvis.events import ApprovalRequested, Event, EventBus
    from jarvis.runs.journal import JournalWriter
    from jarvis.safety.approvals import ApprovalGate, ApprovalStore

    os.environ.update(
        ANTHROPIC_API_KEY="sk-test-record-0123456789",
        ANTHROPIC_BASE_URL=fake.anthropic_base_url,
    )
    safety = {"approval_timeout_s": 1.0, "max_cost_usd": 0.1, "max_tokens_total": 20000}
    settings = load_settings(
        data_dir, max_retries=0, settle_ceiling_ms=300, long_term_memory=False, safety=safety
    )
    bus = EventBus()
    journal = JournalWriter.for_settings(settings, bus, channel="tui")
    store = ApprovalStore(bus, attended=True)
    answers = list(ANSWERS)

    def person(event: Event) -> None:  # answers a moment later, as a person would
        answer = answers.pop(0)
        if answer is not None and isinstance(event, ApprovalRequested):
            asyncio.get_running_loop().call_later(0.3, store.resolve, event.approval_id, *answer)

    bus.subscribe(person, ApprovalRequested)
    spend: dict[str, Any] = {"input_tokens": 2000, "output_tokens": 200}
    app = TkApp.start()
    try:
        x, y = app.widget_center("box")  # a 1280x800 screen is the model's space too
        fake.script(
            Reply(
                text="Clearing the scratch folder from the terminal.",
                tool_calls=[call("click", x=x, y=y), call("type", text="sudo rm -rf /tmp/x")],
                **spend,
            ),
            Reply(
                text="And the old projects too.",
                tool_calls=[call("type", text="rm -rf ~/projects")],
                **spend,
            ),
            Reply(text="Closing the window.", tool_calls=[call("hotkey", keys="alt+f4")], **spend),
            Reply(tool_calls=[call("finished", summary="Cleared /tmp/x")], **spend),
            Reply(text='{"done": true, "reason": "The command is typed in the box."}'),
        )
        gate = ApprovalGate(settings.safety, store)
        async with build_agent(settings, bus, approvals=gate, where=XDisplay.from_env()) as agent:
            await agent.run("Clear the scratch folder", task_id="T005")
    finally:
        app.close()
    journal.close()


def main() -> None:
    approvals = sys.argv[1:] == ["approvals"]
    recorder: Callable[[Path, FakeModel], Awaitable[None]] = (
        record_approvals if approvals else record
    )
    fixture = APPROVALS_FIXTURE if approvals else FIXTURE
    with tempfile.TemporaryDirectory() as tmp, start_xvfb(1280, 800, set_env=True):
        data_dir = Path(tmp) / "data"
        fake = FakeModel().start()
        try:
            asyncio.run(recorder(data_dir, fake))
        finally:
            fake.stop()
        lines = []
        for path in sorted((data_dir / "runs").rglob("events.jsonl")):
            lines += [json.loads(raw) for raw in path.read_text().splitlines() if raw]
    lines.sort(key=lambda line: line["seq"])
    start = lines[0]["ts"]
    for line in lines:
        line["ts"] = round(T0 + (line["ts"] - start), 3)
        if line.get("expires_at"):
            line["expires_at"] = round(T0 + (line["expires_at"] - start), 3)
        if line.get("screenshot") and line["kind"] != "approval_requested":
            line["screenshot"] = "screen.png"
    fixture.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"{len(lines)} lines -> {fixture}")


if __name__ == "__main__":
    main()
