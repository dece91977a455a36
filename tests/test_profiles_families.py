"""The families of issue 35: OpenCUA's whole vocabulary, OpenCUA-A3B's 0..1 points, H
Company's hosted Holo1.5 ids, and the new Holo3, Holo3.1, GUI-Owl-1.5, UI-Venus-1.5 and
EvoCUA profiles: routing by every name a user may type, `jarvis profiles list|test`, and
runs on Xvfb with the Tk app where a scripted model answers as the family's own sources
write (the file is named beside each answer) through the real openai SDK, and the clicks
land within 1 px of the target as the model's own conversion puts it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.cli import main
from jarvis.desktop.screen import Size
from jarvis.geometry import from_screen, model_to_screen, to_screen, to_tool_point
from jarvis.llm.profiles import qwen_tool
from jarvis.llm.profiles.catalog import PROFILES, choose_profile
from jarvis.llm.profiles.grammars import TEXT_GRAMMARS
from jarvis.llm.profiles.select import geometry
from jarvis.llm.text_mode import parse_tool_calls
from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_profiles_e2e import TASK, VERIFIED, sent_image_size
from tests.tkdriver import TkApp

NEW = ("opencua-a3b", "holo3.1", "holo3", "gui-owl-1.5", "ui-venus-1.5", "evocua")

ROUTES = [
    # OpenCUA: xlang-ai/OpenCUA README model names; A3B is Kimi-VL based and answers 0..1
    ("xlangai/OpenCUA-A3B", "opencua-a3b"),
    ("opencua-a3b", "opencua-a3b"),
    ("xlangai/OpenCUA-7B", "opencua"),
    ("xlangai/OpenCUA-32B", "opencua"),
    ("xlangai/OpenCUA-72B", "opencua"),
    ("xlangai/OpenCUA-Qwen2-7B", "opencua-qwen2"),
    # H Company's Models API ids (the model table of the Surfer-H README) and HF names
    ("holo1-5-7b-20250915", "holo1.5"),
    ("holo1-5-3b-20250915", "holo1.5"),
    ("Hcompany/Holo1.5-72B", "holo1.5"),
    ("holo1-7b-20250521", "holo1"),
    ("Hcompany/Holo2-30B-A3B", "holo2"),
    ("holo3-35b-a3b", "holo3"),
    ("holo3-122b-a10b", "holo3"),
    ("Hcompany/Holo3-35B-A3B", "holo3"),
    ("holo3:35b-a3b", "holo3"),  # an Ollama tag
    ("holo3-1-35b-a3b", "holo3.1"),  # the Models API id of Holo3.1
    ("Hcompany/Holo-3.1-35B-A3B", "holo3.1"),
    ("Hcompany/Holo3.1-4B", "holo3.1"),
    ("hf.co/Hcompany/Holo3.1-35B-A3B-GGUF:Q4_K_M", "holo3.1"),  # Ollama pulling the GGUF
    ("holo3.1:9b", "holo3.1"),
    # X-PLUG/MobileAgent Mobile-Agent-v3.5/README.md model table
    ("mPLUG/GUI-Owl-1.5-8B-Instruct", "gui-owl-1.5"),
    ("mPLUG/GUI-Owl-1.5-32B-Think", "gui-owl-1.5"),
    # inclusionAI/UI-Venus README
    ("inclusionAI/UI-Venus-1.5-8B", "ui-venus-1.5"),
    ("ui-venus-1.5-30b-a3b", "ui-venus-1.5"),
    # meituan/EvoCUA README (HF names, and the served name of its vllm serve line)
    ("meituan/EvoCUA-32B-20260105", "evocua"),
    ("meituan/EvoCUA-8B-20260105", "evocua"),
    ("EvoCUA", "evocua"),
]


@pytest.mark.parametrize(("model", "expected"), ROUTES)
def test_every_name_routes_to_its_family(model: str, expected: str) -> None:
    choice = choose_profile(model)
    assert choice.profile.name == expected and choice.warning is None, choice.reason


def test_the_families_say_where_their_convention_comes_from(tmp_path: Path, capsys) -> None:
    assert main(["profiles", "list", "--json", "--data-dir", str(tmp_path / "d")]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for name in NEW:
        assert len(rows[name]["source"]) > 80, name
    assert "hub.hcompany.ai" in rows["holo3"]["source"]
    assert "Mobile-Agent-v3.5/computer_use/utils.py" in rows["gui-owl-1.5"]["source"]
    assert "mm_agents/evocua" in rows["evocua"]["source"]
    assert "UI-Venus" in rows["ui-venus-1.5"]["source"]
    assert main(["profiles", "list", "--data-dir", str(tmp_path / "d")]) == 0
    text = capsys.readouterr().out
    assert all(f"\n{name} " in text for name in NEW)
    assert text.count("    source: ") == len(rows)


def profiles_test(tmp_path: Path, capsys, name: str, answer: str) -> dict:
    code = main(["profiles", "test", name, "--screen", "1920x1080", answer, "--json",
                 "--data-dir", str(tmp_path / "d")])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    out["code"] = code
    return out


# one answer per family in its own words, at (0.37, 0.61) of a 1920x1080 screen; the
# point in the model's units is computed from the image the profile sends
CASES = [
    # xlang-ai/OpenCUA evaluation/agentnetbench/agent/opencua.py: computer.triple_click
    ("opencua", "```python\ncomputer.triple_click(x={x}, y={y})\n```", "triple_click"),
    # AgentNet sample data (s_5473959e0f6e21f7.json): 0..1 clicks, as OpenCUA-A3B writes
    ("opencua-a3b", "## Code:\n```python\npyautogui.click(x={x}, y={y})\n```", "click"),
    # hub.hcompany.ai agent-loop: the Output JSON step
    ("holo3", '{{"note": null, "thought": "t", "tool_call": {{"tool_name": "click", '
     '"element": "the box", "x": {x}, "y": {y}}}}}', "click"),
    ("holo3.1", '{{"note": null, "thought": "t", "tool_call": {{"tool_name": "double_click", '
     '"element": "the box", "x": {x}, "y": {y}}}}}', "double_click"),
    # X-PLUG/MobileAgent Mobile-Agent-v3.5/computer_use/utils.py: Action + <tool_call>
    ("gui-owl-1.5", 'Action: click the box.\n<tool_call>\n{{"name": "computer_use", '
     '"arguments": {{"action": "left_click", "coordinate": [{x}, {y}]}}}}\n</tool_call>',
     "click"),
    # inclusionAI/UI-Venus models/navigation/utils.py: <think>/<action>/<conclusion>
    ("ui-venus-1.5", "<think>the box</think>\n<action>Click(box=({x},{y}))</action>\n"
     "<conclusion>clicked</conclusion>", "click"),
    # meituan/EvoCUA mm_agents/evocua/prompts.py: S2's computer_use call on 0..999
    ("evocua", 'Action: click the box.\n<tool_call>\n{{"name": "computer_use", "arguments": '
     '{{"action": "left_click", "coordinate": [{x}, {y}]}}}}\n</tool_call>', "click"),
]  # fmt: skip


def own_units(profile: str, target: tuple[int, int], screen: Size, settings) -> list[float]:
    """The target in the model's units as the model writes them (4 decimals on 0..1)."""
    space = PROFILES[profile].space
    _, image = geometry(PROFILES[profile], screen, settings)
    raw = from_screen(*target, space, image, screen)
    if space.kind == "relative" and space.denominator == 1:
        return [round(v, 4) for v in raw]
    return [round(v) for v in raw]


@pytest.mark.parametrize(("profile", "template", "tool"), CASES)
def test_profiles_test_reads_each_family(profile, template, tool, tmp_path, capsys) -> None:
    from jarvis.config import load_settings

    settings = load_settings(tmp_path / "d")
    screen = Size(1920, 1080)
    target = (int(0.37 * 1920), int(0.61 * 1080))
    x, y = own_units(profile, target, screen, settings)
    data = profiles_test(tmp_path, capsys, profile, template.format(x=x, y=y))
    assert data["code"] == 0, data
    assert [a["tool"] for a in data["actions"]] == [tool], data
    px, py = data["actions"][0]["screen"]["point"]
    assert abs(px - target[0]) <= 1 and abs(py - target[1]) <= 1, data


def unit_of(space, screen: Size, image: Size) -> int:
    """How far a whole-number answer can land from its target: one unit of the convention
    (four decimals on 0..1), at least the pixel it falls in."""
    if space.kind == "pixel":
        unit = max(screen.width / image.width, screen.height / image.height)
    else:
        unit = max(screen.width, screen.height) / (
            space.denominator if space.denominator > 1 else 10_000
        )
    return max(1, math.ceil(unit))


SCREENS = ["1024x768", "1366x768", "1440x900", "1920x1080", "2560x1600", "3440x1440", "1080x1920"]


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize(("profile", "template", "tool"), CASES)
def test_each_family_on_every_screen(profile, template, tool, screen, tmp_path) -> None:
    """The parsed call lands where the model's own conversion of its numbers puts it
    (x / D * W, or pixels of its smart-resized image), and near the target."""
    from jarvis.config import load_settings

    settings = load_settings(tmp_path / "d")
    size = Size.parse(screen)
    spec = PROFILES[profile]
    grid, image = geometry(spec, size, settings)
    for fx, fy in ((0.02, 0.03), (0.37, 0.61), (0.97, 0.98)):
        target = (int(fx * size.width), int(fy * size.height))
        x, y = own_units(profile, target, size, settings)
        text = template.format(x=x, y=y)
        if spec.action_format in TEXT_GRAMMARS:
            parsed = TEXT_GRAMMARS[spec.action_format](
                text, lambda v: to_tool_point(v, spec.space, image)
            )
        else:
            _, native = parse_tool_calls(text, [qwen_tool.NAME])
            parsed = qwen_tool.calls_from(
                native, lambda v: to_tool_point(v, spec.space, image), grid
            )
        assert [c.name for c in parsed] == [tool], parsed
        clicked = model_to_screen(parsed[0].arguments["x"], parsed[0].arguments["y"], grid, size)
        assert clicked == to_screen([x, y], spec.space, image, size)
        near = unit_of(spec.space, size, image)
        assert abs(clicked[0] - target[0]) <= near and abs(clicked[1] - target[1]) <= near


def test_opencua_a3b_clicks_where_it_points(tmp_path, capsys) -> None:
    """Issue 35: A3B's (0.5, 0.3) clicked at (2, 0) under OpenCUA's pixel profile."""
    profile = choose_profile("xlangai/OpenCUA-A3B").profile.name
    data = profiles_test(tmp_path, capsys, profile, "pyautogui.click(x=0.5, y=0.3)")
    assert data["actions"][0]["screen"]["point"] == [960, 324]


# --- runs on Xvfb ------------------------------------------------------------------------


def target_in(app: TkApp, widget: str, profile: str, settings) -> tuple[list[float], tuple]:
    screen = Size(*app.screen)
    target = app.widget_center(widget)
    return own_units(profile, target, screen, settings), target


def button1(app: TkApp) -> list[dict]:
    return [e for e in app.events("click") if e["button"] == 1]


def assert_near(points: list[tuple[int, int]], targets: list[tuple[int, int]]) -> None:
    assert len(points) == len(targets), (points, targets)
    for (x, y), (tx, ty) in zip(points, targets, strict=True):
        assert abs(x - tx) <= 1 and abs(y - ty) <= 1, (points, targets)


async def run_family(
    app: TkApp,
    fake: FakeModel,
    tmp_path: Path,
    monkeypatch,
    model: str,
    script: Callable[[Any], list[Reply]],
    **overrides: Any,
) -> list[RecordedRequest]:
    settings = agent_settings(
        tmp_path, fake, monkeypatch, provider="openai", openai_model=model, **overrides
    )
    fake.script(*script(settings), VERIFIED)
    outcome, _ = await run_agent(settings, TASK)
    assert outcome.status == "finished", outcome.summary
    assert app.ok_pressed() == "hello"
    return fake.requests


def fenced(code: str) -> str:
    return f"## Thought:\nI act.\n\n## Action:\nThe next step.\n\n## Code:\n```python\n{code}\n```"


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_opencua_keys_lists_and_triple_click(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """OpenCUA-7B's own forms (AgentNet sample s_5473959e0f6e21f7.json: hotkey(keys=[...]),
    press(keys=['enter']); its evaluator's computer.triple_click and terminate)."""
    where: dict[str, tuple] = {}

    def script(settings) -> list[Reply]:
        (bx, by), where["box"] = target_in(tkapp, "box", "opencua", settings)
        (ox, oy), where["ok"] = target_in(tkapp, "ok", "opencua", settings)
        return [
            Reply(text=fenced(f"computer.triple_click(x={bx}, y={by})")),
            Reply(text=fenced("pyautogui.write(message='hello')")),
            Reply(text=fenced("pyautogui.hotkey(keys=['ctrl', 'a'])")),
            Reply(text=fenced("pyautogui.press(keys=['end'])")),
            Reply(text=fenced(f"pyautogui.click(x={ox}, y={oy})")),
            Reply(text=fenced("computer.terminate(status='success')")),
        ]

    requests = await run_family(
        tkapp, fake_model, tmp_path, monkeypatch, "xlangai/OpenCUA-7B", script
    )
    clicks = button1(tkapp)
    assert [c["count"] for c in clicks] == [1, 2, 3, 1]  # one triple click, then OK
    assert_near([(c["x"], c["y"]) for c in clicks], [where["box"]] * 3 + [where["ok"]])
    keys = [e for e in tkapp.events("key") if not e["modifier"]]
    assert [(k["keysym"].lower(), "ctrl" in k["mods"]) for k in keys if k["widget"] == "box"][
        -2:
    ] == [("a", True), ("end", False)]
    assert "computer.triple_click" in requests[0].all_text()


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_opencua_a3b_relative_points(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    where: dict[str, tuple] = {}

    def script(settings) -> list[Reply]:
        (bx, by), where["box"] = target_in(tkapp, "box", "opencua-a3b", settings)
        (ox, oy), where["ok"] = target_in(tkapp, "ok", "opencua-a3b", settings)
        assert 0 < bx < 1 and 0 < by < 1
        return [
            Reply(
                text=fenced(f"pyautogui.click(x={bx}, y={by})\npyautogui.write(message='hello')")
            ),
            Reply(text=fenced(f"pyautogui.click(x={ox}, y={oy})")),
            Reply(text=fenced("computer.terminate(status='success')")),
        ]

    await run_family(tkapp, fake_model, tmp_path, monkeypatch, "xlangai/OpenCUA-A3B", script)
    assert_near([(c["x"], c["y"]) for c in button1(tkapp)], [where["box"], where["ok"]])


def holo_step(tool: dict[str, Any]) -> Reply:
    return Reply(text=json.dumps({"note": None, "thought": "next", "tool_call": tool}))


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
@pytest.mark.parametrize(("model", "profile"), [("holo3-35b-a3b", "holo3"),
                                                ("hf.co/Hcompany/Holo3.1-35B-A3B-GGUF:Q4_K_M",
                                                 "holo3.1")])  # fmt: skip
async def test_holo3_json_steps(
    model: str, profile: str, tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """hub.hcompany.ai agent-loop: {note, thought, tool_call: {tool_name, ...}}, 0..1000."""
    where: dict[str, tuple] = {}

    def script(settings) -> list[Reply]:
        (bx, by), where["box"] = target_in(tkapp, "box", profile, settings)
        (ox, oy), where["ok"] = target_in(tkapp, "ok", profile, settings)
        return [
            holo_step({"tool_name": "click", "element": "the text box", "x": bx, "y": by}),
            holo_step({"tool_name": "write", "content": "hello"}),
            holo_step({"tool_name": "click", "element": "OK", "x": ox, "y": oy}),
            holo_step({"tool_name": "answer", "content": "typed hello and pressed OK"}),
        ]

    requests = await run_family(tkapp, fake_model, tmp_path, monkeypatch, model, script)
    assert_near([(c["x"], c["y"]) for c in button1(tkapp)], [where["box"], where["ok"]])
    assert requests[0].tools == [] and "<output_format>" in requests[0].all_text()
    assert '"tool_name": "click"' in requests[1].all_text()  # the step goes back as written


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_gui_owl_tool_call_text(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """X-PLUG/MobileAgent Mobile-Agent-v3.5/computer_use/utils.py: 'Action: ...' then a
    <tool_call> with computer_use on its 1000x1000 screen."""
    where: dict[str, tuple] = {}

    def owl(action: str, **arguments: Any) -> Reply:
        body = json.dumps({"name": "computer_use", "arguments": {"action": action, **arguments}})
        return Reply(text=f"Action: {action}.\n<tool_call>\n{body}\n</tool_call>")

    def script(settings) -> list[Reply]:
        box, where["box"] = target_in(tkapp, "box", "gui-owl-1.5", settings)
        ok, where["ok"] = target_in(tkapp, "ok", "gui-owl-1.5", settings)
        return [
            owl("left_click", coordinate=box),
            owl("type", text="hello"),
            owl("left_click", coordinate=ok),
            owl("terminate", status="success"),
        ]

    requests = await run_family(
        tkapp, fake_model, tmp_path, monkeypatch, "mPLUG/GUI-Owl-1.5-8B-Instruct", script
    )
    assert_near([(c["x"], c["y"]) for c in button1(tkapp)], [where["box"], where["ok"]])
    assert "computer_use" in requests[0].tool_names
    assert "The screen's resolution is 1000x1000." in str(requests[0].tools)  # as it was trained


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_ui_venus_actions(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """inclusionAI/UI-Venus models/navigation/utils.py WEB_USER_PROMPT's actions."""
    where: dict[str, tuple] = {}

    def venus(action: str) -> Reply:
        return Reply(
            text=f"<think> next </think>\n<action>{action}</action>\n<conclusion>ok</conclusion>"
        )

    def script(settings) -> list[Reply]:
        (bx, by), where["box"] = target_in(tkapp, "box", "ui-venus-1.5", settings)
        (ox, oy), where["ok"] = target_in(tkapp, "ok", "ui-venus-1.5", settings)
        return [
            venus(f"Click(box=({bx},{by}))"),
            venus("Type(content='hello')"),
            venus(f"Click(box=({ox},{oy}))"),
            venus("Finished(content='typed hello and pressed OK')"),
        ]

    requests = await run_family(
        tkapp, fake_model, tmp_path, monkeypatch, "inclusionAI/UI-Venus-1.5-8B", script
    )
    assert_near([(c["x"], c["y"]) for c in button1(tkapp)], [where["box"], where["ok"]])
    assert "Click(box=(x1,y1))" in requests[0].all_text()


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_evocua_native_tool_calls_on_0_999(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """meituan/EvoCUA mm_agents/evocua/evocua_agent.py: relative points scaled x/999*W."""
    where: dict[str, tuple] = {}

    def script(settings) -> list[Reply]:
        box, where["box"] = target_in(tkapp, "box", "evocua", settings)
        ok, where["ok"] = target_in(tkapp, "ok", "evocua", settings)
        return [
            Reply(
                tool_calls=[
                    call("computer_use", action="left_click", coordinate=box),
                    call("computer_use", action="type", text="hello"),
                ]
            ),
            Reply(tool_calls=[call("computer_use", action="left_click", coordinate=ok)]),
            Reply(tool_calls=[call("computer_use", action="terminate", status="success")]),
        ]

    await run_family(tkapp, fake_model, tmp_path, monkeypatch, "EvoCUA", script)
    assert_near([(c["x"], c["y"]) for c in button1(tkapp)], [where["box"], where["ok"]])


# --- H Company's hosted Holo1.5 as the grounder ------------------------------------------

GROUNDER_KEY = "sk-holo-test-0123456789"
WIDGETS = {"the text box": "box", "the OK button": "ok"}


@pytest.fixture
def holo_server() -> Iterator[FakeModel]:
    server = FakeModel().start()
    try:
        yield server
    finally:
        server.stop()


def holo15(app: TkApp):
    """A perfect Holo1.5: the cookbook's ClickAbsoluteAction in pixels of the image sent."""

    def answer(request: RecordedRequest) -> Reply:
        width, height = sent_image_size(request)
        assert "ClickAbsoluteAction" in request.all_text()
        words = next(w for w in WIDGETS if w in request.all_text())
        tx, ty = app.widget_center(WIDGETS[words])
        sw, sh = app.screen
        x, y = math.floor((tx + 0.5) * width / sw), math.floor((ty + 0.5) * height / sh)
        return Reply(text=json.dumps({"action": "click_absolute", "x": x, "y": y}))

    return answer


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_hosted_holo15_id_grounds_with_its_own_schema(
    tkapp: TkApp, fake_model: FakeModel, holo_server: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HAI_API_KEY", GROUNDER_KEY)
    settings = agent_settings(
        tmp_path,
        fake_model,
        monkeypatch,
        grounder={
            "model": "holo1-5-7b-20250915",
            "base_url": holo_server.openai_base_url,
            "api_key_env": "HAI_API_KEY",
        },
    )
    holo_server.script(holo15(tkapp), holo15(tkapp))
    fake_model.script(
        Reply(tool_calls=[call("click_target", target="the text box"), call("type", text="hello")]),
        Reply(tool_calls=[call("click_target", target="the OK button")]),
        Reply(tool_calls=[call("finished", summary="typed hello and pressed OK")]),
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, TASK)
    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == "hello"
    assert_near(
        [(c["x"], c["y"]) for c in button1(tkapp)],
        [tkapp.widget_center("box"), tkapp.widget_center("ok")],
    )
    asked = holo_server.requests
    assert len(asked) == 2 and "click_absolute" in asked[0].all_text()
    assert "ClickCoordinates" not in asked[0].all_text()


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_gui_owl_and_evocua_actions_beyond_qwens_cookbook(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """GUI-Owl-1.5's middle_click, triple_click, hscroll and answer (X-PLUG/MobileAgent
    Mobile-Agent-v3.5/computer_use/utils.py, the action enum of its computer_use tool, and
    run_gui_owl_1_5_for_pc.py, how each runs) and EvoCUA's key_down / key_up (meituan/EvoCUA
    mm_agents/evocua): each reaches the screen as the model's own executor runs it."""
    where: dict[str, tuple] = {}

    def owl(action: str, **arguments: Any) -> Reply:
        body = json.dumps({"name": "computer_use", "arguments": {"action": action, **arguments}})
        return Reply(text=f"Action: {action}.\n<tool_call>\n{body}\n</tool_call>")

    def script(settings) -> list[Reply]:
        pad, where["pad"] = target_in(tkapp, "pad", "gui-owl-1.5", settings)
        box, where["box"] = target_in(tkapp, "box", "gui-owl-1.5", settings)
        ok, where["ok"] = target_in(tkapp, "ok", "gui-owl-1.5", settings)
        return [
            owl("middle_click", coordinate=pad),
            owl("triple_click", coordinate=box),
            owl("type", text="hello"),
            owl("hscroll", coordinate=pad, pixels=2),
            owl("key_down", keys=["shift"]),
            owl("left_click", coordinate=pad),
            owl("key_up", keys=["shift"]),
            owl("left_click", coordinate=ok),
            owl("answer", text="typed hello and pressed OK"),
        ]

    await run_family(
        tkapp, fake_model, tmp_path, monkeypatch, "mPLUG/GUI-Owl-1.5-8B-Instruct", script
    )
    clicks = tkapp.events("click")
    middle = [c for c in clicks if c["button"] == 2]
    assert_near([(c["x"], c["y"]) for c in middle], [where["pad"]])
    on_box = [c["count"] for c in clicks if c["button"] == 1 and c["widget"] == "box"]
    assert on_box == [1, 2, 3]  # one triple click
    scrolls = tkapp.events("scroll")
    assert scrolls and {s["direction"] for s in scrolls} == {"right"}
    shifted = [c for c in clicks if c["button"] == 1 and c["widget"] not in ("box", "ok")]
    assert len(shifted) == 1 and shifted[0]["state"] & 0x1  # shift held over the click
    assert_near([(shifted[0]["x"], shifted[0]["y"])], [where["pad"]])
