"""Secret tools are offered only where they can be used: the scripted model's tool list for
an email task has no type_secret / type_totp (email may not use secrets unless
``channels.email.secrets`` is true), a TUI task's has both; a type_secret call that an
email task sends anyway is still refused (-32006) and types nothing. Real agent on Xvfb."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from jarvis.agent.factory import build_agent
from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.secrets.store import SecretInfo, SecretStore
from jarvis.tools.policy import SECRET_TOOLS
from tests.agent_harness import agent_settings
from tests.fake_model import FakeModel, Reply, ToolUse, call
from tests.tkdriver import TkApp

PASSWORD = "offered-only-where-usable-9"


def _settings(
    tmp_path: Path, fake_model: FakeModel, mp: pytest.MonkeyPatch, **kw: object
) -> Settings:
    mp.setenv("JARVIS_SECRETS_KEY", "the user's passphrase")
    settings = agent_settings(
        tmp_path, fake_model, mp, settle_ceiling_ms=200, safety={"secrets": {"store": "file"}}, **kw
    )
    store = SecretStore(settings.data_dir, settings.safety.secrets)
    if not store.entries():
        store.add(SecretInfo(name="site", description="my password on Example"), PASSWORD)
        store.add(SecretInfo(name="otp", description="the site's code", kind="totp"), "JBSWY3DP")
    return settings


async def _run(settings: Settings, channel: str) -> None:
    async with build_agent(settings, EventBus(), where=XDisplay.from_env()) as agent:
        await asyncio.wait_for(agent.run("Sign in", channels=(channel,)), timeout=120)


def _done() -> list[Reply]:
    return [
        Reply(tool_calls=[call("finished", summary="done")]),
        Reply(text='{"done": true, "reason": "done"}'),
    ]


def test_an_email_task_is_not_offered_secret_tools_and_a_tui_task_is(
    tkapp: TkApp, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, fake_model, monkeypatch)
    tkapp.focus("box")
    sneaked = Reply(tool_calls=[ToolUse("type_secret", {"name": "site"})])
    fake_model.script(sneaked, *_done())
    asyncio.run(_run(settings, "email"))
    first, second = fake_model.requests[0], fake_model.requests[1]
    assert "click" in first.tool_names
    assert not SECRET_TOOLS & set(first.tool_names), first.tool_names
    assert "my password on Example" not in first.all_text()
    said = second.all_text()
    assert "-32006" in said or "not allowed" in said.lower(), said
    assert "channel 'email' may not use stored secrets" in said
    tkapp.sync()
    assert tkapp.entry_text() == ""  # nothing typed

    fake_model.requests.clear()
    fake_model.script(*_done())
    asyncio.run(_run(settings, "tui"))
    assert set(fake_model.requests[0].tool_names) >= SECRET_TOOLS


def test_an_email_channel_that_allows_secrets_is_offered_them(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, fake_model, monkeypatch, channels={"email": {"secrets": True}})
    fake_model.script(*_done())
    asyncio.run(_run(settings, "email"))
    assert set(fake_model.requests[0].tool_names) >= SECRET_TOOLS
