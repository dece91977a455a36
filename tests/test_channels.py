"""Channels as plugins with one policy block each (``channels.NAME``), and a router that
does not hide its failures.

A third-party channel is a package on ``sys.path`` with a ``*.dist-info/entry_points.txt``
in the ``jarvis.channels`` group (no pip install): the real daemon loads it through
importlib.metadata, it hands in a message, its block narrows the task's tools, and it gets
the task's reply. A bridge in another process is a channel through ``POST /api/messages``.
The agent runs on Xvfb; only the model is scripted (a loopback server behind the real SDK).
"""

from __future__ import annotations

import asyncio
import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jarvis.config import ConfigError, load_settings
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, EventRecorder, RoutingFailed
from jarvis.gateway.channels.registry import ChannelRefused, Channels
from jarvis.gateway.gateway import Gateway, GatewayOptions
from jarvis.safety.approvals import ApprovalError, ApprovalGate, ApprovalStore
from jarvis.safety.channel_display import sandboxed
from jarvis.tools.policy import Policy
from tests.agent_harness import agent_settings
from tests.api_harness import finish, is_router, routed, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

PLUGIN = '''
import json
from pathlib import Path


class TestChannel:
    """Hands in one message when started; writes each reply it gets to a file."""

    name = "testchan"

    def __init__(self, settings):
        self.out = Path(settings.data_dir) / "testchan-replies.jsonl"
        self.started = False

    async def start(self, host):
        self.started = True
        await host.submit(
            "Write a note for the team", channel=self.name, sender="ada", reply_to="room-7"
        )

    async def stop(self):
        self.started = False

    async def deliver(self, reply):
        with self.out.open("a", encoding="utf-8") as file:
            file.write(json.dumps(reply.model_dump(mode="json")) + "\\n")
'''


def write_settings(data_dir: Path, values: dict[str, Any]) -> None:
    path = data_dir / "config" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values), encoding="utf-8")


def plugin_package(root: Path) -> Path:
    """A package that importlib.metadata finds once ``root`` is on sys.path."""
    (root / "jarvis_testchan").mkdir(parents=True)
    (root / "jarvis_testchan" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    info = root / "jarvis_testchan-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jarvis-testchan\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[jarvis.channels]\ntestchan = jarvis_testchan:TestChannel\n"
    )
    return root


# --- settings: the block, the old keys, what is never allowed -------------------------
def test_old_keys_still_work_with_one_line_each_naming_the_new_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_settings(
        tmp_path,
        {
            "tools": {"per_channel": {"kiosk": {"deny": ["write_file"]}}},
            "safety": {
                "approve_per_channel": {"kiosk": {"tools": ["click"]}},
                "unattended": ["kiosk"],
                "sandbox": {"channels": ["kiosk"]},
            },
        },
    )
    with caplog.at_level(logging.WARNING, logger="jarvis.config"):
        settings = load_settings(tmp_path)
    lines = [r.getMessage() for r in caplog.records if r.name == "jarvis.config"]
    assert lines == [
        "settings: tools.per_channel is deprecated and read for one release only; "
        "use channels.NAME.tools",
        "settings: safety.approve_per_channel is deprecated and read for one release only; "
        "use channels.NAME.approve",
        "settings: safety.unattended is deprecated and read for one release only; "
        "use channels.NAME.unattended",
        "settings: safety.sandbox.channels is deprecated and read for one release only; "
        "use channels.NAME.private_display",
    ]
    policy = Policy.for_settings(settings)
    assert policy.deny_reason("write_file", None, channels=["kiosk"]) == (
        "tool 'write_file' is denied by policy for tasks from channel 'kiosk'"
    )
    assert policy.deny_reason("write_file", None, channels=["tui"]) is None
    gate = ApprovalGate(settings.safety, ApprovalStore(EventBus()), channels=settings.channels)
    held = gate.held("click", {"x": 1, "y": 2}, ("kiosk",))
    assert held is not None and held.rule.startswith("kiosk:")
    assert gate.held("click", {"x": 1, "y": 2}, ("tui",)) is None
    assert gate.runs_unattended(("kiosk",)) and not gate.runs_unattended(("tui",))
    assert sandboxed(settings, ("kiosk", "tui")) == ["kiosk"]


def test_a_channels_block_narrows_and_its_own_part_wins(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_settings(
        tmp_path,
        {
            "tools": {"per_channel": {"kiosk": {"deny": ["write_file"]}}},
            "channels": {
                "kiosk": {"tools": {"allow": ["click", "write_file"]}, "unattended": True},
                "email": {"approve": {"text_patterns": ["invoice"]}, "private_display": True},
            },
        },
    )
    with caplog.at_level(logging.WARNING, logger="jarvis.config"):
        settings = load_settings(tmp_path)
    assert [r.getMessage().split(" is ")[0] for r in caplog.records] == [
        "settings: tools.per_channel"
    ]
    policy = Policy.for_settings(settings)
    assert policy.allowed("write_file", None, channels=["kiosk"])  # the block's allow list won
    assert policy.deny_reason("type", None, channels=["kiosk"]) == (
        "tool 'type' is not in the allow list for tasks from channel 'kiosk'"
    )
    gate = ApprovalGate(settings.safety, ApprovalStore(EventBus()), channels=settings.channels)
    assert gate.runs_unattended(("kiosk",))
    held = gate.held("type", {"text": "pay the invoice"}, ("email",))
    assert held is not None and "for tasks from email" in held.reason
    assert sandboxed(settings, ("email",)) == ["email"]
    # email keeps its default tool lists: its block sets no tools
    assert policy.deny_reason("write_file", None, channels=["email"]) is not None


@pytest.mark.parametrize("channel", ["email", "a2a", "mcp"])
def test_a_file_that_lets_email_a2a_or_mcp_approve_is_refused(tmp_path: Path, channel: str) -> None:
    write_settings(tmp_path, {"channels": {channel: {"may_approve": True}}})
    with pytest.raises(ConfigError) as refused:
        load_settings(tmp_path)
    said = str(refused.value)
    assert "\n" not in said and f"channels.{channel}.may_approve cannot be true" in said
    write_settings(tmp_path, {"channels": {"email": {"unattended": True}}})
    with pytest.raises(ConfigError, match=r"channels\.email\.unattended cannot be true"):
        load_settings(tmp_path)


def test_may_approve_false_refuses_answers_by_that_channel(tmp_path: Path) -> None:
    write_settings(tmp_path, {"channels": {"api": {"may_approve": False}}})
    gateway = Gateway(load_settings(tmp_path), where=XDisplay.from_env())
    for via in ("api", "email", "a2a", "mcp"):
        with pytest.raises(ApprovalError, match=f"approvals cannot be given by {via}"):
            gateway.approvals.resolve("a-000000000000", "allow_once", via=via)
    with pytest.raises(ApprovalError, match="no pending approval"):  # web may answer
        gateway.approvals.resolve("a-000000000000", "allow_once", via="web")


def test_rate_limit_and_unknown_channels(tmp_path: Path) -> None:
    write_settings(
        tmp_path, {"channels": {"slack": {"rate_limit": {"max_messages": 2, "window_s": 60}}}}
    )
    now = [100.0]
    channels = Channels(load_settings(tmp_path), EventBus(), clock=lambda: now[0])
    channels.admit("slack")
    channels.admit("slack")
    with pytest.raises(ChannelRefused, match="rate limited: 2 message") as limited:
        channels.admit("slack")
    assert limited.value.retry_after_s == pytest.approx(60.0)
    now[0] += 60.0
    channels.admit("slack")  # the window moved on
    channels.admit("tui")  # built in, no limit
    with pytest.raises(ChannelRefused, match="unknown channel 'matrix'") as unknown:
        channels.admit("matrix")
    assert unknown.value.retry_after_s is None
    for own in ("email", "inbox"):  # never passed off through the API
        with pytest.raises(ChannelRefused, match=f"channel '{own}' takes its messages itself"):
            channels.admit(own, by_api=True)
        channels.admit(own)


# --- the daemon: a plugin channel, a bridge, and the router's failures -----------------
@pytest.mark.usefixtures("xserver")
async def test_a_plugin_channel_gets_its_reply_and_its_block_narrows_its_tools(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(plugin_package(tmp_path / "site")))
    data = tmp_path / "data"
    write_settings(
        data,
        {
            "channels": {
                "testchan": {"tools": {"deny": ["write_file"]}},
                "slack": {"rate_limit": {"max_messages": 1, "window_s": 3600}},
            }
        },
    )
    steps: dict[str, int] = {}

    def step(request: RecordedRequest) -> Reply:
        task = "note" if "Write a note" in request.all_text() else "bridge"
        steps[task] = steps.get(task, 0) + 1
        if task == "note" and steps[task] == 1:
            return Reply(
                text="Thought: write it.",
                tool_calls=[call("write_file", path="note.txt", content="hello team")],
            )
        return finish(f"{task} done")

    fake_model.set_default(routed(step))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    replies = settings.data_dir / "testchan-replies.jsonl"
    async with serving_api(settings) as api, api.client() as client:
        plugin = api.gateway.channels.get("testchan")
        assert plugin is not None and plugin.started  # type: ignore[attr-defined]
        await until(lambda: replies.exists(), 60)
        sent = await client.post(
            "/api/messages",
            json={"text": "Say hi in the channel", "channel": "slack", "reply_to": "C042/thread-9"},
        )
        assert sent.status_code == 201, sent.text
        again = await client.post("/api/messages", json={"text": "more", "channel": "slack"})
        assert again.status_code == 429 and "rate limited" in again.json()["detail"]
        assert int(again.headers["retry-after"]) > 3000
        unknown = await client.post("/api/messages", json={"text": "x", "channel": "matrix"})
        assert unknown.status_code == 422 and "unknown channel 'matrix'" in unknown.text
        posing = await client.post("/api/messages", json={"text": "x", "channel": "testchan"})
        assert posing.status_code == 422 and "takes its messages itself" in posing.text

        def bridge_reply() -> list[dict[str, Any]]:
            return [
                r
                for r in api.journal()
                if r["kind"] == "reply_ready" and r.get("channel") == "slack"
            ]

        await until(bridge_reply, 60)
        journal = api.journal()
    [reply] = [json.loads(line) for line in replies.read_text().splitlines()]
    assert reply["channel"] == "testchan" and reply["reply_to"] == "room-7"
    assert reply["status"] == "completed" and reply["text"] == "note done"
    todo = api.gateway.todos.get(reply["task_id"])
    assert todo is not None and todo.source == "testchan"
    [denied] = [
        r for r in journal if r["kind"] == "tool_call_finished" and r["tool_name"] == "write_file"
    ]
    assert denied["ok"] is False and denied["error_code"] == -32006
    assert "for tasks from channel 'testchan'" in denied["error_message"]
    assert not (settings.data_dir / "workspace" / "note.txt").exists()
    [bridged] = bridge_reply()
    assert bridged["reply_to"] == "C042/thread-9" and bridged["status"] == "completed"
    assert not plugin.started  # type: ignore[attr-defined]  # stopped with the daemon


@pytest.mark.usefixtures("xserver")
async def test_a_router_auth_error_is_shown_and_the_message_waits_in_the_inbox(
    tmp_path: Path,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    refuse = [True]

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request) and refuse[0]:
            return Reply.unauthorized()
        return routed(lambda _r: finish("said hello"))(request)

    fake_model.set_default(answer)
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    bus = EventBus()
    seen = EventRecorder(bus)
    options = GatewayOptions(poll_interval_s=0.1, settle_s=0.05, routing_retry_s=300)
    gateway = Gateway(settings, bus, options=options, where=XDisplay.from_env())
    run = asyncio.create_task(gateway.run())
    try:
        await until(lambda: gateway.ready.is_set() or run.done(), 60)
        with caplog.at_level(logging.ERROR, logger="jarvis.gateway.routing"):
            message = await gateway.submit("Say hello", "tui")
            await until(lambda: seen.of(RoutingFailed), 30)
    finally:
        gateway.stop()
        await asyncio.wait_for(run, timeout=30)
    [failed] = seen.of(RoutingFailed)
    assert failed.message_id == message.id and failed.channel == "tui"
    assert "HTTP 401" in failed.error and "ANTHROPIC_API_KEY" in failed.error
    assert failed.retry_in_s == 300
    assert [m.id for m in gateway.queue.pending()] == [message.id]
    assert gateway.queue.processing() == [] and gateway.todos.all() == []
    # one error line (an earlier in-process `jarvis` command may have turned INFO lines on:
    # "serving ...", "stopping ..." are not errors)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    [line] = [r for r in errors if r.name == "jarvis.gateway.routing"]
    assert not line.exc_info and "\n" not in line.getMessage()
    assert f"message {message.id} waits in the inbox" in line.getMessage()
    # the key is fixed: the next start routes the waiting message into a task and runs it
    refuse[0] = False
    report = await Gateway(
        settings, options=GatewayOptions(once=True), where=XDisplay.from_env()
    ).run()
    assert report.routed == 1
    [task] = gateway.todos.all()
    assert task.message_ids == [message.id] and task.summary == "said hello"
    assert task.status == "completed" and gateway.queue.pending() == []
