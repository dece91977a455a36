"""Several processes append to the inbox while another drains it: each message exactly once."""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from pathlib import Path

from jarvis.gateway.message_format import parse_messages
from jarvis.gateway.queue import MessageQueue

WRITERS = 3
PER_WRITER = 30
DEADLINE_S = 120.0


def write_messages(data_dir: str, writer: int) -> None:
    queue = MessageQueue(Path(data_dir))
    for i in range(PER_WRITER):
        queue.append(
            f"message {i} from writer {writer}\n第{i}条", sender=f"w{writer}", channel="test"
        )


def drain(data_dir: str, expected: int) -> None:
    queue = MessageQueue(Path(data_dir))
    done, deadline = 0, time.monotonic() + DEADLINE_S
    while done < expected and time.monotonic() < deadline:
        claimed = queue.claim_next() if done % 2 else queue.claim_all()
        batch = [claimed] if not isinstance(claimed, list) else claimed
        for message in batch:
            if message is not None:
                queue.archive(message.id, "completed", summary=f"handled {message.id}")
                done += 1
        if not any(batch):
            time.sleep(0.005)  # nothing waiting: poll again shortly


def test_concurrent_appends_and_drain(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    expected = WRITERS * PER_WRITER
    drainer = ctx.Process(target=drain, args=(str(tmp_path), expected))
    writers = [ctx.Process(target=write_messages, args=(str(tmp_path), w)) for w in range(WRITERS)]
    drainer.start()
    for process in writers:
        process.start()
    for process in [*writers, drainer]:
        process.join(DEADLINE_S + 30)
        assert process.exitcode == 0

    queue = MessageQueue(tmp_path)
    archived = [
        m
        for path in sorted(queue.archive_dir.glob("*.md"))
        for m in parse_messages(path.read_text(encoding="utf-8")).entries()
    ]
    texts = Counter(m.text for m in archived)
    wanted = {
        f"message {i} from writer {w}\n第{i}条" for w in range(WRITERS) for i in range(PER_WRITER)
    }
    assert set(texts) == wanted
    assert all(count == 1 for count in texts.values())
    assert len({m.id for m in archived}) == expected
    assert all(m.outcome == "completed" and m.result == f"handled {m.id}" for m in archived)
    assert queue.pending() == [] and queue.processing() == []
    assert queue.problems() == []
