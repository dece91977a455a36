"""End to end: an authenticated mail from an allowlisted sender, confirmed by code, runs on
the Tk app under `serve` (the gateway with the email channel on, the scripted model, Xvfb);
the task asks a question by mail, the emailed answer goes back into that task, and the
result arrives on the thread (In-Reply-To, References, Re: subject)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from jarvis.config import load_settings
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, EventRecorder, ReplyReady
from jarvis.gateway.gateway import Gateway, GatewayOptions
from jarvis.gateway.todos import TodoList
from tests.agent_harness import agent_settings, model_point
from tests.email_mail import ALICE, JARVIS, headers, mail, new_id
from tests.email_servers import PASSWORD, Dovecot, SmtpSink
from tests.email_setup import dovecot, email_values, smtp, write_whitelist
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.test_serve import is_router, is_step, responder, task_of, until
from tests.tkdriver import TkApp

__all__ = ["dovecot", "fake_model_fixture", "smtp"]

CODE = re.compile(r"\b[A-Z2-9]{4}-[A-Z2-9]{4}\b")
SUMMARY = "typed page 3 into the box and pressed OK"


async def test_a_confirmed_mail_runs_asks_by_mail_and_answers_on_the_thread(
    xserver: Any,
    tkapp: TkApp,
    tmp_path: Path,
    fake_model: FakeModel,
    dovecot: Dovecot,
    smtp: SmtpSink,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=300)
    monkeypatch.setenv("JARVIS_EMAIL_PASSWORD", PASSWORD)
    write_whitelist(base.data_dir, "confirm")
    settings = load_settings(
        base.data_dir,
        provider="anthropic",
        max_retries=0,
        settle_ceiling_ms=300,
        long_term_memory=False,
        email=email_values(dovecot, smtp),
    )
    box, ok = model_point(tkapp, "box", settings), model_point(tkapp, "ok", settings)
    acted = [False]

    def step(request: RecordedRequest) -> Reply:
        if "Which page?" not in task_of(request) and "page 3" not in task_of(request):
            return Reply(
                text="Thought: ask.", tool_calls=[call("call_user", message="Which page?")]
            )
        if "page 3" in task_of(request) and not acted[0]:
            acted[0] = True
            return Reply(
                text="Thought: type it.",
                tool_calls=[
                    call("click", x=box[0], y=box[1]),
                    call("type", text="page 3"),
                    call("click", x=ok[0], y=ok[1]),
                ],
            )
        return Reply(text="Thought: done.", tool_calls=[call("finished", summary=SUMMARY)])

    fake_model.set_default(responder(step))
    bus = EventBus()
    events = EventRecorder(bus)
    gateway = Gateway(
        settings,
        bus,
        options=GatewayOptions(poll_interval_s=0.2, settle_s=0.2),
        where=XDisplay.from_env(),
    )
    serving = asyncio.create_task(gateway.run())
    todos = TodoList(settings.data_dir)
    original = new_id()
    try:
        await until(gateway.ready.is_set)
        assert gateway.email is not None
        await until(gateway.email.fetcher.connected.is_set, timeout=15)
        dovecot.deliver(
            mail(
                headers(Message_ID=original, Subject="Print the report"),
                body="Please type the page I name into the test app.\n",
            )
        )
        [ask] = await asyncio.to_thread(smtp.wait_for, 1, 60)
        [code] = CODE.findall(ask.get_content())
        assert todos.all() == []
        dovecot.deliver(
            mail(
                headers(
                    Subject="Re: Print the report",
                    In_Reply_To=ask["Message-ID"],
                    References=f"{original} {ask['Message-ID']}",
                ),
                body=f"{code}\n",
            )
        )
        question = (await asyncio.to_thread(smtp.wait_for, 2, 60))[1]
        assert "Which page?" in question.get_content()
        assert question["In-Reply-To"] == original
        answer = new_id()
        dovecot.deliver(
            mail(
                headers(
                    Message_ID=answer,
                    Subject="Re: Print the report",
                    In_Reply_To=question["Message-ID"],
                    References=f"{original} {question['Message-ID']}",
                ),
                body="page 3\n\nOn Monday Jarvis wrote:\n> Which page?\n",
            )
        )
        done = (await asyncio.to_thread(smtp.wait_for, 3, 60))[2]
    finally:
        gateway.stop()
        await asyncio.wait_for(serving, timeout=30)

    assert tkapp.ok_pressed() == "page 3"
    [todo] = todos.all()
    assert (todo.status, todo.summary, todo.source) == ("completed", SUMMARY, "email")
    assert len(todo.message_ids) == 2  # the task's mail and the answer, one task
    assert todo.title == "Email: Print the report"
    assert not any(is_router(r) for r in fake_model.requests)  # mail is never merged
    assert (done["From"], done["To"], done["Subject"]) == (JARVIS, ALICE, "Re: Print the report")
    assert done["In-Reply-To"] == answer
    assert original in done["References"] and answer in done["References"]
    assert SUMMARY in done.get_content() and "Done" in done.get_content()
    assert [r.status for r in events.of(ReplyReady)] == ["needs_user", "completed"]
    steps = [task_of(r) for r in fake_model.requests if is_step(r)]
    assert "<<<EMAIL\nPlease type the page I name into the test app.\nEMAIL>>>" in steps[0]
    assert "<<<EMAIL\npage 3\nEMAIL>>>" in steps[-1]  # the quoted question was cut
    assert len(smtp.messages) == 3
