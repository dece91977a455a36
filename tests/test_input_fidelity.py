"""Pointer input lands where the model meant, on real Xvfb screens, seen by a real Tk app.

The matrix: screens 1024x768, 1920x1080 and 2560x1440, each with the model spaces of
the same aspect ratio (1024x768; 1280x720 and, for a non-integer factor, 1024x576;
1280x720), and the 16:10 screens 1920x1200 and 2560x1600 for the 1280x800 model space
(no 16:9 or 4:3 screen allows it without distorting the picture). For a spread of model
points including all four corners and points next to the edges, the point is mapped to
the screen, the action performed, and the position Tk reports (root coordinates) must be
within 1 px of the intended pixel.

pyautogui binds to one display per process, so the 1920x1080 screen (the session
display) runs in this process and the others each run in a child process
(``python -m tests.test_input_fidelity WxH MODEL...``) with their own Xvfb and Tk
app; each child prints its results as JSON and the tests assert them case by case.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.desktop.input import FailSafeError, Input, InputError
from jarvis.desktop.screen import Screen, Size
from jarvis.desktop.x11 import XDisplay, xdotool
from tests.tkdriver import TkApp

ROOT = Path(__file__).resolve().parent.parent
SESSION_SCREEN = "1920x1080"
MATRIX: dict[str, list[str]] = {
    "1024x768": ["1024x768"],
    "1920x1080": ["1280x720", "1024x576"],
    "2560x1440": ["1280x720"],
    "1920x1200": ["1280x800"],  # 16:10, the 1280x800 model space (factor 1.5)
    "2560x1600": ["1280x800"],  # and at factor 2
}
Case = tuple[str, str, list[tuple[int, int]]]  # id, action, model points


def model_points(model: Size) -> list[tuple[int, int]]:
    w, h = model.width, model.height
    return [
        (w // 5, 3 * h // 5),
        (0, 0),
        (w - 1, 0),
        (w - 1, h - 1),
        (0, h - 1),
        (w // 2, h // 2),
        (1, h // 3),
        (w - 2, 2 * h // 3),
        (w // 3, 1),
        (2 * w // 3, h - 2),
    ]


def cases(model: Size) -> list[Case]:
    points = model_points(model)
    out: list[Case] = []
    for x, y in points:
        for action in ("move", "right_click", "double_click", "click"):
            out.append((f"{action}@{x},{y}", action, [(x, y)]))
    for i, start in enumerate(points):
        end = points[(i + 3) % len(points)]
        out.append((f"drag@{start[0]},{start[1]}->{end[0]},{end[1]}", "drag", [start, end]))
    return out


def _observe(app: TkApp, inp: Input, action: str, targets: list[tuple[int, int]]) -> list[Any]:
    mark = app.mark()
    if action == "move":
        (x, y) = targets[0]
        if inp.position() == (x, y):  # no motion would be reported: step off first
            inp.move(x - 1 if x else x + 1, y)
            mark = app.mark()
        inp.move(x, y)
        app.sync()
        motions = app.events("motion", since=mark)
        return [[motions[-1]["x"], motions[-1]["y"]]] if motions else []
    if action == "click":
        inp.click(*targets[0])
        ev = app.wait_kind("click", since=mark, button=1)
        return [[ev["x"], ev["y"]]]
    if action == "right_click":
        inp.right_click(*targets[0])
        ev = app.wait_kind("click", since=mark, button=3)
        return [[ev["x"], ev["y"]]]
    if action == "double_click":
        inp.double_click(*targets[0])
        double = app.wait_kind("double", since=mark, button=1)
        second = app.wait_for(
            lambda e: e["kind"] == "click" and e["button"] == 1 and e["count"] == 2, since=mark
        )
        return [[double["x"], double["y"]], [second["x"], second["y"]]]
    if action == "drag":
        inp.drag(*targets[0], *targets[1])
        ev = app.wait_kind("drag", since=mark)
        return [ev["start"], ev["end"]]
    raise ValueError(action)


def run_cases(app: TkApp, inp: Input, model: Size) -> dict[str, dict[str, Any]]:
    """Perform every case for ``model`` on the current display; results by case id."""
    results: dict[str, dict[str, Any]] = {}
    with Screen(model_size=model) as screen:
        for case_id, action, points in cases(model):
            targets = [screen.to_screen(x, y) for x, y in points]
            targets_seen = targets * 2 if action == "double_click" else targets
            try:
                observed = _observe(app, inp, action, targets)
                error = None
            except AssertionError as exc:
                observed, error = [], str(exc)[:500]
            app.sync()  # the case's late events (releases) stay out of the next case
            results[case_id] = {
                "intended": [list(t) for t in targets_seen],
                "observed": observed,
                "error": error,
            }
    return results


def main(argv: list[str]) -> None:
    """Worker: ``python -m tests.test_input_fidelity WxH MODEL [MODEL...]`` prints JSON."""
    from tests.xserver import start_xvfb

    screen = Size.parse(argv[0])
    with start_xvfb(screen.width, screen.height, set_env=True):
        app = TkApp.start()
        try:
            app.reset()
            inp = Input(failsafe=True, display=XDisplay.from_env())
            out = {model: run_cases(app, inp, Size.parse(model)) for model in argv[1:]}
        finally:
            app.close()
    print(json.dumps(out))


# ----------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def fidelity_results(_tkapp_holder: Any) -> Iterator[dict[tuple[str, str], dict[str, Any]]]:
    children = {
        screen: subprocess.Popen(
            [sys.executable, "-m", "tests.test_input_fidelity", screen, *models],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for screen, models in MATRIX.items()
        if screen != SESSION_SCREEN
    }
    results: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        app = _tkapp_holder.get()
        app.reset()
        inp = Input(failsafe=True, display=XDisplay.from_env())
        for model in MATRIX[SESSION_SCREEN]:
            results[(SESSION_SCREEN, model)] = run_cases(app, inp, Size.parse(model))
        app.reset()  # the last drag ends in the corner (1919, 0): the pointer back mid-screen
        for screen, child in children.items():
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, f"worker for {screen} failed: {err[-2000:]}"
            for model, cases_out in json.loads(out).items():
                results[(screen, model)] = cases_out
        yield results
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
                child.communicate()


MATRIX_CASES = [
    pytest.param(screen, model, case_id, id=f"{screen}-{model}-{case_id}")
    for screen, models in MATRIX.items()
    for model in models
    for case_id, _, _ in cases(Size.parse(model))
]


@pytest.mark.parametrize(("screen", "model", "case_id"), MATRIX_CASES)
def test_pointer_lands_within_one_pixel(
    fidelity_results: dict[tuple[str, str], dict[str, Any]], screen: str, model: str, case_id: str
) -> None:
    result = fidelity_results[(screen, model)][case_id]
    assert result["error"] is None, result["error"]
    assert len(result["observed"]) == len(result["intended"]), result
    for (ix, iy), (ox, oy) in zip(result["intended"], result["observed"], strict=True):
        assert abs(ix - ox) <= 1 and abs(iy - oy) <= 1, f"intended {ix},{iy}, Tk saw {ox},{oy}"


def test_matrix_model_spaces_match_the_screen_aspect() -> None:
    for screen, models in MATRIX.items():
        s = Size.parse(screen)
        for model in models:
            m = Size.parse(model)
            assert abs(m.width / m.height - s.width / s.height) < 0.01


@pytest.mark.parametrize("direction", ["up", "down", "left", "right"])
def test_scroll_moves_in_the_asked_direction(tkapp: TkApp, direction: str) -> None:
    inp = Input(display=XDisplay.from_env())
    x, y = tkapp.widget_center("pad")
    mark = tkapp.mark()
    inp.scroll(x, y, direction, amount=3)  # type: ignore[arg-type]
    tkapp.sync()
    seen = tkapp.events("scroll", since=mark)
    assert [e["direction"] for e in seen] == [direction] * 3
    assert {(e["x"], e["y"]) for e in seen} == {(x, y)}


def test_scroll_rejects_bad_arguments(tkapp: TkApp) -> None:
    inp = Input(display=XDisplay.from_env())
    with pytest.raises(InputError, match="direction"):
        inp.scroll(10, 10, "sideways")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="amount"):
        inp.scroll(10, 10, "up", amount=0)
    tkapp.sync()
    assert tkapp.events("scroll") == []


def test_drag_is_press_motion_release(tkapp: TkApp) -> None:
    inp = Input(display=XDisplay.from_env())
    mark = tkapp.mark()
    inp.drag(600, 700, 1200, 400)
    drag = tkapp.wait_kind("drag", since=mark)
    assert drag["start"] == [600, 700] and drag["end"] == [1200, 400]
    assert drag["motions"] >= 4  # B1-Motion events with the button held
    kinds = [e["kind"] for e in tkapp.events(since=mark) if e["kind"] in ("click", "release")]
    assert kinds == ["click", "release"]


def test_points_off_the_screen_are_input_errors(tkapp: TkApp) -> None:
    inp = Input(display=XDisplay.from_env())
    for bad in [(1920, 5), (5, 1080), (-1, 0)]:
        with pytest.raises(InputError, match="outside the screen"):
            inp.click(*bad)
    with pytest.raises(InputError, match="integers"):
        inp.click(1.5, 3)  # type: ignore[arg-type]
    tkapp.sync()
    assert tkapp.events("click") == []


def test_failsafe_trips_when_a_person_throws_the_mouse_into_a_corner(tkapp: TkApp) -> None:
    inp = Input(failsafe=True, display=XDisplay.from_env())
    inp.click(500, 500)
    xdotool("mousemove", "0", "0")  # a person, not Jarvis, moves the pointer
    mark = tkapp.mark()
    with pytest.raises(FailSafeError, match=r"corner \(0, 0\)"):
        inp.click(700, 500)
    with pytest.raises(FailSafeError):
        inp.type_text("never typed")
    tkapp.sync()
    assert tkapp.events("click", since=mark) == []
    # Off, the same situation goes ahead.
    Input(failsafe=False, display=XDisplay.from_env()).click(700, 500)
    assert tkapp.wait_kind("click", since=mark)["x"] == 700


def test_jarvis_may_click_a_corner_itself(tkapp: TkApp) -> None:
    inp = Input(failsafe=True, display=XDisplay.from_env())
    mark = tkapp.mark()
    inp.click(1919, 0)
    inp.click(960, 540)  # the pointer is in a corner, but Jarvis put it there
    tkapp.wait_for(lambda e: e["kind"] == "click" and e["x"] == 960, since=mark)
    assert [(c["x"], c["y"]) for c in tkapp.events("click", since=mark)] == [(1919, 0), (960, 540)]


if __name__ == "__main__":
    main(sys.argv[1:])
