"""The real a2a-sdk client against a live ``jarvis serve`` (tests/api_harness.py)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState

from tests.api_harness import Api

S = TaskState
ENDS = {S.TASK_STATE_COMPLETED, S.TASK_STATE_FAILED, S.TASK_STATE_CANCELED,
        S.TASK_STATE_REJECTED, S.TASK_STATE_INPUT_REQUIRED}  # fmt: skip


@asynccontextmanager
async def a2a_client(api: Api, token: str | None = None) -> AsyncIterator[Client]:
    """``token``: None for the daemon's, "" for none at all."""
    token = api.token if token is None else token
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        client = await create_client(api.base, ClientConfig(httpx_client=http))
        try:
            yield client
        finally:
            await client.close()


def request(text: str, task_id: str = "", context_id: str = "") -> SendMessageRequest:
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )
    return SendMessageRequest(message=message)


@dataclass
class Seen:
    """What one stream gave: the task snapshot(s), status updates, artifacts."""

    tasks: list[Any] = field(default_factory=list)
    updates: list[Any] = field(default_factory=list)
    artifacts: list[Any] = field(default_factory=list)

    @property
    def task_id(self) -> str:
        return str(self.tasks[0].id)

    def states(self) -> list[str]:
        return [S.Name(u.status.state) for u in self.updates]

    def texts(self) -> list[str]:
        return [" ".join(p.text for p in u.status.message.parts) for u in self.updates]

    def seqs(self) -> list[int]:
        return [int(u.metadata["seq"]) for u in self.updates]

    def last_state(self) -> Any:
        return self.updates[-1].status.state if self.updates else self.tasks[-1].status.state


async def take(stream: AsyncIterator[StreamResponse], seen: Seen, stop: Any = None) -> Seen:
    """Read ``stream`` into ``seen`` until it ends or ``stop(seen)`` is true."""
    async for response in stream:
        if response.HasField("task"):
            seen.tasks.append(response.task)
        elif response.HasField("status_update"):
            seen.updates.append(response.status_update)
        elif response.HasField("artifact_update"):
            seen.artifacts.append(response.artifact_update.artifact)
        if stop is not None and stop(seen):
            await stream.aclose()  # type: ignore[attr-defined]  # the connection drops here
            break
    return seen
