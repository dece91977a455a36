"""The event stream on a real uvicorn during real tasks: 50 clients each get every event once
in order; a reconnect with Last-Event-ID gets exactly what it missed; a client connecting
mid-task gets the task so far; a client that never reads gets a gap and catches up, and the
agent does not wait for it."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent_harness import agent_settings
from tests.api_harness import Received, is_step, listen, moves, scripted, serving_api, until
from tests.fake_model import FakeModel, Reply

pytestmark = pytest.mark.usefixtures("xserver")


def settings_for(tmp_path: Path, fake_model: FakeModel, monkeypatch: Any, **api: Any) -> Any:
    overrides = {"settle_ceiling_ms": 200, "settle_floor_ms": 0}
    settings = agent_settings(tmp_path, fake_model, monkeypatch, **overrides)
    if api:
        settings.api = settings.api.model_copy(update=api)
    return settings


async def test_fifty_clients_each_get_every_event_once_in_order(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([moves(3, "Thought: " + "step one. " * 20), moves(2)]))
    async with serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api:
        async with api.client() as client:
            received = [Received() for _ in range(50)]
            tasks = [asyncio.create_task(listen(client, r)) for r in received]
            await until(lambda: all(r.connected.is_set() for r in received))
            posted = await client.post("/api/messages", json={"text": "move about"})
            assert posted.status_code == 201
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=90)
        journal = api.journal("T001")
        expected = [r["seq"] for r in journal]
        assert len(expected) > 20 and journal[-1]["kind"] == "reply_ready"
        until_finish = expected[: [r["kind"] for r in journal].index("task_finished") + 1]
        for r in received:
            assert r.seqs == until_finish  # each once, in order, none missing
            assert r.gaps == 0
        first = received[0].events
        assert [d for _, _, d in first] == journal[: len(first)]  # the data is the journal line


async def test_a_reconnect_with_last_event_id_gets_exactly_what_it_missed(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    fake_model.set_default(scripted([moves(12), moves(12), moves(12), moves(12), moves(12)]))
    settings = settings_for(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api, api.client() as client:
        early = Received()
        reading = asyncio.create_task(listen(client, early, stop_after=5))
        await early.connected.wait()
        await client.post("/api/messages", json={"text": "move a lot"})
        await asyncio.wait_for(reading, 60)  # disconnected after 5 events
        cut = early.seqs[-1]
        await until(lambda: len(api.journal("T001")) >= 5 + 100 + 10, 90)
        late = Received()
        resumed = asyncio.create_task(listen(client, late, headers={"last-event-id": str(cut)}))
        await asyncio.wait_for(resumed, 90)
        journal = [r["seq"] for r in api.journal("T001")]
        finish = journal.index(late.seqs[-1])
        assert late.seqs == journal[len(early.seqs) : finish + 1]
        assert late.seqs[0] == cut + 1 and len(late.seqs) >= 100
        assert [d for _, _, d in late.events] == api.journal("T001")[5 : finish + 1]
        bad = await client.get("/api/events", headers={"last-event-id": "ten"})
        assert bad.status_code == 400


async def test_a_client_connecting_mid_task_first_gets_the_task_so_far(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    hold = threading.Event()
    held = Reply(text="Thought: still thinking about it", tool_calls=moves(2).tool_calls,
                 hold=hold, hold_after=6)  # fmt: skip
    fake_model.set_default(scripted([moves(2), held]))
    async with serving_api(settings_for(tmp_path, fake_model, monkeypatch)) as api:
        async with api.client() as client:
            await client.post("/api/messages", json={"text": "think slowly"})
            await until(lambda: sum(map(is_step, fake_model.requests)) == 2, 60)
            await until(lambda: "still thinking" in json.dumps(api.journal("T001")))
            late = Received()
            reading = asyncio.create_task(listen(client, late))
            await until(lambda: len(late.events) >= 5)
            so_far = [r["seq"] for r in api.journal("T001")]
            hold.set()
            await asyncio.wait_for(reading, 60)
        journal = api.journal("T001")
        seqs = [r["seq"] for r in journal]
        assert late.kinds()[0] == "task_started"
        assert late.seqs == seqs[: seqs.index(late.seqs[-1]) + 1]  # history, then live
        assert late.seqs[: len(so_far)] == so_far and len(late.seqs) > len(so_far)


def stalled_subscriber(port: int, token: str, after: int) -> socket.socket:
    """An SSE client that sends its request and never reads (a tiny receive buffer)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        f"GET /api/events?after={after} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\n\r\n".encode()
    )
    return sock


def read_all(sock: socket.socket, until_text: bytes, timeout: float = 30) -> bytes:
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while until_text not in data and time.monotonic() < deadline:
        data += sock.recv(1 << 20)
    return data


async def run_one(api: Any, text: str) -> float:
    started = time.monotonic()
    async with api.client() as client:
        await client.post("/api/messages", json={"text": text})
    done = len([r for r in api.journal() if r["kind"] == "task_finished"]) + 1
    await until(lambda: len([r for r in api.journal() if r["kind"] == "task_finished"]) == done, 90)
    return time.monotonic() - started


@pytest.mark.slow
async def test_a_subscriber_that_never_reads_gets_a_gap_and_never_holds_up_the_agent(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    big = "Thought: " + "a long thought that fills the pipe. " * 8000  # about 290 kB a step
    steps = [Reply(text=big, text_chunk=4000, tool_calls=moves(8).tool_calls) for _ in range(3)]
    fake_model.set_default(scripted(steps * 2))
    settings = settings_for(tmp_path, fake_model, monkeypatch, queue_size=16)
    async with serving_api(settings) as api:
        port = api.service.port
        assert port is not None and api.service.daemon is not None
        alone = await run_one(api, "first, with nobody stalled")
        after = max(r["seq"] for r in api.journal())
        sock = await asyncio.to_thread(stalled_subscriber, port, api.token, after)
        hub = api.service.daemon.hub
        await until(lambda: len(hub.subscribers) == 1)
        [stalled] = hub.subscribers
        stuck = await run_one(api, "second, with a stalled subscriber")
        assert stalled.gaps >= 1  # it overflowed while the agent went on
        assert stuck < 3 * alone + 5  # loose: the agent did not wait for the reader
        data = await asyncio.to_thread(read_all, sock, b"event: task_finished")
        sock.close()
    text = data.decode(errors="replace")
    assert "event: gap" in text
    ids = [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]
    finish = next(r["seq"] for r in api.journal("T002") if r["kind"] == "task_finished")
    expected = [r["seq"] for r in api.journal() if after < r["seq"] <= finish]
    assert ids == sorted(set(ids))  # in order, none twice, across the gap
    assert [i for i in ids if i <= finish] == expected  # and nothing missing
