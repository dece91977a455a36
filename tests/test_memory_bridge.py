"""The loop's view of long-term memory, on a real on-disk chromadb with the offline embedding."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.config import load_settings
from jarvis.memory.long_term import LongTermMemory, Memory
from jarvis.memory.recall import MemoryBridge


@pytest.fixture
def bridge(tmp_path: Path):
    memory = LongTermMemory.from_settings(load_settings(tmp_path))
    yield MemoryBridge(memory)
    memory.close()


def test_recall_orders_preferences_first(bridge: MemoryBridge) -> None:
    bridge.memory.store(Memory(type="history", content="Task: write an email to Bob. finished"))
    bridge.memory.store(Memory(type="preference", content="Emails to Bob are signed 'Cheers'"))
    bridge.memory.store(Memory(type="preference", content="The user likes green tea"))
    lines = bridge.recall("write an email to Bob", top_k=2)
    assert len(lines) == 2
    assert lines[0].startswith("[preference") and "Cheers" in lines[0]
    assert lines[1].startswith("[history")


@pytest.mark.parametrize(
    ("thought", "changed"),
    [
        ("I will open the text editor and start writing the poem.", False),
        ("Now book a cheap flight to Paris on the airline's website.", True),
        ("", False),
    ],
)
def test_direction_change(bridge: MemoryBridge, thought: str, changed: bool) -> None:
    assert bridge.direction_changed("anything") is False  # nothing recalled yet
    bridge.recall("Open the text editor and write a short poem")
    assert bridge.direction_changed(thought) is changed


def test_history_and_skill_records(bridge: MemoryBridge) -> None:
    bridge.record_task("open the calculator", "t-1", "failed", "it was not installed", 4)
    skill = bridge.store_skill("open the calculator", "1. press super\n2. type calc", "t-2")
    history = bridge.memory.list(types=["history"])
    assert len(history) == 1
    assert "failed after 4 step(s)" in history[0].content
    assert history[0].task_ids == ["t-1"]
    assert skill.type == "skill" and "type calc" in skill.content
