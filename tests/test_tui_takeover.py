"""The cockpit and the takeover (no VNC in a terminal): the status line says who holds the
screen, from the journal's takeover lines; ctrl+t pauses the agent (the TUI takes the
screen) and, while someone holds it, resumes it."""

from __future__ import annotations

import time
from typing import Any

from textual.widgets import Static

from jarvis.tui.hold import ResumeNote, TakeItOver
from tests.tui_fixtures import relabel, replay_app, task_lines, until

SIZE = (160, 40)


def status_text(app: Any) -> str:
    return str(app.status.render())


async def test_the_status_shows_who_holds_the_screen_and_ctrl_t_pauses_and_resumes() -> None:
    app, backend = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.history_loaded.wait()
        await until(lambda: app.connection == "live", pilot)
        backend.push(*relabel(task_lines("T003")[:5], "T011", 200))
        await until(lambda: app.cockpit.running is not None, pilot)
        assert "has the screen" not in status_text(app)
        await pilot.press("ctrl+t")  # nobody holds it: pause
        await until(lambda: backend.takeovers == ["pause"], pilot)
        now = time.time()
        started = {"seq": 300, "ts": now, "kind": "takeover_started", "task_id": "T011"}
        backend.push(started | {"by": "web"})
        await until(lambda: "web has the screen (agent paused)" in status_text(app), pilot)
        await pilot.press("ctrl+t")  # web holds it: asked first, and "n" leaves it
        await until(lambda: isinstance(app.screen, TakeItOver), pilot)
        assert "web has the screen: take it over?" in str(app.screen.query_one(Static).render())
        await pilot.press("n")
        await until(lambda: not isinstance(app.screen, TakeItOver), pilot)
        assert backend.takeovers == ["pause"]
        await pilot.press("ctrl+t", "y")  # asked again; "y" takes the hold over
        await until(lambda: backend.takeovers == ["pause", "take over"], pilot)
        ended = {"seq": 301, "ts": now + 2, "kind": "takeover_ended", "task_id": "T011"}
        backend.push(
            ended | {"by": "web", "reason": "taken_over", "ended_by": "tui", "held_s": 2.0},
            started | {"seq": 302, "by": "tui"},
        )
        await until(lambda: "tui has the screen (agent paused)" in status_text(app), pilot)
        await pilot.press("ctrl+t")  # its own hold: resume, with a note for the model
        await until(lambda: isinstance(app.screen, ResumeNote), pilot)
        await pilot.press(*"logged in", "enter")
        await until(lambda: backend.takeovers[-1] == "resume: logged in", pilot)
        ended = ended | {"seq": 303, "by": "tui", "note": "logged in", "reason": "handed_back"}
        backend.push(ended)
        await until(lambda: "has the screen" not in status_text(app), pilot)
        assert app.cockpit.running is not None  # the task goes on
