"""A person at the approvals: the safety routes on a real uvicorn, an answerer thread that
posts answers to pending approvals, and readers of what the model was sent."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventRecorder
from jarvis.safety.approvals import ApprovalStore
from tests.fake_model import FakeModel, RecordedRequest


async def wait_event(recorder: EventRecorder, kind: type, count: int = 1) -> Any:
    deadline = time.monotonic() + 5
    while len(recorder.of(kind)) < count:
        assert time.monotonic() < deadline, f"no {kind.__name__} event"
        await asyncio.sleep(0.01)
    return recorder.of(kind)[count - 1]


@dataclass
class _Desk:
    """The daemon's side of the safety routes, for an agent run without a gateway: the real
    approval store, and a stop button that only records who pressed it."""

    store: ApprovalStore
    stop: Callable[[str], Any]

    def attend(self) -> None:
        self.store.attended = True

    def pending_approvals(self) -> list[dict[str, Any]]:
        return self.store.pending()

    def approve(self, approval_id: str, decision: str, note: str, by: str) -> None:
        self.store.resolve(approval_id, decision, note, via=by)


class ApiServer:
    """The safety routes on a real uvicorn in a thread, on a free loopback port."""

    def __init__(self, store: ApprovalStore, token: str | None = None, running: bool = True):
        from jarvis.api.approvals import mount_safety

        self.stopped: list[str] = []
        self.running = running
        app = FastAPI()
        if token is not None:  # what the daemon's guard does: the bearer token or 401

            @app.middleware("http")
            async def guard(request: Any, call_next: Any) -> Any:
                if request.headers.get("authorization") != f"Bearer {token}":
                    return JSONResponse({"detail": "unauthorized"}, status_code=401)
                return await call_next(request)

        mount_safety(app, _Desk(store, self._stop))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, args=([self.sock],), daemon=True)

    async def _stop(self, by: str) -> bool:
        self.stopped.append(by)
        return self.running

    def __enter__(self) -> ApiServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def answerer(url: str, plan: list[dict[str, Any] | None], log: list[Any]) -> threading.Thread:
    """A person at the API: for each pending approval in turn, post the next answer of
    ``plan`` (None: leave it unanswered until it times out)."""

    def run() -> None:
        seen: set[str] = set()
        with httpx.Client(base_url=url, timeout=5) as client:
            for answer in plan:
                deadline = time.monotonic() + 30
                while True:
                    pending = client.get("/api/approvals").json()["pending"]
                    fresh = [p for p in pending if p["approval_id"] not in seen]
                    if fresh:
                        break
                    assert time.monotonic() < deadline, "no approval request came"
                    time.sleep(0.02)
                request = fresh[0]
                seen.add(request["approval_id"])
                log.append(request)
                if answer is not None:
                    reply = client.post(f"/api/approvals/{request['approval_id']}", json=answer)
                    log.append(reply.status_code)

    return threading.Thread(target=run, daemon=True)


def tool_results(fake_model: FakeModel) -> list[dict[str, Any]]:
    """Every tool result the model was sent, in the order of the calls."""
    return list(results_by_call(fake_model.requests).values())


def results_by_call(requests: list[RecordedRequest]) -> dict[str, dict[str, Any]]:
    """Every tool result in Anthropic requests, by call id, in the order of the calls."""
    found: dict[str, dict[str, Any]] = {}
    for request in requests:
        for message in request.messages:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result":
                    text = block["content"]
                    if isinstance(text, list):
                        text = "".join(b.get("text", "") for b in text)
                    found.setdefault(block["tool_use_id"], json.loads(text))
    return found


@dataclass
class Answered:
    """What :func:`run_answered` saw: the task's outcome, the requests a person was shown,
    the HTTP status of each answer, and the bus's events."""

    outcome: Any
    requests: list[dict[str, Any]]
    statuses: list[int]
    recorder: EventRecorder


async def run_answered(
    settings: Any,
    task: str,
    plan: list[dict[str, Any] | None],
    *,
    provider: Callable[[Any], Any] | None = None,
    during: Callable[[Any], None] | None = None,
) -> Answered:
    """Run ``task`` with the real agent while a person at the API answers each approval
    request with the next entry of ``plan``; ``provider(gate)`` makes the model's provider
    for the run's approval gate (default: build_agent's own); ``during(agent)`` runs once
    the agent is built."""
    from jarvis.agent.factory import build_agent
    from jarvis.events import EventBus
    from jarvis.safety.approvals import ApprovalGate

    bus = EventBus()
    recorder = EventRecorder(bus)
    store = ApprovalStore(bus)
    log: list[Any] = []
    with ApiServer(store) as api:
        person = answerer(api.url, plan, log)
        person.start()
        gate = ApprovalGate(settings.safety, store)
        made = provider(gate) if provider is not None else None
        async with build_agent(
            settings, bus, provider=made, approvals=gate, where=XDisplay.from_env()
        ) as agent:
            if during is not None:
                during(agent)
            outcome = await asyncio.wait_for(agent.run(task), timeout=120)
        if made is not None:
            await made.aclose()
        person.join(timeout=10)
    requests = [r for r in log if isinstance(r, dict)]
    statuses = [r for r in log if isinstance(r, int)]
    return Answered(outcome, requests, statuses, recorder)
