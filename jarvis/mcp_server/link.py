"""The MCP server's way to the daemon: the control API, with the token, and nothing else.

:class:`DaemonLink` sends every request to the ``jarvis serve`` of the data dir, found the
way every client finds it (:mod:`jarvis.discovery`: ``DATA/serve.lock`` and
``DATA/config/api_token``). When a request cannot reach the daemon (it was restarted on
another port), the link looks again once before it gives up. Every failure becomes a
:class:`DaemonError` with one line saying what went wrong; the token is never in it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from jarvis.apiclient.http import ApiError, async_client, detail, response_body, what_failed
from jarvis.apiclient.sse import journal_lines
from jarvis.discovery import DaemonNotFound, find_daemon

TIMEOUT = httpx.Timeout(15.0, read=None)  # the event stream waits as long as it is quiet
CHANNEL = "mcp"


class DaemonError(ApiError):
    """The daemon refused a request or could not be reached; one line, for the MCP client."""


class DaemonLink:
    """Requests to the control API of the daemon holding ``data_dir``."""

    def __init__(self, data_dir: Path, url: str, token: str, socket: Path | None = None) -> None:
        self.data_dir = data_dir
        self._client = self._make(url, token, socket)

    @staticmethod
    def _make(url: str, token: str, socket: Path | None) -> httpx.AsyncClient:
        return async_client(url, token, socket=socket, timeout=TIMEOUT)

    @property
    def url(self) -> str:
        return str(self._client.base_url)

    async def _rediscover(self) -> bool:
        """Point at the data dir's daemon again; True when it is somewhere else now."""
        try:
            daemon = find_daemon(self.data_dir)
        except DaemonNotFound:
            return False
        if daemon is None or (daemon.url or "").rstrip("/") == self.url.rstrip("/"):
            return False
        await self._client.aclose()
        self._client = self._make(daemon.base_url, daemon.token, daemon.socket)
        return True

    def _unreachable(self, exc: httpx.HTTPError) -> DaemonError:
        if find_daemon_quietly(self.data_dir) is None:
            return DaemonError(
                f"no `jarvis serve` runs for {self.data_dir} (start it with `jarvis serve`)"
            )
        return DaemonError(f"the Jarvis daemon at {self.url} did not answer: {what_failed(exc)}")

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON (or bytes) of an API response; DaemonError for a failure or a status
        of 400 or more (with the daemon's own ``detail``)."""
        try:
            response = await self._client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            if not await self._rediscover():
                raise self._unreachable(exc) from None
            try:
                response = await self._client.request(method, path, **kwargs)
            except httpx.HTTPError as again:
                raise self._unreachable(again) from None
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        if response.status_code >= 400:
            raise DaemonError(detail(response), response.status_code)
        return response_body(response)

    # -- the requests the tools make --
    async def health(self) -> dict[str, Any]:
        found = await self.call("GET", "/api/health")
        return found if isinstance(found, dict) else {}

    async def submit(self, text: str) -> str:
        """Post ``text`` as a message of the mcp channel; its message id."""
        queued = await self.call("POST", "/api/messages", json={"text": text, "channel": CHANNEL})
        return str(queued["message_id"])

    async def todos(self) -> list[dict[str, Any]]:
        found = await self.call("GET", "/api/todos")
        return [t for t in (found or {}).get("todos", []) if isinstance(t, dict)]

    async def task(self, task_id: str) -> dict[str, Any]:
        found = await self.call(
            "GET", f"/api/tasks/{_segment(task_id)}", params={"events": "false"}
        )
        return found if isinstance(found, dict) else {}

    async def cancel(self, task_id: str) -> dict[str, Any]:
        found = await self.call(
            "POST", f"/api/tasks/{_segment(task_id)}/cancel", json={"by": CHANNEL}
        )
        return found if isinstance(found, dict) else {}

    async def answer(self, task_id: str, text: str) -> None:
        body = {"text": text, "channel": CHANNEL}
        await self.call("POST", f"/api/tasks/{_segment(task_id)}/answer", json=body)

    async def image(self, *paths: str) -> bytes | None:
        """The image at the first of ``paths`` the daemon has (404, 409, 503: the next one;
        409: a fleet worker with nothing to show yet)."""
        for path in paths:
            try:
                found = await self.call("GET", path)
            except DaemonError as exc:
                if exc.status in (404, 409, 503):
                    continue
                raise
            if isinstance(found, bytes):
                return found
        return None

    async def events(self, after: int) -> AsyncIterator[dict[str, Any]]:
        """Journal lines after seq ``after`` (from the journal, then live), until closed."""
        try:
            async with self._client.stream(
                "GET",
                "/api/events",
                params={"after": after},
                headers={"accept": "text/event-stream"},
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise DaemonError(f"the event stream: {detail(response)}", response.status_code)
                async for line in journal_lines(response.aiter_lines()):
                    yield line
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        raise DaemonError(f"the Jarvis daemon at {self.url} closed the event stream")

    async def aclose(self) -> None:
        await self._client.aclose()


def find_daemon_quietly(data_dir: Path) -> Any:
    try:
        return find_daemon(data_dir)
    except DaemonNotFound:
        return None


def _segment(task_id: str) -> str:
    return quote(task_id, safe="")
