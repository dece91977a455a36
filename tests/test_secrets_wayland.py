"""``type_secret`` on a wlroots desktop: the real agent on a private headless sway, its
app a real terminal (foot) writing what it reads to a file, the scripted model on
127.0.0.1. The model calls ``type_secret`` and then presses Enter; the value reaches foot
through the virtual keyboard (wtype, the text on its stdin, on no command line); the
screenshot sent after typing has foot's window (the focused window's box from sway: foot
publishes no tree) masked; the value is in no file of the data dir and in no request
sent to the model."""

from __future__ import annotations

import asyncio
import base64
import io
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.agent.factory import build_agent
from jarvis.desktop.masks import MASK_FILL
from jarvis.events import EventBus
from jarvis.safety.wayland_sandbox import OutputSpec
from jarvis.secrets.store import SecretInfo, SecretStore
from tests.agent_harness import agent_settings
from tests.fake_model import FakeModel, RecordedRequest, Reply, ToolUse, call
from tests.wayland import needs_sway, start_sway, wait_window

pytestmark = needs_sway
PASSWORD = "wayland-Secret-3141"
APP_ID = "jarvis-secret"
OUTPUT = (1280, 720)


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


def _line(path: Path) -> bytes:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().endswith(b"\n"):
            return path.read_bytes()
        time.sleep(0.02)
    raise AssertionError(f"no line arrived in {path}")


def test_type_secret_types_into_foot_on_sway_masked_and_in_no_record(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("JARVIS_SECRETS_KEY", "the user's passphrase")
    settings = agent_settings(
        tmp_path,
        fake_model,
        monkeypatch,
        image_format="png",
        settle_ceiling_ms=300,
        safety={"secrets": {"store": "file"}},
    )
    store = SecretStore(settings.data_dir, settings.safety.secrets)
    store.add(SecretInfo(name="shell", description="the shell's password"), PASSWORD)
    fake_model.script(
        Reply(text="Thought: type it.", tool_calls=[ToolUse("type_secret", {"name": "shell"})]),
        Reply(tool_calls=[call("press_key", key="enter")]),
        Reply(tool_calls=[call("finished", summary="typed")]),
        Reply(text='{"done": true, "reason": "typed"}'),
    )
    with start_sway([OutputSpec(*OUTPUT, 1.0, 0, 0)]) as sway:
        assert sway.where is not None
        out = sway.runtime_dir.parent / "typed.txt"  # where the sway user may write
        sway.run_app(["foot", "-a", APP_ID, "sh", "-c", f"stty -echo; cat > {out}"])
        node = wait_window(sway, lambda n: n.get("app_id") == APP_ID and n.get("focused"))

        async def run() -> Any:
            async with build_agent(settings, EventBus(), where=sway.where) as agent:
                return await asyncio.wait_for(agent.run("type my shell password"), 120)

        outcome = asyncio.run(run())
        assert outcome.status == "finished", outcome
        assert _line(out) == (PASSWORD + "\n").encode()
    first = _last_image(fake_model.requests[0])
    after = _last_image(fake_model.requests[1])  # the picture sent after type_secret
    rect = node["rect"]
    centre = (rect["x"] + rect["width"] // 2, rect["y"] + rect["height"] // 2)
    point = (centre[0] * after.width // OUTPUT[0], centre[1] * after.height // OUTPUT[1])
    assert after.getpixel(point) == MASK_FILL
    assert first.getpixel(point) != MASK_FILL  # foot before the secret: not masked
    said = fake_model.requests[1].all_text()  # the result: typed by name, foot's window hidden
    assert '"typed": "shell", "into": "foot", "hidden": "window"' in said, said[-300:]
    for request in fake_model.requests:
        assert PASSWORD not in request.all_text()
    for path in settings.data_dir.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
