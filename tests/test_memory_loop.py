"""Long-term memory in the loop: remember, recall into a later task, history and skills."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.memory.long_term import LongTermMemory, Memory
from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")

PREFERENCE = "The user wants every document saved as PDF in the Reports folder"


async def test_preference_skill_and_history_carry_over(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, long_term_memory=True)
    fake_model.script(
        Reply(
            text="Thought: the user told me a preference; keep it.",
            tool_calls=[call("remember", content=PREFERENCE, type="preference", importance=8)],
        ),
        Reply(text="Thought: done", tool_calls=[call("finished", summary="noted the preference")]),
        Reply(text='{"done": true, "reason": "nothing to show on screen; noted"}'),
        Reply(text="1. Listen to the user.\n2. Store the preference with remember."),
    )
    first, _ = await run_agent(settings, "Note that I want my documents saved as PDF in Reports")
    assert first.status == "finished"
    assert "remember" in fake_model.requests[0].tool_names
    # the skill prompt saw the steps of the task
    assert "remember" in fake_model.requests[3].all_text()

    with LongTermMemory.from_settings(settings) as memory:
        kinds = {m.type: m for m in memory.list()}
        assert kinds["preference"].content == PREFERENCE
        assert kinds["preference"].importance == 8
        assert "Store the preference" in kinds["skill"].content
        assert "finished" in kinds["history"].content
        assert "after 2 step(s)" in kinds["history"].content  # outcome and step count
        assert "noted the preference" in kinds["history"].content  # and the summary
        assert "Note that I want my documents" in kinds["history"].content  # and the task
        assert first.task_id in kinds["history"].task_ids
    mirror = settings.data_dir / "memory" / "long_term" / "preferences.json"
    assert PREFERENCE in mirror.read_text()

    # a later, related task: the preference is in the prompt of its first request
    fake_model.requests.clear()
    fake_model.script(
        Reply(text="Thought: ask", tool_calls=[call("call_user", message="which document?")])
    )
    second, _ = await run_agent(settings, "Save the quarterly report document")
    assert second.status == "needs_user"
    prompt = fake_model.requests[0].all_text()
    assert PREFERENCE in prompt
    assert "[preference, importance 8]" in prompt


def seed(settings, *memories: tuple[str, str]) -> None:  # type: ignore[no-untyped-def]
    from jarvis.memory.long_term import Memory

    with LongTermMemory.from_settings(settings) as memory:
        for kind, content in memories:
            memory.store(Memory(type=kind, content=content, importance=7))  # type: ignore[arg-type]


EDITOR = [
    ("preference", "The user likes the dark theme in the text editor"),
    ("preference", "The text editor font should be 14 pt monospace"),
    ("preference", "In the text editor, tabs are four spaces"),
]
CALCULATOR = "The calculator must always be in scientific mode"


async def test_recall_follows_a_change_of_direction_and_the_top_k_setting(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, long_term_memory=True, memory_top_k=2
    )
    seed(settings, *EDITOR, ("preference", CALCULATOR))
    fake_model.script(
        Reply(
            text="Thought: first I must open the calculator in scientific mode to compute sums.",
            tool_calls=[call("mouse_move", x=300, y=300)],
        ),
        Reply(text="Thought: ask", tool_calls=[call("call_user", message="which sums?")]),
    )
    outcome, _ = await run_agent(settings, "Make the text editor comfortable to use")
    assert outcome.status == "needs_user"
    first, second = (r.all_text() for r in fake_model.requests)
    recalled = [m for _, m in EDITOR if m in first]
    assert len(recalled) == 2  # memory_top_k=2, the two closest to the task
    assert CALCULATOR not in first
    assert CALCULATOR in second  # recalled again for the new direction
    assert all(m in second for m in recalled)  # what was recalled before stays


async def test_no_skill_is_learned_without_a_verified_finish(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, long_term_memory=True, max_verify_failures=0
    )
    fake_model.script(
        Reply(text="Thought: done", tool_calls=[call("finished", summary="all done")]),
        Reply(text='{"done": false, "reason": "the window is still empty"}'),
    )
    failed, _ = await run_agent(settings, "Fill in the form")
    assert failed.status == "failed" and "still empty" in failed.summary
    assert fake_model.pending == 0 and len(fake_model.requests) == 2  # no skill request
    with LongTermMemory.from_settings(settings) as memory:
        kinds = [m.type for m in memory.list()]
        [history] = [m for m in memory.list() if m.type == "history"]
    assert kinds == ["history"]  # a history, and no skill
    assert "failed after 1 step(s)" in history.content and "still empty" in history.content


KEY = "sk-ant-api03-LONG-TERM-key-quoted-by-the-provider-0123456789"
PASSWORD = "hunter2secret-in-the-base-url"


async def test_a_secret_in_a_failure_never_reaches_long_term_memory(
    fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """The failure line quotes the key and the base URL's password: the history memory
    (recalled into later prompts, listed by `jarvis memory list`) holds neither."""
    settings = agent_settings(tmp_path, fake_model, monkeypatch, long_term_memory=True)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    url = fake_model.anthropic_base_url.replace("http://", f"http://user:{PASSWORD}@", 1)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    fake_model.set_default(
        lambda request: Reply.error(
            401, f"invalid x-api-key: {KEY}; you sent it to {url} (Bearer {KEY})"
        )
    )
    outcome, _ = await run_agent(settings, f"Open {url} and paste {KEY}")
    assert outcome.status == "failed"
    with LongTermMemory.from_settings(settings) as memory:
        [history] = [m for m in memory.list() if m.type == "history"]
        assert "failed" in history.content and "[REDACTED]" in history.content
        for memory_item in memory.list():
            assert KEY not in memory_item.content and PASSWORD not in memory_item.content
        stored = memory.store(
            Memory(type="preference", content=f"the proxy is {url}, key {KEY}", task_ids=["T1"])
        )
        assert KEY not in stored.content and PASSWORD not in stored.content
    for path in (settings.data_dir / "memory" / "long_term").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data and PASSWORD.encode() not in data, path
