"""A new model declared only in settings.json (``model_profiles``, no code change) drives a
task on Xvfb: pyautogui code on a 0..999 scale, with a serving stack's smaller
``max_pixels`` and a reasoning block that drafts a wrong click; the clicks land within
1 px. A profile that cannot be right is refused at start with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.cli import main
from jarvis.desktop.screen import Size
from jarvis.geometry import from_screen
from jarvis.llm.profiles.select import active_profile, geometry
from tests.fake_model import FakeModel, Reply
from tests.test_profiles_e2e import run_profile, sent_image_size
from tests.tkdriver import TkApp

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]

ACME = {
    "title": "Acme-VL (a model Jarvis has never heard of)",
    "patterns": ["^acme/acme-vl"],
    "api": "openai-chat",
    "action_format": "pyautogui",
    "coordinates": "0..999",
    "image": {"rule": "smart", "factor": 28, "min_pixels": 3136, "max_pixels": 802816},
    "served": "vLLM with --mm-processor-kwargs max_pixels=802816",
}


def write_settings(tmp_path: Path, profiles: dict) -> None:
    config = tmp_path / "data" / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"model_profiles": profiles}))


async def test_a_profile_from_settings_drives_a_task(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    write_settings(tmp_path, {"acme-vl": ACME})

    def script(settings) -> tuple[list[Reply], list]:
        profile = active_profile(settings).profile
        assert profile.name == "acme-vl"
        screen = Size(*tkapp.screen)
        _, image = geometry(profile, screen, settings)

        def at(widget: str) -> tuple[list[int], tuple[int, int]]:
            target = tkapp.widget_center(widget)
            raw = from_screen(*target, profile.space, image, screen)
            return [round(v) for v in raw], target

        (bx, by), box = at("box")
        (ox, oy), ok = at("ok")
        replies = [
            Reply(
                text="<think>maybe pyautogui.click(x=1, y=1)</think>\n## Action\n"
                f"```python\npyautogui.click(x={bx}, y={by})\npyautogui.write(message='hello')\n```"
            ),
            Reply(text=f"```python\npyautogui.click(x={ox}, y={oy})\n```"),
            Reply(text="```python\ncomputer.terminate(status='success')\n```"),
        ]
        return replies, [box, ok]

    _, requests = await run_profile(
        tkapp, fake_model, tmp_path, monkeypatch, "acme/acme-vl-7b", script
    )
    # 1920x1080 under the serving stack's 802816-pixel budget: multiples of 28 inside it
    width, height = sent_image_size(requests[0])
    assert width % 28 == 0 and height % 28 == 0 and width * height <= 802816
    assert requests[0].tools == [] and "pyautogui.click" in requests[0].all_text()


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({**ACME, "action_format": "tools"}, "model_profiles.acme-vl: coordinates"),
        ({**ACME, "action_format": "morse"}, "model_profiles.acme-vl.action_format"),
        ({**ACME, "coordinates": "0..100"}, "model_profiles.acme-vl.coordinates"),
        ({"extends": "nope"}, "model_profiles.acme-vl.extends"),
    ],
)
def test_a_wrong_profile_is_refused_at_start_with_one_line(
    entry: dict, field: str, tmp_path: Path, capsys
) -> None:
    write_settings(tmp_path, {"acme-vl": entry})
    code = main(["run", "--data-dir", str(tmp_path / "data"), "click the box"])
    err = capsys.readouterr()
    said = (err.out + err.err).strip()
    assert code != 0
    assert field in said, said
    assert len(said.splitlines()) == 1 and "Traceback" not in said
