"""The whole agent with an MCP server: the scripted model (behind the real SDKs) calls the
demo server's tools over stdio, sees their text and their image, then clicks and types in
the Tk app on Xvfb."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.events import ToolCallFinished
from tests.agent_harness import agent_settings, model_point, run_agent
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.mcp_fixtures import stdio_entry, write_mcp_json
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")

VERIFIED = Reply(text='{"done": true, "reason": "the box shows the echo and OK was pressed"}')


def png_images(request: RecordedRequest) -> list[Image.Image]:
    """The PNG images of a request (screenshots are JPEG): the tool's pictures."""
    found = []
    for block in request._blocks():
        if block.get("type") == "image" and block["source"]["media_type"] == "image/png":
            found.append(block["source"]["data"])
        elif block.get("type") == "image_url" and "image/png" in block["image_url"]["url"]:
            found.append(block["image_url"]["url"].split(",", 1)[1])
    return [Image.open(io.BytesIO(base64.b64decode(data))) for data in found]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_the_model_calls_an_mcp_tool_then_clicks_the_app(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: Any, provider: str
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider=provider, toolbox={"mcp": {}}
    )
    write_mcp_json(settings.data_dir, {"demo": stdio_entry(tmp_path / "starts.txt")})
    box, ok = model_point(tkapp, "box", settings), model_point(tkapp, "ok", settings)
    fake_model.script(
        Reply(
            text="Thought: ask the MCP server first.",
            tool_calls=[call("demo__echo", text="mcp"), call("demo__picture", color="green")],
        ),
        Reply(
            text="Thought: the server said 'echo: mcp' and showed a green picture; type it.",
            tool_calls=[
                call("click", x=box[0], y=box[1]),
                call("type", text="echo: mcp"),
                call("click", x=ok[0], y=ok[1]),
            ],
        ),
        Reply(text="Thought: done.", tool_calls=[call("finished", summary="typed the echo")]),
        VERIFIED,
    )
    outcome, events = await run_agent(settings, "type what the MCP echo says and press OK")

    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == "echo: mcp"
    first, second = fake_model.requests[0], fake_model.requests[1]
    assert {"demo__echo", "demo__picture", "demo__schedule"} <= set(first.tool_names)
    assert png_images(first) == []
    assert "echo: mcp" in second.all_text() and '"images_attached": 1' in second.all_text()
    [picture] = png_images(second)
    assert picture.size == (64, 48) and picture.convert("RGB").getpixel((3, 3)) == (0, 128, 0)
    finished = [(e.tool_name, e.ok) for e in events.of(ToolCallFinished)]
    assert finished[:2] == [("demo__echo", True), ("demo__picture", True)]
