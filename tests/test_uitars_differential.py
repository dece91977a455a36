"""Differential test against ByteDance's own UI-TARS action parser (pip ``ui-tars`` 0.5.1,
``ui_tars.action_parser``, the code of bytedance/UI-TARS ``codes/ui_tars/action_parser.py``).

Generated answers (every action of the COMPUTER_USE / COMPUTER_USE_DOUBAO action spaces in
bytedance/UI-TARS ``codes/ui_tars/prompt.py`` plus the key holds its executor knows, every
coordinate form, escaped and unescaped text, CJK, emoji, line breaks; screens up to
3840x2160) go through Jarvis's parser and coordinate conversion and through ByteDance's
``parse_action_to_structure_output``; the actions, texts and screen points must agree.
ByteDance's screen point is its executor's ``x_rel * width`` (``parsing_response_to_pyautogui_code``
with the relative output, i.e. scale_factor 1). Where the official parser is wrong, the
case is listed in :data:`OFFICIAL_BUGS` with the reason, and Jarvis is checked against the
official answer to the same request written in a form the official parser reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from ui_tars import action_parser  # a test dependency (pyproject's dev extra): never skipped

from jarvis.geometry import Size, model_to_screen, to_tool_point, tool_grid
from jarvis.llm.profiles.catalog import PROFILES
from jarvis.llm.profiles.grammars import parse_uitars

SCREENS = [Size(1280, 800), Size(1920, 1080), Size(2560, 1440), Size(3840, 2160)]
MAX_SIDE = 1280  # the settings' default; only the relative profiles' image size uses it

OFFICIAL_BUGS = {
    "bbox": "parse_action_to_structure_output splits start_box on ',' after removing only "
    "'(' and ')', so '<bbox>x1 y1 x2 y2</bbox>' raises ValueError (float('<bbox>637 964 ...')); "
    "UI-TARS-desktop's parser reads it (packages/ui-tars/action-parser/test/"
    "actionParser.test.ts); compared with the official answer to '(x1,y1,x2,y2)'",
    "list": "the same split: '[x1,y1,x2,y2]' raises ValueError (float('[637')); "
    "compared with the official answer to '(x1,y1,x2,y2)'",
    "real-newline": "a type content with a real line break raises ValueError ('Pattern not "
    "found': its regex type\\(content='(.*?)'\\) has no DOTALL), though the parser turns "
    "real line breaks into \\n for every other action; compared with the answer written "
    "with \\n",
}
"""Forms the official parser refuses though the models write them, and why."""

DIFFERENT_ON_PURPOSE = {
    "type-escape": "parsing_response_to_pyautogui_code pastes escape_single_quotes(content): "
    'the text "don\'t" is pasted as "don\\\'t" (a backslash the model never meant); '
    "Jarvis types what parse_action_to_structure_output read, compared here",
    "type-newlines": "the pyautogui executor pastes 'total\\n\\n' whole and then presses Enter "
    "once more (three line breaks); UI-TARS-desktop's nut-js operator types all but the last "
    "line break and presses Enter (two): Jarvis follows nut-js, one Enter per trailing \\n",
    "scroll-point": "the pyautogui executor scrolls at x=start_box[0], y=start_box[1], the "
    "relative values (0..1) never multiplied by the screen size, so at the top-left pixel; "
    "Jarvis scrolls at the point, compared with the parser's relative point times the screen",
}


@dataclass(frozen=True)
class Case:
    text: str
    action: str
    form: str = ""


def model_image(profile: str, screen: Size) -> Size:
    return PROFILES[profile].image.size(screen, MAX_SIDE, True)


def official(text: str, profile: str, screen: Size) -> list[dict[str, Any]]:
    """ByteDance's structured actions, with the smart_resize the image was sent at."""
    image = PROFILES[profile].image
    pixels = PROFILES[profile].space.kind == "pixel"
    return action_parser.parse_action_to_structure_output(
        text,
        factor=1000,
        origin_resized_height=screen.height,
        origin_resized_width=screen.width,
        model_type="qwen25vl" if pixels else "qwen2vl",
        max_pixels=image.max_pixels,
        min_pixels=image.min_pixels,
    )


def official_point(box: str, screen: Size) -> tuple[float, float]:
    x1, y1, x2, y2 = (float(v) for v in box.strip("[]").split(","))
    return (x1 + x2) / 2 * screen.width, (y1 + y2) / 2 * screen.height


def jarvis_point(x: int, y: int, profile: str, screen: Size) -> tuple[int, int]:
    grid = tool_grid(PROFILES[profile].space, model_image(profile, screen))
    return model_to_screen(x, y, grid, screen)


def tolerance(screen: Size) -> float:
    """Jarvis lands on the screen pixel under the centre of the model's pixel (or grid
    cell), ByteDance on x * W / w: up to half a model pixel apart. Measured: under 1 screen
    px up to 2560x1440, 1.46 px at 3840x2160 (1316 model px across; the 4K conversion is
    another part of issue 35, so 1.5 px is allowed there)."""
    return 1.0 if screen.width < 3840 else 1.5


def keys_of(text: str) -> list[str]:
    return text.split()


def expected(action: dict[str, Any], screen: Size) -> list[tuple]:
    """What ByteDance's parser says should happen, in Jarvis's tool names, points on screen."""
    kind, inputs = action["action_type"], action["action_inputs"]
    start = official_point(inputs["start_box"], screen) if "start_box" in inputs else None
    simple = {"click": "click", "left_single": "click", "left_double": "double_click"}
    simple |= {"right_single": "right_click", "hover": "mouse_move"}
    if kind in simple:
        return [(simple[kind], start)]
    if kind == "drag":
        return [("drag", start, official_point(inputs["end_box"], screen))]
    if kind == "scroll":
        return (
            [("scroll", start, inputs["direction"])]
            if start
            else [("scroll_here", inputs["direction"])]
        )
    if kind == "hotkey":
        keys = keys_of(inputs["key"])
        return [("press_key", keys[0])] if len(keys) == 1 else [("hotkey", "+".join(keys))]
    if kind in ("press", "keydown"):
        return [("key_down", k) for k in keys_of(inputs["key"])]
    if kind in ("release", "keyup"):
        return [("key_up", k) for k in reversed(keys_of(inputs["key"]))]
    if kind == "type":
        text = inputs["content"]
        body = text.rstrip("\n")
        return [("type", body)] * bool(body) + [("press_key", "enter")] * (len(text) - len(body))
    if kind in ("finished", "call_user"):
        return [(kind, inputs.get("content", "").strip())]
    return [(kind,)]


def got(text: str, profile: str, screen: Size) -> list[tuple]:
    """What Jarvis does with the answer: its calls, points mapped to the screen."""
    space, image = PROFILES[profile].space, model_image(profile, screen)
    calls = parse_uitars(text, lambda values: to_tool_point(values, space, image))
    assert all(c.parse_error is None for c in calls), [c.parse_error for c in calls]
    out: list[tuple] = []
    for c in calls:
        a = c.arguments
        if c.name == "drag":
            start = jarvis_point(a["startX"], a["startY"], profile, screen)
            out.append(("drag", start, jarvis_point(a["endX"], a["endY"], profile, screen)))
        elif c.name == "scroll":
            out.append(("scroll", jarvis_point(a["x"], a["y"], profile, screen), a["direction"]))
        elif "x" in a:
            out.append((c.name, jarvis_point(a["x"], a["y"], profile, screen)))
        elif c.name in ("wait",):
            out.append((c.name,))
        else:
            value = {k: v for k, v in a.items() if k != "amount"}
            out.append((c.name, *value.values()))
    return out


def same(mine: list[tuple], theirs: list[tuple], screen: Size) -> bool:
    if [m[0] for m in mine] != [t[0] for t in theirs] or len(mine) != len(theirs):
        return False
    for m, t in zip(mine, theirs, strict=True):
        for a, b in zip(m[1:], t[1:], strict=True):
            if isinstance(b, tuple):
                if max(abs(a[0] - b[0]), abs(a[1] - b[1])) > tolerance(screen):
                    return False
            elif a != b:
                return False
    return True


FRACTIONS = [(0.013, 0.02), (0.5, 0.5), (0.97, 0.96)]
TEXTS = [
    "hello",
    "订单号：（A-17）",
    "don't stop me now",
    r"it\'s \"quoted\"",  # escaped as the prompt asks
    "total\\n\\n",
    "first line\nsecond line",
    "great 👍 — 好的",
    "path C:\\\\tmp; 50% off, (a) [b] {c}",
]
PLAIN = [
    "hotkey(key='ctrl c')",
    "hotkey(key='enter')",
    "hotkey(key='ctrl shift s')",
    "press(key='shift')",
    "keydown(key='ctrl')",
    "release(key='shift')",
    "keyup(key='ctrl')",
    "scroll(direction='down')",
    "scroll(direction='up')",
    "wait()",
    "finished(content='Sent it.\nAll 3 files are in the folder')",
    "finished(content='完成了 ✅')",
    "call_user(content='Which account should I use?')",
]


def points(profile: str, screen: Size) -> list[tuple[int, int, int]]:
    """(x, y, half a box side) in the profile's space, near the edges and in the middle."""
    if PROFILES[profile].space.kind == "pixel":
        image = model_image(profile, screen)
        return [
            (int(fx * (image.width - 1)), int(fy * (image.height - 1)), 4) for fx, fy in FRACTIONS
        ]
    return [(int(fx * 1000), int(fy * 1000), 3) for fx, fy in FRACTIONS]


def forms(x: int, y: int, d: int, key: str = "start_box") -> dict[str, str]:
    x1, y1, x2, y2 = x - d, y - d, x + d, y + d
    point_key = {"start_box": "point", "end_box": "end_point"}[key]
    return {
        "paren": f"{key}='({x},{y})'",
        "point": f"{point_key}='<point>{x} {y}</point>'",
        "paren-box": f"{key}='({x1},{y1},{x2},{y2})'",
        "bbox": f"{key}='<bbox>{x1} {y1} {x2} {y2}</bbox>'",
        "list": f"{key}='[{x1},{y1},{x2},{y2}]'",
    }


def cases(profile: str, screen: Size) -> list[Case]:
    out: list[Case] = []
    pts = points(profile, screen)
    for (x, y, d), (ex, ey, _) in zip(pts, pts[1:] + pts[:1], strict=True):
        starts, ends = forms(x, y, d), forms(ex, ey, d, "end_box")
        for form, arg in starts.items():
            for action in ("click", "left_single", "left_double", "right_single", "hover"):
                out.append(Case(f"{action}({arg})", action, form))
            drag_start = arg.replace("point=", "start_point=") if form == "point" else arg
            out.append(Case(f"drag({drag_start}, {ends[form]})", "drag", form))
            for direction in ("up", "down"):
                out.append(Case(f"scroll({arg}, direction='{direction}')", "scroll", form))
    out += [Case(f"type(content='{t}')", "type", "real-newline" * ("\n" in t)) for t in TEXTS]
    out += [Case(p, p.split("(")[0]) for p in PLAIN]
    return out


def reference(case: Case) -> str:
    """The case as the official parser can read it (see :data:`OFFICIAL_BUGS`)."""
    if case.form not in OFFICIAL_BUGS:
        return case.text
    if case.form == "real-newline":
        return case.text.replace("\n", "\\n")

    def paren(m: re.Match[str]) -> str:
        return "'(" + ",".join(re.findall(r"-?\d+", m.group(1))) + ")'"

    return re.sub(r"'(<bbox>[^']*</bbox>|\[[^']*\])'", paren, case.text)


PARAMS = [
    pytest.param(profile, screen, id=f"{profile}-{screen.width}x{screen.height}")
    for profile in ("ui-tars-1.5", "doubao", "ui-tars-1.0")
    for screen in SCREENS
]


@pytest.mark.parametrize(("profile", "screen"), PARAMS)
def test_jarvis_reads_what_bytedance_reads(profile: str, screen: Size) -> None:
    if PROFILES[profile].space.kind == "pixel":  # the image ByteDance's parser assumes
        image = PROFILES[profile].image
        h, w = action_parser.smart_resize(
            screen.height, screen.width, 28, image.min_pixels, image.max_pixels
        )
        assert Size(w, h) == model_image(profile, screen)
    differences = []
    for case in cases(profile, screen):
        text = f"Thought: I'll do it: the user's next step.\nAction: {case.text}"
        theirs = [
            step
            for a in official(text.replace(case.text, reference(case)), profile, screen)
            for step in expected(a, screen)
        ]
        mine = got(text, profile, screen)
        if not same(mine, theirs, screen):
            differences.append((case.text, mine, theirs))
    assert differences == []


@pytest.mark.parametrize("form", sorted(OFFICIAL_BUGS))
def test_the_official_bugs_are_still_there(form: str) -> None:
    """Each listed bug is real: the official parser refuses the form (when ByteDance fixes
    it, this fails and the exception goes)."""
    case = next(c for c in cases("doubao", SCREENS[1]) if c.form == form)
    assert reference(case) != case.text
    with pytest.raises(ValueError):
        official(f"Thought: t\nAction: {case.text}", "doubao", SCREENS[1])


def test_the_deliberate_differences_are_still_there() -> None:
    """The executor behaviours Jarvis does not copy (:data:`DIFFERENT_ON_PURPOSE`) are as
    described: read from ByteDance's own pyautogui code for the same answers."""
    to_code = action_parser.parsing_response_to_pyautogui_code
    parsed = official("Thought: t\nAction: type(content='don't')", "doubao", SCREENS[1])
    assert 'pyperclip.copy("don\\\\\'t")' in to_code(parsed, 1080, 1920, scale_factor=1)
    parsed = official("Thought: t\nAction: type(content='total\\n\\n')", "doubao", SCREENS[1])
    code = to_code(parsed, 1080, 1920, scale_factor=1)
    assert "pyperclip.copy('total\\n\\n')" in code and code.count("press('enter')") == 1
    parsed = official(
        "Thought: t\nAction: scroll(start_box='(500,500)', direction='down')", "doubao", SCREENS[1]
    )
    assert "scroll(-5, x=0.5, y=0.5)" in to_code(parsed, 1080, 1920, scale_factor=1)
