"""`jarvis calibrate`: the scripted model looks at the picture it was actually sent, finds
the circle it was asked for by its colour, and answers in one convention; the report names
that convention, and says whether it is the profile's (exit 0) or not (exit 1, with the
profiles that would fit). Through the CLI and the real openai and anthropic SDKs."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from jarvis.calibrate.calibrate import TARGETS, picture, radius
from jarvis.cli import main
from jarvis.desktop.screen import Size
from tests.agent_harness import TEST_KEY
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

COLOURS = {t.colour: t.rgb for t in TARGETS}


def sent_picture(request: RecordedRequest) -> Image.Image:
    """The last image of the request (OpenAI's data URL or Anthropic's base64 source)."""
    found = ""
    for message in request.messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "image_url":
                found = block["image_url"]["url"].split(",", 1)[1]
            elif block.get("type") == "image":
                found = block["source"]["data"]
    return Image.open(io.BytesIO(base64.b64decode(found))).convert("RGB")


def circle_centre(image: Image.Image, rgb: tuple[int, int, int]) -> tuple[float, float]:
    """The centroid of the pixels of ``rgb`` (what a model that sees well points at)."""
    pixels = np.asarray(image, dtype=np.int16)
    near = np.abs(pixels - np.array(rgb, dtype=np.int16)).sum(axis=2) < 40
    ys, xs = np.nonzero(near)
    assert len(xs), f"no {rgb} circle in the picture sent"
    return float(xs.mean()) + 0.5, float(ys.mean()) + 0.5


Answer = Callable[[tuple[float, float], Image.Image], list[float]]
PIXELS: Answer = lambda c, im: [round(c[0]), round(c[1])]  # noqa: E731
REL_1000: Answer = lambda c, im: [round(c[0] / im.width * 1000), round(c[1] / im.height * 1000)]  # noqa: E731


def looking_model(answer: Answer, reply: Callable[[list[float]], Reply]) -> Any:
    def respond(request: RecordedRequest) -> Reply:
        asked = re.search(r"Click the centre of the (\w+) circle", request.all_text())
        assert asked, request.all_text()[-300:]
        image = sent_picture(request)
        return reply(answer(circle_centre(image, COLOURS[asked.group(1)]), image))

    return respond


def click(point: list[float]) -> Reply:
    return Reply(tool_calls=[call("click", x=point[0], y=point[1])])


def qwen_click(point: list[float]) -> Reply:
    return Reply(tool_calls=[call("computer_use", action="left_click", coordinate=point)])


def _calibrate(
    fake: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *argv: str
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.anthropic_base_url)
    code = main(["calibrate", "--data-dir", str(tmp_path / "data"), "--json", *argv])
    return code, {}


def run_cli(
    fake: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any, *argv: str
) -> tuple[int, dict[str, Any]]:
    code, _ = _calibrate(fake, monkeypatch, tmp_path, *argv)
    out = capsys.readouterr().out.strip().splitlines()
    return code, json.loads(out[-1])


def test_pixel_answers_fit_the_generic_profile(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    fake_model.set_default(looking_model(PIXELS, click))
    code, report = run_cli(
        fake_model, monkeypatch, tmp_path, capsys,
        "--provider", "openai", "--model", "llava-v1.6", "--screen", "1920x1080",
    )  # fmt: skip
    assert code == 0, report
    assert report["profile"] == "generic" and report["best"] == "pixels of the image sent"
    assert report["image"] == "1280x720" and report["fits"] is True
    assert report["median_error_px"]["pixels of the image sent"] <= 2
    assert report["median_error_px"]["relative 0..1000"] > 100
    assert len(fake_model.requests) == len(TARGETS)


def test_relative_answers_under_a_pixel_profile_are_a_mismatch(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    fake_model.set_default(looking_model(REL_1000, click))
    code, report = run_cli(
        fake_model, monkeypatch, tmp_path, capsys,
        "--provider", "openai", "--model", "llava-v1.6", "--screen", "2560x1440",
    )  # fmt: skip
    assert code == 1
    assert report["best"] == "relative 0..1000" and report["fits"] is False
    assert report["median_error_px"]["relative 0..1000"] <= 3
    main(["calibrate", "--data-dir", str(tmp_path / "data"), "--screen", "2560x1440",
          "--provider", "openai", "--model", "llava-v1.6"])  # fmt: skip
    said = capsys.readouterr().out
    assert "MISMATCH" in said and "qwen3-vl" in said and "glm-4.5v" in said


def test_qwen3_vl_tool_calls_on_its_relative_scale_fit(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    """vLLM-style `computer_use` calls on 0..1000, about the smart-resized picture."""
    fake_model.set_default(looking_model(REL_1000, qwen_click))
    code, report = run_cli(
        fake_model, monkeypatch, tmp_path, capsys,
        "--provider", "openai", "--model", "Qwen3-VL-8B-Instruct", "--screen", "3440x1440",
    )  # fmt: skip
    assert code == 0, report
    assert report["profile"] == "qwen3-vl" and report["declared"] == "relative 0..1000"
    width, height = (int(v) for v in report["image"].split("x"))
    assert width % 32 == 0 and height % 32 == 0  # the size Qwen3-VL's resize keeps
    assert "computer_use" in fake_model.requests[0].tool_names


def test_claude_answers_through_its_computer_tool(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    """Claude's computer tool, pixels of Anthropic's recommended size for the screen."""
    (tmp_path / "data" / "config").mkdir(parents=True)
    (tmp_path / "data" / "config" / "settings.json").write_text('{"native_computer_tool": true}')

    def computer(point: list[float]) -> Reply:
        return Reply(tool_calls=[call("computer", action="left_click", coordinate=point)])

    fake_model.set_default(looking_model(PIXELS, computer))
    code, report = run_cli(
        fake_model, monkeypatch, tmp_path, capsys,
        "--provider", "anthropic", "--screen", "1920x1080",
    )  # fmt: skip
    assert code == 0, report
    assert report["profile"] == "claude" and report["image"] == "1366x768"


def test_malformed_clicks_count_as_no_point(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    looking = looking_model(PIXELS, click)
    bad = iter([{"x": "left", "y": 3}, {"y": 3}, {"x": True, "y": 1}])

    def answer(request: RecordedRequest) -> Reply:
        args = next(bad, None)
        return Reply(tool_calls=[call("click", **args)]) if args else looking(request)

    fake_model.set_default(answer)
    code, report = run_cli(
        fake_model, monkeypatch, tmp_path, capsys, "--provider", "openai", "--model", "gpt-4o"
    )
    assert list(report["answers"].values())[:3] == [None, None, None]
    assert all(v is not None for v in list(report["answers"].values())[3:])
    assert code == 0 and report["best"] == "pixels of the image sent"


def test_no_point_in_the_answers_is_not_a_fit(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    fake_model.set_default(Reply(text="I see five circles."))
    code, report = run_cli(
        fake_model, monkeypatch, tmp_path, capsys, "--provider", "openai", "--model", "gpt-4o"
    )
    assert code == 1 and report["fits"] is False and report["best"] is None
    assert set(report["answers"].values()) == {None}


def test_bad_profile_and_unreachable_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    (tmp_path / "data" / "config").mkdir(parents=True)
    (tmp_path / "data" / "config" / "settings.json").write_text('{"max_retries": 0}')
    data = str(tmp_path / "data")
    assert main(["calibrate", "--data-dir", data, "--profile", "nope"]) == 2
    assert "unknown model profile 'nope'" in capsys.readouterr().out
    argv = ["calibrate", "--data-dir", data, "--provider", "openai", "--screen", "800x600"]
    assert main(argv) == 2
    assert "could not be asked" in capsys.readouterr().out


def test_the_picture_has_each_circle_where_it_says() -> None:
    screen = Size(1600, 900)
    image = picture(screen)
    r = radius(screen)
    for t in TARGETS:
        x, y = t.centre(screen)
        assert image.getpixel((x - r // 2, y)) == t.rgb  # inside, off the label
        assert image.getpixel((x + r + 3, y)) != t.rgb  # outside


def scaled(d: float, places: int) -> Answer:
    """Answers on a 0..d scale, written to ``places`` decimals."""

    def answer(c: tuple[float, float], im: Image.Image) -> list[float]:
        return [round(c[0] / im.width * d, places), round(c[1] / im.height * d, places)]

    return answer


REL_999, REL_1000_F, REL_UNIT = scaled(999, 2), scaled(1000, 2), scaled(1, 4)


@pytest.mark.parametrize(
    ("answer", "space", "coordinates"),
    [
        (PIXELS, "pixels of the image sent", None),
        (REL_1000_F, "relative 0..1000", "0..1000"),
        (REL_999, "relative 0..999", "0..999"),
        (REL_UNIT, "relative 0..1", "0..1"),  # used to be truncated to 0
    ],
)
def test_calibrate_names_every_space(
    answer: Answer, space: str, coordinates: str | None,
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any,
) -> None:  # fmt: skip
    fake_model.set_default(looking_model(answer, click))
    code, report = run_cli(
        fake_model, monkeypatch, tmp_path, capsys,
        "--provider", "openai", "--model", "acme-vl", "--screen", "3440x1440",
    )  # fmt: skip
    assert report["best"] == space, report
    if coordinates is None:
        assert code == 0 and report["suggestion"] is None
        return
    assert code == 1
    entry = report["suggestion"]["model_profiles"]["acme-vl"]
    assert entry["coordinates"] == coordinates and entry["patterns"] == ["^acme\\-vl$"]
    # the entry pasted into settings.json loads, and is then the profile in use and fits
    config = tmp_path / "data" / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(
        json.dumps({"model_profiles": report["suggestion"]["model_profiles"]})
    )
    assert (
        main(["profiles", "show", "acme-vl", "--json", "--data-dir", str(tmp_path / "data")]) == 0
    )
    assert json.loads(capsys.readouterr().out)["coordinates"] == coordinates
