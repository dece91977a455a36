"""Long-term memory in the loop: remember, recall into a later task, history and skills."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.memory.long_term import LongTermMemory
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
