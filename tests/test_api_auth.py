"""The API's guard, as an attacker meets it: no or wrong token, a foreign Origin, a rebound
Host, the cookie without Origin, login links used twice, and screenshot paths that try to
leave their folder. A real uvicorn on a free loopback port; raw sockets where a client
library would clean the request up."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from jarvis.api.auth import COOKIE, allowed_hosts, cookie_value, load_or_create_token
from jarvis.api.settings import parse_http
from jarvis.gateway.queue import MessageQueue
from tests.agent_harness import agent_settings
from tests.api_harness import serving_api
from tests.fake_model import FakeModel

pytestmark = pytest.mark.usefixtures("xserver")

PROTECTED = [
    ("GET", "/api/health"),
    ("GET", "/api/todos"),
    ("GET", "/api/tasks/T001"),
    ("GET", "/api/events"),
    ("GET", "/api/runs"),
    ("GET", "/api/workers"),
    ("GET", "/api/schedules"),
    ("GET", "/api/screenshots/2026-01-01/a.png"),
    ("GET", "/api/screen/latest"),
    ("POST", "/api/messages"),
    ("POST", "/api/tasks/T001/cancel"),
    ("POST", "/api/tasks/T001/answer"),
    ("POST", "/api/logout"),
    ("GET", "/docs"),
    ("GET", "/openapi.json"),
    ("GET", "/no/such/route"),
]


async def raw_get(port: int, target: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """One HTTP/1.1 request with the target sent byte for byte (no dot-segment cleanup)."""
    lines = [f"GET {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(("\r\n".join([*lines, "Connection: close", "", ""])).encode())
        data = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


async def test_every_path_but_the_panel_needs_the_token(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api:
        token_file = settings.data_dir / "config" / "api_token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert token_file.read_text().strip() == api.token and len(api.token) >= 32
        async with httpx.AsyncClient(base_url=api.base, timeout=10) as anon:
            for method, path in PROTECTED:
                for headers in ({}, {"authorization": "Bearer wrong-token-" + "x" * 30},
                                {"authorization": f"Basic {api.token}"},
                                {"cookie": f"{COOKIE}=forged"}):  # fmt: skip
                    r = await anon.request(method, path, headers=headers, json={"text": "x"})
                    assert r.status_code == 401, (method, path, headers, r.text)
                    assert r.headers["www-authenticate"] == "Bearer"
            for path in ("/", "/static/panel.js", "/static/panel.css"):
                assert (await anon.get(path)).status_code == 200, path
            page = await anon.get("/")
            assert "default-src 'none'" in page.headers["content-security-policy"]
            assert api.token not in page.text
        async with api.client() as client:
            health = await client.get("/api/health")
            assert health.status_code == 200 and health.json()["status"] == "ok"
            assert (await client.get("/openapi.json")).json()["info"]["title"]
    # a restart keeps the token
    assert load_or_create_token(settings.data_dir) == api.token


async def test_foreign_origin_and_a_rebound_host_are_refused(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api:
        port = api.service.port
        assert port is not None
        async with api.client() as client:
            origins = [
                "http://evil.example",
                "null",
                f"http://evil.example:{port}",
                f"https://127.0.0.1:{port}",
                f"http://127.0.0.1:{port}.evil.example",
            ]
            for origin in origins:
                for method, path in (("GET", "/api/todos"), ("POST", "/api/messages"),
                                     ("GET", "/"), ("GET", "/login?code=x")):  # fmt: skip
                    r = await client.request(
                        method, path, headers={"origin": origin}, json={"text": "run rm -rf"}
                    )
                    assert r.status_code == 403, (origin, path, r.text)
            r = await client.get("/api/todos", headers={"sec-fetch-site": "cross-site"})
            assert r.status_code == 403
            same = await client.get("/api/todos", headers={"origin": f"http://127.0.0.1:{port}"})
            assert same.status_code == 200
        for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}",
                     "127.0.0.1", f"localhost.evil.example:{port}", ""):  # fmt: skip
            for target in ("/", "/api/health", "/static/panel.js"):
                status, _ = await raw_get(port, target, {"Host": host, **api.auth})
                assert status == 403, (host, target)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
            status, _ = await raw_get(port, "/api/health", {"Host": host, **api.auth})
            assert status == 200, host
        assert MessageQueue(settings.data_dir).pending() == []  # nothing got in


async def test_the_login_link_works_once_and_the_cookie_needs_origin_to_change_things(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api:
        origin = {"origin": api.base}
        [login_line] = [line for line in api.announced if "/login?code=" in line]
        link = login_line.split("one-time login: ")[1]
        assert api.token not in "".join(api.announced)
        async with httpx.AsyncClient(timeout=10) as browser:
            assert (await browser.get(link.replace("code=", "code=x"))).status_code == 401
            first = await browser.get(link)
            assert first.status_code == 303 and first.headers["location"] == "/"
            cookie = first.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
            assert f"{COOKIE}={cookie_value(api.token)}" in cookie and api.token not in cookie
            again = await httpx.AsyncClient(timeout=10).get(link)
            assert again.status_code == 401  # one time only
            assert (await browser.get(f"{api.base}/api/todos")).status_code == 200
            post = await browser.post(f"{api.base}/api/messages", json={"text": "hi"})
            assert post.status_code == 403  # cookie alone, no Origin: refused
            post = await browser.post(
                f"{api.base}/api/messages", json={"text": "hi", "channel": "web"}, headers=origin
            )
            assert post.status_code == 201
        async with httpx.AsyncClient(base_url=api.base, timeout=10, headers=origin) as form:
            bad = await form.post("/api/login", json={"token": "nope"})
            assert bad.status_code == 401 and "set-cookie" not in bad.headers
            good = await form.post("/api/login", json={"token": api.token})
            assert good.status_code == 204 and "HttpOnly" in good.headers["set-cookie"]
            assert (await form.get("/api/health")).status_code == 200


async def test_screenshot_paths_cannot_leave_the_screenshot_folder(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    shots = settings.data_dir / "memory" / "screenshots" / "2026-01-01"
    shots.mkdir(parents=True)
    (shots / "a.png").write_bytes(b"\x89PNG\r\n\x1a\nreal")
    secret = tmp_path / "outside.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\nsecret")
    os.symlink(secret, shots / "link.png")
    async with serving_api(settings) as api:
        port = api.service.port
        assert port is not None
        async with api.client() as client:
            ok = await client.get("/api/screenshots/2026-01-01/a.png")
            assert ok.status_code == 200 and ok.content.endswith(b"real")
            assert ok.headers["content-type"] == "image/png"
            for path in ("2026-01-01/link.png", "2026-01-01/missing.png", "2026-01-01",
                         "%2e%2e/%2e%2e/config/api_token", "..%2f..%2fconfig%2fapi_token",
                         "%2Fetc%2Fpasswd", "/etc/passwd", "2026-01-01/..%2Fa.png",
                         "2026-01-01/.hidden.png", f"{secret}", "2026-01-01%5ca.png"):  # fmt: skip
                r = await client.get(f"/api/screenshots/{path}")
                assert r.status_code == 404, (path, r.status_code)
                assert b"secret" not in r.content and api.token.encode() not in r.content
        for target in ("/api/screenshots/../../config/api_token",
                       "/api/screenshots/2026-01-01/../../../config/api_token",
                       f"/api/screenshots/{secret}", "/api/screenshots//etc/passwd"):  # fmt: skip
            status, body = await raw_get(port, target, {"Host": f"127.0.0.1:{port}", **api.auth})
            assert status == 404, (target, status)
            assert api.token.encode() not in body and b"root:" not in body


def test_http_addresses_parse_and_only_loopback_is_the_default() -> None:
    default = parse_http(":9000")
    assert default is not None and (default.host, default.port) == ("127.0.0.1", 9000)
    assert not default.explicit and default.loopback
    wide = parse_http("0.0.0.0:8000")
    assert wide is not None and wide.explicit and not wide.loopback
    six = parse_http("[::1]:8765")
    assert six is not None and (six.host, six.url_host) == ("::1", "[::1]")
    assert parse_http("off") is None and parse_http("OFF") is None
    for bad in ("host:port", "1.2.3.4:99999", "::1:80", "a b:80", "evil/x:80"):
        with pytest.raises(ValueError):
            parse_http(bad)
    hosts = allowed_hosts("127.0.0.1", 8765, explicit=False, unix=False)
    assert hosts == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"}
    assert "192.168.1.5:8765" in allowed_hosts("192.168.1.5", 8765, explicit=True, unix=False)
