"""The control API as the cockpit uses it: httpx, with the SSE stream parsed here.

:class:`ApiBackend` speaks to ``jarvis serve`` (DESIGN.md section 5) with the bearer
token. ``events(after)`` opens ``GET /api/events`` (``Last-Event-ID: after`` when the
cockpit has seen lines, so a reconnect resumes where it was) and yields each event's
``data`` as a journal line. Every failure (refused, a status >= 400, a cut stream)
becomes a :class:`~jarvis.tui.backend.BackendError` with a short message (decoded by
:mod:`jarvis.apiclient.http`, as for every client of the API); the token never appears
in one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx

from jarvis.apiclient.http import async_client, detail, response_body, what_failed
from jarvis.apiclient.sse import journal_lines
from jarvis.tui.backend import BackendError


class ApiBackend:
    """A running ``jarvis serve`` at ``base_url``."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        label: str = "",
        owns_gateway: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.label = label or f"serve at {self.base_url}"
        self.owns_gateway = owns_gateway
        self.recorded = False
        self.screen_note = ""
        self._client = async_client(self.base_url, token, transport=transport)

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return response_body(await self._request(method, path, **kwargs))

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise BackendError(f"{method} {path}: {what_failed(exc)}") from None
        if response.status_code >= 400:
            raise BackendError(f"{method} {path}: {detail(response)}", response.status_code)
        return response

    async def health(self) -> dict[str, Any]:
        found = await self._call("GET", "/api/health")
        return found if isinstance(found, dict) else {}

    async def history(self, runs: int) -> list[dict[str, Any]]:
        if runs <= 0:
            return []
        found = await self._call("GET", "/api/runs", params={"limit": runs})
        lines: list[dict[str, Any]] = []
        for run in reversed((found or {}).get("runs", [])):
            lines += await self.run_events(str(run["task_id"]))
        return sorted(lines, key=lambda line: int(line.get("seq") or 0))

    async def events(self, after: int) -> AsyncIterator[dict[str, Any]]:
        headers = {"accept": "text/event-stream"}
        if after > 0:
            headers["last-event-id"] = str(after)
        try:
            async with self._client.stream("GET", "/api/events", headers=headers) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise BackendError(f"events: {detail(response)}", response.status_code)
                yield {"kind": "connected"}
                async for line in journal_lines(response.aiter_lines()):
                    yield line
        except httpx.HTTPError as exc:
            raise BackendError(f"events: {what_failed(exc)}") from None
        raise BackendError("events: the stream ended")

    async def send(self, text: str) -> str | None:
        sent = await self._call("POST", "/api/messages", json={"text": text, "channel": "tui"})
        return str(sent["message_id"]) if sent and sent.get("message_id") else None

    async def cancel(self, task_id: str) -> None:
        await self._call("POST", f"/api/tasks/{task_id}/cancel", json={"by": "tui"})

    async def answer(self, task_id: str, text: str) -> None:
        body = {"text": text, "channel": "tui"}
        await self._call("POST", f"/api/tasks/{task_id}/answer", json=body)

    async def todos(self) -> list[dict[str, Any]]:
        found = await self._call("GET", "/api/todos")
        return list((found or {}).get("todos", []))

    async def runs(self) -> list[dict[str, Any]]:
        # the first page of {runs, next}: the palette offers the recent runs, not all
        found = await self._call("GET", "/api/runs", params={"limit": 50})
        return list((found or {}).get("runs", []))

    async def run_events(self, task_id: str) -> list[dict[str, Any]]:
        found = await self._call("GET", f"/api/tasks/{task_id}")
        return list((found or {}).get("events") or [])

    async def screen(self, live: bool = False) -> bytes | None:
        paths = ("/api/screen/live", "/api/screen/latest") if live else ("/api/screen/latest",)
        found, headers = await self._image_of(*paths)
        self.screen_note = last_step_note(headers)
        return found

    async def pending_approvals(self) -> list[dict[str, Any]]:
        found = await self._call("GET", "/api/approvals")
        return [p for p in (found or {}).get("pending", []) if isinstance(p, dict)]

    async def approve(self, approval_id: str, decision: str, note: str) -> None:
        body = {"decision": decision, "note": note, "by": "tui"}
        await self._call("POST", f"/api/approvals/{quote(approval_id, safe='')}", json=body)

    async def workers(self) -> dict[str, Any]:
        found = await self._call("GET", "/api/workers")
        return found if isinstance(found, dict) else {"fleet": False, "workers": []}

    async def schedules(self) -> list[dict[str, Any]]:
        found = await self._call("GET", "/api/schedules")
        rows = (found or {}).get("schedules", []) if isinstance(found, dict) else []
        return [s for s in rows if isinstance(s, dict)]

    async def pause(self, take_over: bool = False) -> None:
        await self._call("POST", "/api/takeover", json={"by": "tui", "take_over": take_over})

    async def resume(self, note: str = "") -> None:
        await self._call("POST", "/api/handback", json={"note": note, "by": "tui"})

    async def recordings(self) -> dict[str, Any]:
        found = await self._call("GET", "/api/recordings")
        return found if isinstance(found, dict) else {"recording": None, "recordings": []}

    async def start_recording(self, name: str) -> dict[str, Any]:
        found = await self._call("POST", "/api/recordings", json={"name": name})
        return found if isinstance(found, dict) else {}

    async def stop_recording(self) -> dict[str, Any]:
        found = await self._call("POST", "/api/recordings/stop", timeout=60)
        return found if isinstance(found, dict) else {}

    async def approval_screenshot(self, approval_id: str) -> bytes | None:
        return await self._image(f"/api/approvals/{quote(approval_id, safe='')}/screenshot")

    async def _image(self, *paths: str) -> bytes | None:
        return (await self._image_of(*paths))[0]

    async def _image_of(self, *paths: str) -> tuple[bytes | None, httpx.Headers]:
        """The image at the first of ``paths`` the daemon has one for, and its headers;
        None when none has (404: no picture, or a daemon that does not serve it; 409: a
        fleet worker's screen with nothing to show; 503: no display to capture)."""
        for path in paths:
            try:
                response = await self._request("GET", path)
            except BackendError as exc:
                if exc.status in (404, 409, 503):
                    continue
                raise
            found = response_body(response)
            return (found if isinstance(found, bytes) else None), response.headers
        return None, httpx.Headers()

    async def aclose(self) -> None:
        await self._client.aclose()


def last_step_note(headers: httpx.Headers) -> str:
    """The caption of a fleet worker's last step picture (``x-jarvis-screen: last-step``:
    not the screen now); empty for a live picture."""
    if headers.get("x-jarvis-screen") != "last-step":
        return ""
    worker = headers.get("x-jarvis-worker", "")
    on = f" on worker {worker}" if worker else ""
    return f"last step's picture (step {headers.get('x-jarvis-step', '?')}{on}), not live"
