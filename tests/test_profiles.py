"""Model profiles: a raw answer in each model's format in, the screen pixel out (pure).

Every profile runs on every screen of the fidelity matrix (tests/test_screen_geometry.py
and tests/test_input_fidelity.py: 4:3, 16:10, 16:9, the odd 1366x768, 21:9 3440x1440,
portrait, and a HiDPI 2880x1800 panel whose logical size is 1440x900). The answer goes
through the same functions the running agent uses: the profile's image rule, its grammar
parser and :func:`jarvis.geometry.to_screen`.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from jarvis.config import ConfigError, load_settings
from jarvis.desktop.screen import Size, model_to_screen
from jarvis.geometry import (
    PIXELS,
    REL_999,
    REL_1000,
    REL_UNIT,
    OffScreen,
    anthropic_size,
    from_screen,
    smart_resize,
    smart_size,
    to_screen,
    to_tool_point,
    tool_grid,
)
from jarvis.llm.profiles import qwen_tool
from jarvis.llm.profiles.catalog import PROFILES, choose_profile
from jarvis.llm.profiles.grammars import parse_glm, parse_point, parse_pyautogui, parse_uitars
from jarvis.llm.profiles.select import geometry
from jarvis.llm.types import ToolCall

S = Size.parse
MATRIX = [
    "1024x768",
    "1280x800",
    "1366x768",
    "1440x900",  # the logical size of a 2880x1800 HiDPI panel
    "1920x1080",
    "1920x1200",
    "2560x1440",
    "2560x1600",
    "3440x1440",
    "1080x1920",
]


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory):
    return load_settings(tmp_path_factory.mktemp("profiles"), native_computer_tool=True)


# what each grounding-only family writes for a point (its model card's shape); boxes
# are written around the point, so their centre is the point
POINT_ANSWERS = {
    "holo1": "Click({x}, {y})",
    "holo1.5": '{{"x": {x}, "y": {y}}}',
    "holo2": '<think>maybe {{"x": 1, "y": 1}}</think>{{"x": {x}, "y": {y}}}',
    "gta1": "({x},{y})",
    "uground": "({x}, {y})",
    "jedi": '<tool_call>\n{{"name": "computer_use", "arguments": {{"action": "left_click", '
    '"coordinate": [{x}, {y}]}}}}\n</tool_call>',
    "os-atlas": "<|box_start|>({x1},{y1}),({x2},{y2})<|box_end|>",
    "showui": "[{x}, {y}]",
    "gui-actor": "({x}, {y})",
    "internvl3": "<ref>the box</ref><box>[[{x1}, {y1}, {x2}, {y2}]]</box>",
}


def point_answer(profile: str, point: list[float]) -> str:
    x, y = point
    space = PROFILES[profile].space
    far = space.denominator if space.kind == "relative" else 10_000
    dx, dy = (min(v, far - v, 5) if v == int(v) else 0 for v in (x, y))
    return POINT_ANSWERS[profile].format(x=x, y=y, x1=x - dx, y1=y - dy, x2=x + dx, y2=y + dy)


def answer_text(profile: str, point: list[float]) -> str:
    """A perfect answer in the profile's own format, as the model writes it."""
    x, y = point
    fmt = PROFILES[profile].action_format
    if fmt == "point":
        return point_answer(profile, point)
    if fmt == "uitars":
        return f"Thought: the box is there.\nAction: click(start_box='({x},{y})')"
    if fmt == "glm":
        return f"I click it. <|begin_of_box|>left_click(start_box='[{x},{y}]')<|end_of_box|>"
    if fmt == "pyautogui":
        return f"## Thought\nclick it\n```python\npyautogui.click(x={x}, y={y})\n```"
    return ""


def parse(profile: str, text: str, point) -> list[ToolCall]:
    fmt = PROFILES[profile].action_format
    if fmt == "uitars":
        return parse_uitars(text, point)
    if fmt == "glm":
        return parse_glm(text, point)
    if fmt == "point":
        return parse_point(text, point)
    return parse_pyautogui(text, point)


def as_written(profile: str, raw: list[float]) -> list[float]:
    """What the model writes: whole numbers, or four decimals on a 0..1 scale."""
    space = PROFILES[profile].space
    if space.kind == "relative" and space.denominator == 1:
        return [round(v, 4) for v in raw]
    return [round(v) for v in raw]


def run_answer(profile_name: str, screen: Size, target: tuple[int, int], settings) -> tuple:
    """The screen pixel the agent clicks when the model answers ``target`` perfectly."""
    profile = PROFILES[profile_name]
    grid, image = geometry(profile, screen, settings)
    raw = from_screen(*target, profile.space, image, screen)
    rounded = as_written(profile_name, raw)

    def point(values):
        return to_tool_point(values, profile.space, image)

    if profile.action_format in ("uitars", "glm", "pyautogui", "point"):
        calls = parse(profile_name, answer_text(profile_name, rounded), point)
    elif profile.action_format == "qwen-computer-use":
        native = ToolCall(
            id="c1", name="computer_use", arguments={"action": "left_click", "coordinate": rounded}
        )
        calls = qwen_tool.calls_from([native], point, grid)
    else:  # the vendors' computer tools: pixels of the image as sent
        px, py = point(rounded)
        calls = [ToolCall(id="c1", name="click", arguments={"x": px, "y": py})]
    assert [c.name for c in calls] == ["click"], calls
    gx, gy = calls[0].arguments["x"], calls[0].arguments["y"]
    clicked = model_to_screen(gx, gy, grid, screen)
    assert clicked == to_screen(rounded, profile.space, image, screen)  # one path
    return clicked, image


def bound(profile_name: str, screen: Size, image: Size) -> int:
    """How far a whole-number answer can land from the target: half a unit of the
    convention, plus the pixel the answer falls in."""
    space = PROFILES[profile_name].space
    if space.kind == "pixel":
        unit = max(screen.width / image.width, screen.height / image.height)
    elif space.denominator == 1:
        unit = max(screen.width, screen.height) / 10_000  # four decimals
    else:
        unit = max(screen.width, screen.height) / space.denominator
    return max(1, math.ceil(unit))


@pytest.mark.parametrize("screen", MATRIX)
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_profile_lands_on_target_on_every_screen(profile: str, screen: str, settings):
    size = S(screen)
    w, h = size.width, size.height
    targets = [(0, 0), (w - 1, h - 1), (w // 2, h // 2), (w // 3, 2 * h // 3), (w - 7, 5)]
    for target in targets:
        clicked, image = run_answer(profile, size, target, settings)
        limit = bound(profile, size, image)
        assert abs(clicked[0] - target[0]) <= limit, (profile, screen, target, clicked, image)
        assert abs(clicked[1] - target[1]) <= limit, (profile, screen, target, clicked, image)
        assert 0 <= clicked[0] < w and 0 <= clicked[1] < h


# cases from each model's documentation and code: (profile, screen, raw answer, pixel)
DOCUMENTED = [
    # Qwen3-VL: [500, 500] is the centre on its 0..1000 scale (the example); the
    # centre of an even axis lies between two pixels: the pixel-centre rule picks 960.
    ("qwen3-vl", "1920x1080", {"action": "left_click", "coordinate": [500, 500]}, (960, 540)),
    ("qwen3-vl", "1920x1080", {"action": "left_click", "coordinate": [1000, 1000]}, (1919, 1079)),
    ("qwen3-vl", "3440x1440", {"action": "left_click", "coordinate": [0, 0]}, (0, 0)),
    ("qwen3-vl", "1440x900", {"action": "left_click", "coordinate": [250, 750]}, (360, 675)),
    # Qwen2.5-VL: pixels of the smart-resized image (1920x1080 -> 1316x728 at 1280*28*28),
    # mapped back by plain scaling int(x / w * W) as the Qwen2.5-VL-based agents' own code
    # does (OpenCUA's _coordinate_projection, 'qwen25'): 1315 * 1920 / 1316 = 1918.5
    ("qwen2.5-vl", "1920x1080", {"action": "left_click", "coordinate": [658, 364]}, (960, 540)),
    ("qwen2.5-vl", "1920x1080", {"action": "left_click", "coordinate": [1315, 727]}, (1918, 1078)),
    ("qwen2.5-vl", "2560x1440", {"action": "double_click", "coordinate": [100, 50]}, (194, 98)),
]


@pytest.mark.parametrize(("profile", "screen", "arguments", "expected"), DOCUMENTED)
def test_documented_qwen_cases(profile, screen, arguments, expected, settings) -> None:
    p = PROFILES[profile]
    size = S(screen)
    grid, image = geometry(p, size, settings)
    calls = qwen_tool.calls_from(
        [ToolCall(id="q", name="computer_use", arguments=arguments)],
        lambda v: to_tool_point(v, p.space, image),
        grid,
    )
    x, y = calls[0].arguments["x"], calls[0].arguments["y"]
    assert model_to_screen(x, y, grid, size) == expected
    assert calls[0].origin == {"id": "q", "name": "computer_use", "input": arguments}


TEXT_CASES = [
    # UI-TARS-1.5 README: absolute pixels on the smart-resized image
    ("ui-tars-1.5", "1920x1080", "Thought: OK.\nAction: click(start_box='(658,364)')", (960, 540)),
    (
        "ui-tars-1.5",
        "1920x1080",
        "Thought: OK.\nAction: click(start_box='<|box_start|>(0,0)<|box_end|>')",
        (0, 0),
    ),
    (
        "ui-tars-1.5",
        "3440x1440",
        "Thought: x\nAction: left_double(start_box='(1539,643)')",
        (3437, 1437),  # README_coordinates.md: int(1539 / 1540 * 3440), int(643 / 644 * 1440)
    ),
    # GLM-4.5V: relative box tokens; a box means its centre
    ("glm-4.5v", "1920x1080", "<|begin_of_box|>[480,480,520,520]<|end_of_box|>", (960, 540)),
    (
        "glm-4.5v",
        "2560x1600",
        "<|begin_of_box|>left_click(start_box='[250,100]')<|end_of_box|>",
        (640, 160),
    ),
    # OpenCUA: pyautogui with smart-resized pixels
    ("opencua", "1920x1080", "```python\npyautogui.click(x=658, y=364)\n```", (960, 540)),
    # OpenCUA's _coordinate_projection ('qwen25'): int(1259 / 1260 * 1440), int(783 / 784 * 900)
    ("opencua", "1440x900", "pyautogui.click(1259, 783)", (1438, 898)),
]


@pytest.mark.parametrize(("profile", "screen", "text", "expected"), TEXT_CASES)
def test_documented_text_cases(profile, screen, text, expected, settings) -> None:
    p = PROFILES[profile]
    size = S(screen)
    grid, image = geometry(p, size, settings)
    calls = parse(profile, text, lambda v: to_tool_point(v, p.space, image))
    assert calls and calls[0].parse_error is None, calls
    x, y = calls[0].arguments["x"], calls[0].arguments["y"]
    assert model_to_screen(x, y, grid, size) == expected


@pytest.mark.parametrize(
    ("space", "answer", "screen", "expected"),
    [
        (REL_UNIT, [0.5, 0.5], "1920x1080", (960, 540)),  # ShowUI / Aguvis 0..1
        (REL_UNIT, [1.0, 1.0], "1920x1080", (1919, 1079)),
        (REL_999, [500, 500], "1920x1080", (961, 540)),  # a 0..999 scale: 500/999
        (REL_999, [999, 999], "1920x1080", (1919, 1079)),  # the far edge: the last pixel
        (REL_1000, [1000, 0], "1280x800", (1279, 0)),
        (PIXELS, [1365.4, 766.4], "1920x1080", (1919, 1077)),  # float pixels round
    ],
)
def test_spaces_and_edges(space, answer, screen, expected) -> None:
    size = S(screen)
    image = anthropic_size(size)
    assert to_screen(answer, space, image, size) == expected


# the one out-of-screen rule: further outside the picture than 1 % of the range is refused
# (nearer ones land on the edge: tests/test_edge_rule.py)
@pytest.mark.parametrize(
    ("space", "answer"),
    [
        (REL_UNIT, [-0.2, 0.5]),
        (REL_UNIT, [0.5, 1.7]),
        (REL_999, [1010, 10]),  # 11 past 999, more than 9.99
        (REL_1000, [1200, 5]),
        (REL_1000, [5, -11]),
        (PIXELS, [1379.7, 10]),  # rounds to 1380: 15 past 1365, more than 13.66
        (PIXELS, [-14, 10]),
    ],
)
def test_out_of_screen_answers_are_refused(space, answer) -> None:
    with pytest.raises(OffScreen, match="outside the"):
        to_screen(answer, space, S("1366x768"), S("1920x1080"))


def test_box_answers_mean_their_centre_and_bad_points_raise() -> None:
    image = S("1000x1000")
    assert to_tool_point([100, 200, 300, 400], PIXELS, image) == (200, 300)
    with pytest.raises(ValueError, match="a point is"):
        to_tool_point([1, 2, 3], PIXELS, image)
    with pytest.raises(ValueError, match="finite"):
        to_tool_point([float("nan"), 2], REL_1000, image)
    assert tool_grid(REL_UNIT, image) == tool_grid(REL_1000, image) == S("10000x10000")


@pytest.mark.parametrize(
    ("screen", "expected"),
    [
        ("1024x768", "1024x768"),
        ("1280x800", "1280x800"),
        ("1366x768", "1366x768"),
        ("1440x900", "1280x800"),
        ("1920x1080", "1366x768"),
        ("1920x1200", "1280x800"),
        ("2560x1440", "1366x768"),
        ("2560x1600", "1280x800"),
        ("2048x1536", "1024x768"),
        ("3440x1440", "1568x656"),  # 21:9 matches no standard size: area and long edge
        ("1080x1920", "768x1365"),  # portrait
    ],
)
def test_anthropic_sizes(screen: str, expected: str) -> None:
    assert anthropic_size(S(screen)) == S(expected)
    size = S(expected)
    assert max(size.width, size.height) <= 1568 and size.width * size.height <= 1366 * 768


@pytest.mark.parametrize(
    ("screen", "factor", "max_pixels", "expected"),
    [
        # qwen_vl_utils defaults on a 1080p screen: (1092, 1932) when unbounded
        ("1920x1080", 28, 16384 * 28 * 28, "1932x1092"),
        ("1920x1080", 28, 1280 * 28 * 28, "1316x728"),
        ("1024x768", 28, 1280 * 28 * 28, "1036x756"),
        ("3440x1440", 28, 1280 * 28 * 28, "1540x644"),
        ("1920x1080", 32, 1280 * 32 * 32, "1504x832"),
        ("1440x900", 32, 1280 * 32 * 32, "1440x896"),
    ],
)
def test_smart_resize_table(screen: str, factor: int, max_pixels: int, expected: str) -> None:
    assert smart_size(S(screen), factor, max_pixels) == S(expected)


@pytest.mark.parametrize("screen", MATRIX)
@pytest.mark.parametrize("factor", [28, 32])
def test_smart_size_is_a_fixed_point_of_the_models_resize(screen: str, factor: int) -> None:
    """What Jarvis sends is left unchanged by the server's resize (its default budget is
    larger), so pixel answers are pixels of the image Jarvis sent."""
    size = smart_size(S(screen), factor, 1280 * factor * factor)
    for server_max in (1280 * factor * factor, 16384 * factor * factor):
        assert smart_resize(size.height, size.width, factor, 56 * 56, server_max) == (
            size.height,
            size.width,
        )
    assert size.width % factor == 0 and size.height % factor == 0
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 3000, factor)


@pytest.mark.parametrize(
    ("model", "setting", "expected", "warns"),
    [
        ("Qwen/Qwen2.5-VL-7B-Instruct", None, "qwen2.5-vl", False),
        ("qwen2.5-vl-72b-instruct", None, "qwen2.5-vl", False),
        ("Qwen/Qwen3-VL-235B-A22B-Instruct", None, "qwen3-vl", False),
        ("ByteDance-Seed/UI-TARS-1.5-7B", None, "ui-tars-1.5", False),
        ("zai-org/GLM-4.5V", None, "glm-4.5v", False),
        ("THUDM/GLM-4.1V-9B-Thinking", None, "glm-4.5v", False),
        ("xlang-ai/OpenCUA-32B", None, "opencua", False),
        ("computer-use-preview", None, "openai-computer", False),
        ("gpt-5.4", None, "openai-computer", False),
        ("claude-sonnet-4-6", None, "claude", False),
        ("claude-opus-4-5-20251101", None, "claude", False),
        ("gpt-4.1", None, "generic", False),
        ("my-finetune-v3", None, "generic", True),
        ("my-finetune-v3", "qwen3-vl", "qwen3-vl", False),  # the setting wins
        ("Qwen/Qwen2.5-VL-7B-Instruct", "ui-tars-1.5", "ui-tars-1.5", False),
    ],
)
def test_choosing_a_profile(model: str, setting: str | None, expected: str, warns: bool) -> None:
    choice = choose_profile(model, setting)
    assert choice.profile.name == expected
    assert (choice.warning is not None) is warns
    if setting:
        assert choice.reason == "set by model_profile"


def test_unknown_profile_setting_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown model profile 'qwen9'.*qwen3-vl"):
        load_settings(tmp_path, model_profile="qwen9")
    assert load_settings(tmp_path, model_profile="glm-4.5v").model_profile == "glm-4.5v"


def test_every_profile_cites_its_source_and_says_how_it_is_served() -> None:
    assert set(PROFILES) >= {
        "claude", "openai-computer", "qwen2.5-vl", "qwen3-vl", "ui-tars-1.5", "glm-4.5v",
        "opencua", "generic",
    }  # fmt: skip
    for profile in PROFILES.values():
        assert profile.source and profile.served and profile.title
