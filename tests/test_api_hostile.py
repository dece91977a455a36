"""The daemon probed as an attacker would, through its real API: odd inputs get a 4xx
(never a 500), the latest-screen route serves no link out of its folder, and a secret in
a provider's error or in a base URL reaches no file the daemon writes and no answer it
serves."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agent_harness import agent_settings
from tests.api_harness import routed, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply

pytestmark = pytest.mark.usefixtures("xserver")
KEY = "sk-ant-api03-HOSTILE-key-quoted-by-the-provider-0123456789"
PASSWORD = "pr0xy-pa55w0rd-in-the-url"
PNG = b"\x89PNG\r\n\x1a\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ODD_REQUESTS: list[tuple[str, str, dict[str, str], dict[str, Any] | None]] = [
    ("GET", "/api/tasks/" + "T" + "9" * 300, {}, None),
    ("GET", "/api/tasks/" + "x" * 5000, {}, None),
    ("GET", "/api/tasks/" + "%C3%A9" * 200, {}, None),
    ("GET", "/api/tasks/" + "%F0%9D%9F%98" * 100, {}, None),  # 100 math digits, 400 bytes
    ("POST", "/api/tasks/" + "T" + "1" * 400 + "/cancel", {}, None),
    ("POST", "/api/tasks/" + "a" * 400 + "/answer", {}, {"text": "yes"}),
    ("POST", "/api/approvals/" + "a-" + "0" * 400, {}, {"decision": "deny"}),
    ("GET", "/api/screenshots/" + "d" * 300 + "/x.png", {}, None),
    ("GET", "/api/screenshots/" + "d/" * 3000 + "x.png", {}, None),
    ("GET", "/api/events", {"last-event-id": "١٢٣"}, None),  # Arabic-Indic digits
    ("GET", "/api/events", {"last-event-id": "²"}, None),  # a digit int() refuses
    ("GET", "/api/events", {"last-event-id": "9" * 5000}, None),
    ("GET", "/api/events", {"last-event-id": "9" * 40}, None),
    ("GET", "/api/events", {"last-event-id": "-1"}, None),
    ("GET", "/api/events?after=" + "9" * 5000, {}, None),
    ("GET", "/api/runs?limit=" + "9" * 5000, {}, None),
]


async def test_odd_inputs_get_a_4xx(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    (settings.data_dir / "runs" / "2026-01-01").mkdir(parents=True)  # a day to look in
    async with serving_api(settings) as api, api.client() as client:
        for method, path, headers, body in ODD_REQUESTS:
            # httpx encodes non-ASCII header values as UTF-8 bytes, as an attacker would
            raw = {k: v.encode() for k, v in headers.items()}
            r = await client.request(method, path, headers=raw, json=body)
            assert 400 <= r.status_code < 500, (method, path[:60], headers, r.status_code)
        assert (await client.get("/api/health")).status_code == 200  # still serving


async def test_screen_latest_serves_no_link_out_of_its_folder(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    outside = tmp_path / "outside.png"
    outside.write_bytes(PNG + b"secret bytes from outside the data dir")
    shots = settings.data_dir / "memory" / "screenshots"
    (shots / "2026-01-01").mkdir(parents=True)
    real = shots / "2026-01-01" / "100000.png"
    real.write_bytes(PNG + b"a real screenshot")
    (shots / "2026-01-02").mkdir()
    (shots / "2026-01-02" / "235959.png").symlink_to(outside)  # the newest name
    (shots / "2099-12-31").symlink_to(tmp_path)  # a day that is a link out
    async with serving_api(settings) as api, api.client() as client:
        latest = await client.get("/api/screen/latest")
        assert latest.status_code == 200 and latest.content == real.read_bytes()
        real.unlink()
        assert (await client.get("/api/screen/latest")).status_code == 404
        for path in ("2026-01-02/235959.png", "2099-12-31/outside.png"):
            assert (await client.get(f"/api/screenshots/{path}")).status_code == 404


async def test_a_secret_in_a_failure_reaches_no_text_the_daemon_writes_or_serves(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    """A provider error quotes the key; another task's base URL carries a password."""

    def step(request: RecordedRequest) -> Reply:
        return Reply.error(401, f"invalid x-api-key: {KEY} (Authorization: Bearer {KEY})")

    fake_model.set_default(routed(step))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, max_retries=0)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    served: list[bytes] = []

    async def keep(response: httpx.Response) -> None:
        await response.aread()
        served.append(response.content)

    async with serving_api(settings) as api, api.client(event_hooks={"response": [keep]}) as c:
        await c.post("/api/messages", json={"text": "open the mail"})
        await until(lambda: _status(api, "T001") == "failed", 60)
    # a daemon whose base URL (with a password) points at a closed port
    dead = f"http://proxyuser:{PASSWORD}@127.0.0.1:{free_port()}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", dead)
    settings = settings.model_copy(update={"max_retries": 0})
    async with serving_api(settings) as api, api.client(event_hooks={"response": [keep]}) as c:
        await c.post("/api/messages", json={"text": "open the calendar"})
        await until(lambda: _status(api, "T002") == "failed", 60)
        summaries = [t["summary"] for t in (await c.get("/api/todos")).json()["todos"]]
        for task_id in ("T001", "T002"):
            await c.get(f"/api/tasks/{task_id}")
        await c.get("/api/runs")
    assert all(summaries) and "[REDACTED]" in summaries[0]
    assert any("proxyuser:[REDACTED]@" in s for s in summaries), summaries
    texts = [b.decode(errors="replace") for b in served]
    texts += [p.read_text(errors="replace") for p in settings.data_dir.rglob("*") if _text_file(p)]
    for text in texts:
        assert KEY not in text and PASSWORD not in text
    todos = (settings.data_dir / "todos.md").read_text()
    assert "[REDACTED]" in todos


def _status(api: Any, todo_id: str) -> str | None:
    todo = api.gateway.todos.get(todo_id)
    return todo.status if todo is not None else None


def _text_file(path: Path) -> bool:
    return path.is_file() and path.suffix in (".md", ".json", ".jsonl", ".log", ".html", "")
