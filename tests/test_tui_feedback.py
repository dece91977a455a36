"""Feedback the moment Enter is pressed (issue 41 point 6): the TUI shows the sent message
at once (``sending…``, ``sent · routing…``), then the task it became; with a model that
cannot be reached, the model's trouble is on the status line at its first retry (the
router then files the message as a new task without the model). A real gateway and API;
only the model is replaced (or, here, missing)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from jarvis.tui.launcher import free_port
from tests.agent_harness import agent_settings
from tests.fake_model import FakeModel
from tests.test_tui_e2e import cockpit, finish, gateway_on, model, settings_for
from tests.tui_fixtures import until

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]
SIZE = (120, 40)
LONG = "open the notes and write down what the whole team said in the meeting this morning"


def note(app: Any) -> str:
    return str(app.sent.render()) if app.sent.display else ""


@pytest.mark.serial  # shown within 1 s of the key press
async def test_a_sent_message_shows_at_once_then_the_task_it_became(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(model([finish("done")]))
    settings = settings_for(tmp_path, fake_model, monkeypatch)
    async with gateway_on(settings, free_port()) as service:
        app = cockpit(service)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.connection == "live", pilot, 30)
            await pilot.press(*LONG, "enter")
            pressed = time.monotonic()
            await until(lambda: "open the notes" in note(app), pilot, 5)
            assert time.monotonic() - pressed < 1.0, "the sent message took over 1 s to show"
            assert "sending" in note(app) or "routing" in note(app) or "T001" in note(app)
            # the message is cut, not the task it became (the side panel takes its columns)
            await until(lambda: "became T001" in note(app), pilot, 60)
            assert note(app).startswith("› open the notes") and "…" in note(app)
            assert len(note(app)) + 2 <= app.sent.size.width


async def test_an_unreachable_model_is_on_the_status_line_at_its_first_retry(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, max_retries=1)
    closed = free_port()  # nothing listens there
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed}")
    async with gateway_on(settings, free_port()) as service:
        app = cockpit(service)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.connection == "live", pilot, 30)
            await pilot.press(*"say hello", "enter")
            await until(lambda: "⚠ model:" in str(app.status.render()), pilot, 30)
            assert "retry 1" in str(app.status.render())
            # the router gives up on the model and files the message as a new task
            await until(lambda: "became T001" in note(app), pilot, 60)
            assert "say hello" in note(app)
    assert not fake_model.requests  # no model was reached


async def test_a_routing_failure_of_the_sent_message_is_its_note() -> None:
    """The router's ``routing_failed`` for this message (its key refused) ends the note."""
    from textual.app import App, ComposeResult

    from jarvis.tui.sent import SentNote

    sent = SentNote()

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield sent

    async with One().run_test():
        sent.sending("say hello")
        sent.sent("m-1")
        sent.took({"kind": "routing_failed", "message_id": "m-2", "error": "other"})
        assert "routing" in str(sent.render())
        line = {"kind": "routing_failed", "message_id": "m-1", "error": "HTTP 401",
                "retry_in_s": 30}  # fmt: skip
        sent.took(line)
        shown = str(sent.render())
        assert "not routed: HTTP 401" in shown and "next try in 30 s" in shown
        assert sent.has_class("trouble")
