"""A task logs into a loopback site with ``type_secret``, through `jarvis serve`'s API, and
the password is nowhere: not in the data dir (journal, step records, run.json, logs,
todos, the report), not in an API answer or the event stream, not in any request sent to
the scripted model; the screenshot sent after typing has the field masked.

Chromium shows the login page with its accessibility tree on a private bus; the model
finds the password field in the tree, clicks it and calls ``type_secret("site")``; the
page posts the form to the test's server, which checks the password.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from jarvis.cli import main
from jarvis.desktop.a11y.session import A11ySession
from jarvis.desktop.masks import MASK_FILL
from jarvis.geometry import Size, fit_size, screen_to_model
from jarvis.secrets.store import SecretInfo, SecretStore
from tests.a11yapps import publishing_env, start_chromium
from tests.agent_harness import agent_settings
from tests.api_harness import Received, listen, routed, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, ToolUse, call
from tests.login_site import LoginSite
from tests.xserver import Xvfb

PASSWORD = "Tr0ub4dor&3-loopback-only"
FIELD = re.compile(r"^\[(e\d+)\] password text", re.M)


@pytest.fixture(scope="module")
def session(xserver: Xvfb) -> Iterator[A11ySession]:
    with A11ySession(xserver.env()) as started:
        yield started


def _last_image(request: RecordedRequest) -> Image.Image:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "base64" and isinstance(node.get("data"), str):
                found.append(node["data"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(request.body["messages"])
    return Image.open(io.BytesIO(base64.b64decode(found[-1]))).convert("RGB")


def test_a_login_with_type_secret_leaves_the_password_nowhere(
    xserver: Xvfb,
    session: A11ySession,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("JARVIS_SECRETS_KEY", "the user's passphrase")
    settings = agent_settings(
        tmp_path,
        fake_model,
        monkeypatch,
        observation="screenshot+tree",
        a11y_session_bus=session.address,
        context_policy="sliding",
        image_format="png",
        settle_ceiling_ms=800,
        safety={"secrets": {"store": "file"}},
    )
    site = LoginSite(PASSWORD)
    store = SecretStore(settings.data_dir, settings.safety.secrets)
    only_in = [f"{site.url}*"]  # the page's URL, from the tree (its title is not trusted)
    site_secret = SecretInfo(name="site", description="my password on Example", only_in=only_in)
    store.add(site_secret, PASSWORD)
    work = tmp_path / "work"
    work.mkdir()
    app = start_chromium(work, publishing_env(work, xserver.env(), session), site.url)
    seen: dict[str, Any] = {}

    def step(request: RecordedRequest) -> Reply:
        text = request.all_text()
        if "type_secret" not in seen:
            found = FIELD.search(text)
            if not found:  # the page's tree comes after its load: look again
                return Reply(tool_calls=[call("wait", ms=300)])
            assert "site: my password on Example" in json.dumps(request.tools)
            seen["type_secret"] = _last_image(request)
            calls = [
                call("click_element", id=found.group(1)),
                ToolUse("type_secret", {"name": "site"}),
            ]
            return Reply(text="Thought: the password field.", tool_calls=calls)
        if "enter" not in seen:
            seen["enter"] = _last_image(request)
            return Reply(tool_calls=[call("press_key", key="enter")])
        return Reply(tool_calls=[call("finished", summary="signed in")])

    fake_model.set_default(routed(step))
    bodies: list[bytes] = []

    async def keep(response: httpx.Response) -> None:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            await response.aread()
            bodies.append(response.content)

    async def drive() -> Received:
        hooks = {"response": [keep]}
        async with serving_api(settings) as api, api.client(event_hooks=hooks) as client:
            got = Received()
            stream = asyncio.create_task(listen(client, got))
            await got.connected.wait()
            text = "Sign in to Example with my password"
            posted = await client.post("/api/messages", json={"text": text, "channel": "web"})
            assert posted.status_code == 201
            await asyncio.wait_for(stream, 120)
            await until(lambda: api.journal("T001")[-1]["kind"] == "reply_ready")
            task = (await client.get("/api/tasks/T001")).json()
            assert task["run"]["status"] == "completed", task["run"]
            for path in ("/api/todos", "/api/runs", "/api/approvals", "/api/health"):
                assert (await client.get(path)).status_code == 200
            return got

    try:
        site.wait("rects")
        got = asyncio.run(drive())
        site.wait("logins")
        assert site.logins == [True]  # the page got the right password
    finally:
        app.close()
        site.close()
    # the secret's field is masked in the screenshot sent after typing, and only then
    screen = Size(xserver.width, xserver.height)
    model = fit_size(screen, settings.max_side)
    centre = screen_to_model(*site.centre("pw"), model, screen)
    assert seen["type_secret"].getpixel(centre) != MASK_FILL
    assert seen["enter"].getpixel(centre) == MASK_FILL
    [typed] = [
        e for _, k, e in got.events if k == "tool_call_finished" and e["tool_name"] == "type_secret"
    ]
    assert typed["ok"] and typed["data"]["hidden"] == "field", typed  # its box from the tree
    # the report is made, then every byte is searched
    assert main(["report", "T001", "--data-dir", str(settings.data_dir)]) == 0
    secret = PASSWORD.encode()
    files = [p for p in settings.data_dir.rglob("*") if p.is_file()]
    assert any(p.name == "report.html" for p in files) and any(p.suffix == ".jsonl" for p in files)
    for path in files:
        assert secret not in path.read_bytes(), path
    assert bodies and all(secret not in body for body in bodies)
    assert PASSWORD not in json.dumps([e for _, _, e in got.events])
    assert fake_model.requests and all(
        PASSWORD not in json.dumps(r.body) for r in fake_model.requests
    )
    assert PASSWORD not in caplog.text
