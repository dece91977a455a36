"""Grounding models: each family's own answer shape, read by the grounder's path
(:func:`jarvis.llm.grounding.read_point`, then the profile's tool grid to the screen), lands
within 1 px of the conversion the model's own code gives, on every screen of the fidelity
matrix (HiDPI included: 1440x900 is the logical size of a 2880x1800 panel; the grounder
sizes its image from the logical size and the point maps back to it).

The models' own conversions, from their code (``source`` in profiles.json): relative
answers ``x / D * W`` (UGround, Holo2, OS-Atlas, InternVL3, ShowUI, GUI-Actor, UI-TARS 1.0,
Doubao); pixel answers on the smart-resized image ``x * W / resized_w`` (GTA1, Holo1,
Holo1.5, Jedi, UI-TARS-1.5). Jarvis takes the centre of the answered image pixel, the
models' code its left edge: for a downscaled image the two are half an image pixel apart,
which is the one tolerance beyond 1 px below.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from jarvis.cli import main
from jarvis.config import ConfigError, load_settings
from jarvis.desktop.screen import Size
from jarvis.geometry import OffScreen, model_to_screen, smart_resize, tool_grid
from jarvis.llm.grounding import GroundingError, grounding_request, read_point
from jarvis.llm.profiles.catalog import PROFILES
from jarvis.llm.types import ImagePart, TextPart
from tests.test_profiles import MATRIX, POINT_ANSWERS, point_answer

GROUNDERS = sorted(n for n, p in PROFILES.items() if p.spec.get("grounding"))
OTHER_SHAPES = {  # grounding with an action model's profile: its own shapes
    "ui-tars-1.5": "Thought: the box\nAction: click(start_box='<|box_start|>({x},{y})<|box_end|>')",
    "ui-tars-1.0": "({x},{y})",
    "doubao": "<point>{x} {y}</point>",
    "aguvis": "Action: click the box\npyautogui.click(x={x}, y={y})",
    # hub.hcompany.ai element-localization: VisualLocalizerOutput {"x", "y"} on 0..1000
    "holo3": '{{"x": {x}, "y": {y}}}',
    "holo3.1": '{{"x": {x}, "y": {y}}}',
    # inclusionAI/UI-Venus models/grounding/ui_venus1_5_gd.py: "[x,y]" on 0..1000
    "ui-venus-1.5": "[{x},{y}]",
}


# each family's convention as its own code states it (written here, not read from the
# profile, so a wrong profile fails): a relative scale D, or pixels of the image after
# the serving side's Qwen2-VL smart_resize (factor, processor's default max_pixels)
OWN = {
    "gta1": ("pixels", 28), "holo1": ("pixels", 28), "holo1.5": ("pixels", 28),
    "jedi": ("pixels", 28), "ui-tars-1.5": ("pixels", 28),
    "holo2": 1000, "uground": 1000, "os-atlas": 1000, "internvl3": 1000,
    "ui-tars-1.0": 1000, "doubao": 1000, "showui": 1, "gui-actor": 1, "aguvis": 1,
    "holo3": 1000, "holo3.1": 1000, "ui-venus-1.5": 1000,
}  # fmt: skip


def served_size(profile: str, image: Size) -> Size:
    """The size the model sees: the image Jarvis sends after the server's own resize."""
    _, factor = OWN[profile]
    h, w = smart_resize(image.height, image.width, factor, 3136, 12845056)
    return Size(w, h)


def test_every_grounding_profile_has_an_answer_shape_here() -> None:
    assert set(GROUNDERS) == set(POINT_ANSWERS) | set(OTHER_SHAPES) == set(OWN)
    assert {"gta1", "uground", "holo1.5", "holo2", "jedi", "os-atlas", "showui"} <= set(GROUNDERS)


def answer(profile: str, values: list[float]) -> str:
    if profile in POINT_ANSWERS:
        return point_answer(profile, values)
    return OTHER_SHAPES[profile].format(x=values[0], y=values[1])


def perfect(profile: str, target: tuple[int, int], image: Size, screen: Size) -> list[float]:
    """What a perfect model of the family writes for the screen pixel ``target``."""
    own = OWN[profile]
    if isinstance(own, tuple):
        seen = served_size(profile, image)
        return [
            math.floor((target[0] + 0.5) * seen.width / screen.width),
            math.floor((target[1] + 0.5) * seen.height / screen.height),
        ]
    d = float(own)
    raw = [(target[0] + 0.5) * d / screen.width, (target[1] + 0.5) * d / screen.height]
    return [round(v, 4) if d == 1 else round(v) for v in raw]


def own_code(profile: str, point: list[float], image: Size, screen: Size) -> tuple:
    """The screen point the model's own code computes from its answer."""
    own = OWN[profile]
    if isinstance(own, tuple):  # x * W / resized_w
        seen = served_size(profile, image)
        return (point[0] * screen.width / seen.width, point[1] * screen.height / seen.height)
    d = float(own)
    return (point[0] / d * screen.width, point[1] / d * screen.height)  # x / D * W


@pytest.mark.parametrize("screen", MATRIX)
@pytest.mark.parametrize("profile", GROUNDERS)
def test_a_grounding_answer_lands_where_the_models_own_code_puts_it(profile, screen) -> None:
    size = Size.parse(screen)
    w, h = size.width, size.height
    spec = PROFILES[profile]
    image = spec.image.size(size, 1280, computer_tool=False)
    grid = tool_grid(spec.space, image)
    assert spec.space.kind == ("pixel" if isinstance(OWN[profile], tuple) else "relative")
    half_pixel = max(w / grid.width, h / grid.height) / 2 if spec.space.kind == "pixel" else 0
    for target in [(0, 0), (w - 1, h - 1), (w // 2, h // 2), (w // 3, 2 * h // 3), (w - 7, 5)]:
        written = perfect(profile, target, image, size)
        text = answer(profile, written)
        gx, gy = read_point(spec, text, image)
        clicked = model_to_screen(gx, gy, grid, size)
        ox, oy = own_code(profile, written, image, size)
        limit = max(1, math.ceil(half_pixel))
        assert abs(clicked[0] - ox) <= limit and abs(clicked[1] - oy) <= limit, (
            profile, screen, target, text, clicked, (ox, oy),
        )  # fmt: skip
        assert 0 <= clicked[0] < w and 0 <= clicked[1] < h


@pytest.mark.parametrize("profile", GROUNDERS)
def test_a_point_outside_the_picture_is_refused_by_every_grounder(profile) -> None:
    spec = PROFILES[profile]
    image = spec.image.size(Size(1920, 1080), 1280, computer_tool=False)
    far = 5000 if spec.space.kind == "pixel" else spec.space.denominator * 1.5
    with pytest.raises(OffScreen, match="outside the"):
        read_point(spec, answer(profile, [far, 1]), image)


@pytest.mark.parametrize(
    "text",
    ["I cannot find it.", "<think>(10,20)</think>no idea", "Thought: hmm\nAction: wait()"],
)
def test_an_answer_without_a_point_is_one_clear_error(text: str) -> None:
    with pytest.raises(GroundingError, match="answered no point"):
        read_point(PROFILES["gta1"], text, Size(1316, 728))


def test_the_request_is_the_models_own_prompt_with_the_image_size() -> None:
    request = grounding_request(
        PROFILES["gta1"], "the OK button", b"\x89PNG", "image/png", Size(1316, 728), 64
    )
    assert "height 728 and width 1316" in request.system
    assert request.tools == [] and request.max_tokens == 64
    parts = request.messages[0].content
    assert isinstance(parts[0], ImagePart) and isinstance(parts[1], TextPart)
    assert parts[1].text == "the OK button"
    holo = grounding_request(PROFILES["holo2"], "OK", b"x", "image/png", Size(10, 10), 64)
    assert "normalized between 0 and 1000" in holo.messages[0].text
    assert holo.messages[0].text.endswith("Your target is:\nOK")


def test_a_grounder_without_a_grounding_prompt_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"grounder.*'generic' has no grounding prompt") as err:
        load_settings(tmp_path, grounder={"model": "some-model"})
    assert "\n" not in str(err.value)
    settings = load_settings(tmp_path, grounder={"model": "HelloKKMe/GTA1-7B"})
    assert settings.grounder is not None and settings.grounder.model == "HelloKKMe/GTA1-7B"


def test_a_grounding_profile_needs_its_prompt_with_the_target(tmp_path: Path) -> None:
    entry = {"extends": "gta1", "patterns": ["^mine"], "grounding": {"prompt": "where is it?"}}
    with pytest.raises(ConfigError, match=r"model_profiles.mine.grounding.*\{target\}"):
        load_settings(tmp_path, model_profiles={"mine": entry})


def test_a_grounding_only_model_as_the_planner_is_refused_with_one_line(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    config = tmp_path / "data" / "config"
    config.mkdir(parents=True)
    settings = {"provider": "openai", "openai_model": "HelloKKMe/GTA1-7B"}
    (config / "settings.json").write_text(json.dumps(settings))
    code = main(["run", "--data-dir", str(tmp_path / "data"), "click the box"])
    err = capsys.readouterr()
    said = (err.out + err.err).strip()
    assert code != 0
    assert "only points at elements" in said and "grounder" in said, said
    assert len(said.splitlines()) == 1 and "Traceback" not in said
