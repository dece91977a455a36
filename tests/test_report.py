"""report.html of a scripted run, opened in Debian's Chromium through Playwright."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jarvis.cli import main
from jarvis.runs.markers import to_picture
from jarvis.runs.report import locate
from jarvis.runs.step_file import load_steps
from tests.agent_harness import TEST_KEY, agent_settings, model_point
from tests.fake_model import FakeModel, Reply, call
from tests.runs_harness import run_journaled
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")

ARTIFACTS = Path(os.environ.get("JARVIS_TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def script(app: TkApp, settings) -> list[Reply]:
    box, ok = model_point(app, "box", settings), model_point(app, "ok", settings)
    notes, pad = model_point(app, "notes", settings), model_point(app, "pad", settings)
    return [
        Reply(
            text="Reflection: the app is open.\nThought: fill the box, then press OK.",
            tool_calls=[
                call("click", x=box[0], y=box[1]),
                call("type", text=f"hello {TEST_KEY}"),
                call("hotkey", keys="ctrl+a"),
                call("double_click", x=box[0] + 30, y=box[1]),
                call("click", x=ok[0], y=ok[1]),
            ],
            input_tokens=1200,
            output_tokens=80,
        ),
        Reply(
            text="Thought: try a click off the screen.",
            tool_calls=[call("click", x=5000, y=10)],
        ),
        Reply(
            text="Thought: write in the notes, drag and scroll.",
            tool_calls=[
                call("click", x=notes[0], y=notes[1]),
                call("press_key", key="enter"),
                call(
                    "drag",
                    startX=notes[0] - 40,
                    startY=notes[1],
                    endX=notes[0] + 60,
                    endY=notes[1] + 20,
                ),
                call("scroll", x=pad[0], y=pad[1], direction="down", amount=3),
                call("right_click", x=pad[0] + 100, y=pad[1] - 50),
            ],
        ),
        Reply(text="Thought: done.", tool_calls=[call("finished", summary="filled the box")]),
        Reply(text='{"done": true, "reason": "the box shows hello"}'),
    ]


async def test_report_in_chromium(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.async_api import async_playwright

    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    fake_model.script(*script(tkapp, settings))
    outcome = await run_journaled(settings, "fill the box and press OK")
    assert outcome.status == "finished", outcome.summary

    assert main(["report", outcome.task_id, "--data-dir", str(settings.data_dir)]) == 0
    folder = locate(settings.data_dir, outcome.task_id)
    html_path = folder / "report.html"
    html = html_path.read_text(encoding="utf-8")
    assert TEST_KEY not in html
    steps = [s for _, s in load_steps(folder)]
    assert [s.step for s in steps] == [1, 2, 3, 4]

    url = html_path.resolve().as_uri()
    requests: list[str] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            await page.route(
                "**/*",
                lambda route: route.continue_() if route.request.url == url else route.abort(),
            )
            await page.goto(url)
            await page.wait_for_load_state("load")
            cards = page.locator("section.step")
            assert await cards.count() == len(steps)
            assert await page.locator("nav.filmstrip a").count() == len(steps)
            assert await page.locator("section.step.failed").count() == 1
            assert await page.locator("#step-2.failed").count() == 1
            assert await page.locator("#status").text_content() == "completed"
            assert await page.locator("h1").text_content() == "fill the box and press OK"

            checked = 0
            for step in steps:
                card = page.locator(f"#step-{step.step}")
                img = await card.locator("img.shot-img").bounding_box()
                assert img is not None
                zoom = img["width"] / step.monitor.model[0]
                for index, recorded in enumerate(step.calls):
                    if recorded.name not in ("click", "double_click", "right_click"):
                        continue
                    if not recorded.screen_points:  # the off-screen click never got a point
                        continue
                    dot = card.locator(f'g.marker[data-call="{index}"] .dot')
                    box = await dot.bounding_box()
                    assert box is not None
                    px, py = to_picture(step, *recorded.screen_points[0])
                    want_x, want_y = img["x"] + px * zoom, img["y"] + py * zoom
                    got_x, got_y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
                    assert abs(got_x - want_x) <= 2 and abs(got_y - want_y) <= 2, (
                        step.step,
                        index,
                        (got_x, got_y),
                        (want_x, want_y),
                    )
                    checked += 1
            assert checked == 5
            kinds = {
                "bubble": 1,
                "keycap": 2,
                "arrow.drag": 1,
                "arrow.scroll": 1,
            }
            for kind, count in kinds.items():
                assert await page.locator(f"g.marker.{kind}").count() == count, kind
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=False)
        finally:
            await browser.close()
    assert requests == [url], requests


def test_report_of_an_unknown_task_says_so(tmp_path: Path, capsys) -> None:
    assert main(["report", "t-nothing", "--data-dir", str(tmp_path)]) == 1
    assert "no run of task 't-nothing'" in capsys.readouterr().err
    assert main(["replay", "t-nothing", "--data-dir", str(tmp_path)]) == 1
    assert "no run of task 't-nothing'" in capsys.readouterr().err
