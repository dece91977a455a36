"""A message the router cannot route (its key refused) is an error the person sees: the
``routing_failed`` event reaches ``GET /api/events`` though no task runs, and the TUI shows
it as a notice."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from httpx_sse import aconnect_sse

from jarvis.tui.state import Cockpit
from tests.agent_harness import TEST_KEY, agent_settings
from tests.api_harness import is_router, routed, serving_api
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

pytestmark = pytest.mark.usefixtures("xserver")


async def test_a_routing_failure_reaches_the_event_stream_and_the_tui(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return Reply.unauthorized()
        return routed(lambda _r: Reply(tool_calls=[call("finished", summary="hi")]))(request)

    fake_model.set_default(answer)
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    received: list[tuple[str | None, str, dict[str, Any]]] = []
    async with serving_api(settings, routing_retry_s=300) as api, api.client() as client:
        connected = asyncio.Event()

        async def read() -> None:
            async with aconnect_sse(client, "GET", "/api/events") as source:
                connected.set()
                async for sse in source.aiter_sse():
                    if sse.data:
                        received.append((sse.id or None, sse.event, json.loads(sse.data)))
                    if sse.event == "routing_failed":
                        return

        reader = asyncio.create_task(read())
        await asyncio.wait_for(connected.wait(), 10)
        sent = (await client.post("/api/messages", json={"text": "Say hello"})).json()
        await asyncio.wait_for(reader, 30)
    [(seq, _kind, data)] = [r for r in received if r[1] == "routing_failed"]
    assert seq is None  # no journal line: the client's Last-Event-ID stays where it was
    assert data["message_id"] == sent["message_id"] and data["retry_in_s"] == 300
    assert "HTTP 401" in data["error"] and "ANTHROPIC_API_KEY" in data["error"]
    assert TEST_KEY not in json.dumps(data)
    # the TUI folds the same line into a notice a person reads
    cockpit = Cockpit()
    change = cockpit.apply(data)
    assert change.kind == "notice"
    [notice] = cockpit.notices
    assert f"message {sent['message_id']} could not be routed" in notice
    assert "HTTP 401" in notice and "waits in the inbox; next try in 300 s" in notice
