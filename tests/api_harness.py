"""A real `jarvis serve` gateway with its control API on a free loopback port, in the test's
own event loop (uvicorn for real; the agent for real on Xvfb; only the model scripted)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from jarvis.api.server import HttpService
from jarvis.api.settings import HttpAddress
from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.gateway.gateway import Gateway, GatewayOptions
from jarvis.gateway.serve_command import pick_runner
from jarvis.runs.reader import events_after
from tests.fake_model import RecordedRequest, Reply, call


@dataclass
class Api:
    gateway: Gateway
    service: HttpService
    token: str
    base: str
    announced: list[str] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.gateway.settings.data_dir

    @property
    def auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        headers = {**self.auth, **kwargs.pop("headers", {})}
        return httpx.AsyncClient(base_url=self.base, headers=headers, timeout=30, **kwargs)

    def journal(self, task_id: str | None = None) -> list[dict[str, Any]]:
        lines = list(events_after(self.data_dir, 0))
        return [r for r in lines if task_id is None or r["task_id"] == task_id]


@asynccontextmanager
async def serving_api(settings: Settings, **options: Any) -> AsyncIterator[Api]:
    """The gateway (serving, not ``once``) with its API; stopped on the way out."""
    runner = pick_runner(
        options.pop("fleet_url", None), local_worker=options.pop("local_worker", False)
    )
    opts = GatewayOptions(poll_interval_s=0.2, settle_s=0.05, watch_interval_s=0.1, **options)
    gateway = Gateway(settings, options=opts, where=XDisplay.from_env(), runner=runner)
    announced: list[str] = []
    service = HttpService(gateway, HttpAddress(host="127.0.0.1", port=0), announce=announced.append)
    gateway.services.append(service.running)
    run = asyncio.create_task(gateway.run())
    try:
        await until(lambda: gateway.ready.is_set() or run.done(), 60)
        if run.done():
            run.result()  # raises what stopped it
        assert service.daemon is not None
        api = Api(gateway, service, service.daemon.token, service.url, announced)
        yield api
    finally:
        gateway.stop()
        await asyncio.wait_for(run, timeout=30)


async def until(condition: Callable[[], Any], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        await asyncio.sleep(0.02)


@dataclass
class Received:
    """What one SSE client got: (id, event, data) per event, and the gaps."""

    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    gaps: int = 0
    connected: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def seqs(self) -> list[int]:
        return [seq for seq, _, _ in self.events]

    def kinds(self) -> list[str]:
        return [kind for _, kind, _ in self.events]


async def listen(
    client: httpx.AsyncClient,
    received: Received,
    until_kind: str = "task_finished",
    *,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    stop_after: int | None = None,
) -> Received:
    """Read /api/events until an event of ``until_kind`` (or ``stop_after`` events)."""
    headers = dict(headers or {})
    async with aconnect_sse(client, "GET", "/api/events", params=params, headers=headers) as source:
        assert source.response.status_code == 200
        received.connected.set()
        async for sse in source.aiter_sse():
            if not sse.data:  # the retry hint alone (a browser does not dispatch it)
                continue
            if sse.event == "gap":
                received.gaps += 1
                continue
            data = json.loads(sse.data)
            assert int(sse.id) == data["seq"] and sse.event == data["kind"]
            received.events.append((data["seq"], sse.event, data))
            if sse.event == until_kind or (stop_after and len(received.events) >= stop_after):
                break
    return received


# --- model replies, told apart by the request --------------------------------------
def is_router(request: RecordedRequest) -> bool:
    return "route incoming messages" in request.all_text()


def is_verify(request: RecordedRequest) -> bool:
    return "You verify computer tasks" in request.all_text()


def is_skill(request: RecordedRequest) -> bool:
    return "You write short, general procedures" in request.all_text()


def is_step(request: RecordedRequest) -> bool:
    return not (is_router(request) or is_verify(request) or is_skill(request))


NEW_TASK = Reply(text='{"action": "new", "title": "", "priority": "normal"}')
VERIFIED = Reply(text='{"done": true, "reason": "looks done"}')


def moves(n: int, text: str = "Thought: moving.") -> Reply:
    """A step of ``n`` pointer moves."""
    return Reply(text=text, tool_calls=[call("mouse_move", x=20 + i, y=20 + i) for i in range(n)])


def finish(summary: str = "done") -> Reply:
    return Reply(text="Thought: done.", tool_calls=[call("finished", summary=summary)])


def routed(step: Callable[[RecordedRequest], Reply]) -> Callable[[RecordedRequest], Reply]:
    """Router: new task; verify: done; a skill: one line; agent steps: ``step(request)``."""

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if is_verify(request):
            return VERIFIED
        if is_skill(request):
            return Reply(text="1. Do it.")
        return step(request)

    return answer


def scripted(steps: list[Reply]) -> Callable[[RecordedRequest], Reply]:
    """Like :func:`routed`, with agent steps ``steps`` in order, then finished."""
    queue = list(steps)
    return routed(lambda request: queue.pop(0) if queue else finish())
