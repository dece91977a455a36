"""The control API describes itself and keeps to the daemon's facade.

- ``/openapi.json`` of a real `jarvis serve`: every ``/api`` operation names its 2xx body
  (a model with properties; the event stream and the images their media types, a 204 none),
  and the bodies the daemon really sends have the keys the schema names.
- ``/docs`` in Debian's Chromium (Playwright), logged in by the one-time link: Swagger UI
  lists every operation, and every request the page made went to 127.0.0.1.
- The modules of ``jarvis/api/`` read none of the gateway's internals (its queue, todos,
  journal, worker, agent): they call :class:`jarvis.gateway.service.DaemonService`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import jarvis.api
from tests.agent_harness import agent_settings
from tests.api_harness import serving_api
from tests.fake_model import FakeModel

ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]  # fmt: skip
STREAMED = {
    ("get", "/api/events"),
    ("get", "/api/screenshots/{path}"),
    ("get", "/api/screen/latest"),
    ("get", "/api/screen/live"),
    ("get", "/api/approvals/{approval_id}/screenshot"),
    ("get", "/api/recordings/{slug}/files/{name}"),
}
"""The operations whose body is not JSON: the event stream and the images."""
METHODS = ("get", "post", "put", "patch", "delete")


def operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method in METHODS:
                yield method, path, op


def resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    assert ref.startswith("#/components/schemas/"), ref
    found: dict[str, Any] = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return found


def body_schema(spec: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    op = spec["paths"][path][method]
    [ok] = [r for code, r in op["responses"].items() if code.startswith("2")]
    return resolve(spec, ok["content"]["application/json"]["schema"])


@pytest.mark.usefixtures("xserver")
async def test_openapi_names_every_api_route_s_response(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api, api.client() as client:
        spec = (await client.get("/openapi.json")).json()
        seen_json, seen_streamed = set(), set()
        for method, path, op in operations(spec):
            if not path.startswith("/api/"):
                continue
            where = (method, path)
            ok = {code: r for code, r in op["responses"].items() if code.startswith("2")}
            assert ok, f"{where} names no 2xx response"
            for code, response in ok.items():
                content = response.get("content", {})
                if code == "204":
                    assert not content, f"{where}: a 204 with a body"
                    continue
                assert content, f"{where}: {code} names no body"
                if "application/json" in content:
                    schema = resolve(spec, content["application/json"].get("schema", {}))
                    assert schema.get("type") == "object", (where, schema)
                    assert schema.get("properties"), f"{where}: an object without properties"
                    seen_json.add(where)
                    continue
                for media, body in content.items():
                    assert media == "text/event-stream" or media.startswith("image/"), where
                    if media.startswith("image/"):
                        assert body["schema"] == {"type": "string", "format": "binary"}, where
                seen_streamed.add(where)
        assert seen_streamed == STREAMED
        assert {("post", "/api/messages"), ("get", "/api/todos"), ("get", "/api/tasks/{task_id}"),
                ("post", "/api/stop"), ("get", "/api/approvals"), ("get", "/api/health"),
                ("get", "/api/runs")} <= seen_json  # fmt: skip

        # what the daemon sends has the shape the schema names
        for path, answer in [
            ("/api/health", (await client.get("/api/health")).json()),
            ("/api/todos", (await client.get("/api/todos")).json()),
            ("/api/runs", (await client.get("/api/runs")).json()),
            ("/api/approvals", (await client.get("/api/approvals")).json()),
            ("/api/workers", (await client.get("/api/workers")).json()),
        ]:
            schema = body_schema(spec, "get", path)
            assert set(answer) == set(schema["properties"]), (path, answer)
        assert (await client.get("/api/workers")).json() == {"fleet": False, "workers": []}
        health = body_schema(spec, "get", "/api/health")
        assert health["properties"]["ready"]["type"] == "boolean"
        todos = body_schema(spec, "get", "/api/todos")["properties"]["todos"]
        todo = resolve(spec, todos["items"])
        assert {"id", "title", "status", "message_ids", "summary"} <= set(todo["properties"])
        stopped = await client.post("/api/stop", json={"by": "api"})
        stop = body_schema(spec, "post", "/api/stop")
        assert stopped.json() == {"stopping": False, "by": "api"}
        assert set(stopped.json()) == set(stop["properties"])

        # the docs page loads only the package's files; ReDoc (a CDN page) is not served
        page = (await client.get("/docs")).text
        links = re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""", page)
        assert "/static/swagger/swagger-ui-bundle.js" in links and "/openapi.json" in links
        assert [u for u in links if "//" in u] == []
        assert (await client.get("/redoc")).status_code == 404


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_docs_load_in_chromium_with_no_request_leaving_the_machine(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api, async_playwright() as p:
        async with api.client() as client:
            spec = (await client.get("/openapi.json")).json()
        count = len(list(operations(spec)))
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = await browser.new_context(viewport={"width": 1300, "height": 2400})
        requests: list[str] = []
        failed: list[str] = []
        context.on("request", lambda r: requests.append(r.url))
        context.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
        page = await context.new_page()
        # the cookie from the one-time link, into this browser (without opening the panel)
        login = await context.request.get(api.service.login_url, max_redirects=0)
        assert login.status == 303
        await page.goto(f"{api.base}/docs")
        await expect(page.locator(".opblock")).to_have_count(count)
        health = page.locator(".opblock-summary-path[data-path='/api/health']")
        await expect(health).to_be_visible()
        await expect(page.locator(".swagger-ui .info .title")).to_contain_text("Jarvis control API")
        await page.screenshot(path=str(ARTIFACTS / "api-docs.png"))
        await browser.close()
    assert count >= 17
    docs = [u for u in requests if urlsplit(u).path.startswith("/static/swagger/")]
    assert {urlsplit(u).path for u in docs} >= {
        "/static/swagger/swagger-ui-bundle.js",
        "/static/swagger/swagger-ui.css",
    }
    assert f"{api.base}/openapi.json" in requests
    local = [u for u in requests if urlsplit(u).hostname == "127.0.0.1"]
    assert [u for u in requests if u not in local and urlsplit(u).scheme != "data"] == []
    assert failed == []


# --- the routes keep to the facade -------------------------------------------------------
INTERNALS = {"queue", "todos", "journal", "worker", "agent", "gateway", "approvals"}
"""The gateway's parts: only :mod:`jarvis.gateway.service` touches them for the API."""
DAEMON_MODULES = {"jarvis.gateway.gateway", "jarvis.gateway.queue", "jarvis.gateway.worker",
                  "jarvis.gateway.router"}  # fmt: skip
BUILDS_THE_SERVICE = "server.py"
"""Gets the gateway from ``jarvis serve`` and makes its service; it may import Gateway."""


def reaches_in(source: str, name: str = "<old routes>") -> list[str]:
    """Where ``source`` reads a gateway part of anything but ``self``, or imports a module
    of the daemon's insides."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in INTERNALS:
            own = isinstance(node.value, ast.Name) and node.value.id == "self"
            if not own:
                found.append(f"{name}:{node.lineno}: .{node.attr}")
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module in DAEMON_MODULES
            and not (name == BUILDS_THE_SERVICE and node.module == "jarvis.gateway.gateway")
        ):
            found.append(f"{name}:{node.lineno}: from {node.module} import ...")
    return found


OLD_ROUTES = """
from jarvis.gateway.gateway import Gateway
async def submit(body, d):
    message = await asyncio.to_thread(d.gateway.queue.append, body.text)
    d.gateway.notify()
async def stop_running(gateway, by):
    gateway.worker.agent.cancel(by)
async def health(d):
    return {"running": d.gateway.journal.current}
"""


def test_api_modules_read_no_gateway_internals() -> None:
    # the check sees what the routes did before the facade
    old = reaches_in(OLD_ROUTES)
    for part in (".queue", ".worker", ".agent", ".journal", "from jarvis.gateway.gateway"):
        assert any(part in hit for hit in old), (part, old)
    folder = Path(jarvis.api.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert {"routes.py", "approvals.py", "app.py", "stream.py", "server.py"} <= {
        m.name for m in modules
    }
    hits = [hit for m in modules for hit in reaches_in(m.read_text(encoding="utf-8"), m.name)]
    assert hits == []
