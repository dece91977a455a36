"""Every virtual display Jarvis starts has the accessibility bus when the agent reads the
tree: a channel's private display and an eval task's display (``--sandbox``'s is in
``tests/test_a11y.py``). Their apps publish, including a Chromium started later by name
from a shell (as from a terminal or a launcher): it gets ``--force-renderer-accessibility``
through the launchers on the display's ``PATH``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.desktop import Desktop
from jarvis.safety.channel_display import display_for
from jarvis.safety.sandbox import wants_tree
from tests.a11yapps import EventPage
from tests.realapps import CHROMIUM_FLAGS
from tests.xserver import Xvfb

pytestmark = pytest.mark.slow


def _by_name(url: str, profile: Path) -> str:
    """A shell command that starts Chromium by its name, as a person types it in a terminal."""
    flags = " ".join(CHROMIUM_FLAGS)
    return (
        f"exec chromium {flags} --user-data-dir={profile} --window-position=0,0 "
        f"--window-size=900,600 --app={url}"
    )


def test_the_tree_is_wanted_only_when_the_setting_and_the_profile_ask(tmp_path: Path) -> None:
    assert wants_tree(Settings(data_dir=tmp_path, observation="screenshot+tree"))
    assert wants_tree(Settings(data_dir=tmp_path, observation="screenshot+marks"))
    assert not wants_tree(Settings(data_dir=tmp_path))
    grammar = Settings(
        data_dir=tmp_path, observation="screenshot+tree", model_profile="ui-tars-1.5"
    )
    assert not wants_tree(grammar)  # its profile takes no tree: no bus is started for it


async def test_a_channels_private_display_has_the_bus_for_apps_opened_later(
    xserver: Xvfb, tmp_path: Path
) -> None:
    page = EventPage()
    app = ["sh", "-c", _by_name(page.url, tmp_path / "profile")]
    settings = Settings(
        data_dir=tmp_path,
        observation="screenshot+tree",
        channels={"api": {"private_display": True}},
        safety={"sandbox": {"size": "1024x768", "apps": [app]}},
    )
    desktop = Desktop.open(settings, xserver.where, session_bus="")  # no bus at home
    try:
        view = desktop.elements
        assert view is not None
        async with display_for(settings, ["api"], desktop) as name:
            assert name is not None and desktop.where.name == name
            assert desktop.where.session_bus and view.reader.session_bus
            deadline = time.monotonic() + 40
            while True:  # Chromium starts, loads the page and publishes its tree
                observation = view.look(desktop.screen.capture())
                tree = view.tree
                if tree is not None and any(e.name == "Launch the rocket" for e in tree.elements):
                    break
                assert time.monotonic() < deadline, observation.tree
                time.sleep(0.2)
            assert 'push button "Hello"' in observation.tree
        assert desktop.where == xserver.where and view.reader.session_bus == ""
    finally:
        desktop.close()
        page.close()


TASK = """task: press the rocket button
files:
  page.html: |
    <!doctype html><meta charset="utf-8"><title>Rocket page</title>
    <button aria-label="Launch the rocket" style="width:18px;height:18px"></button>
setup:
  - run: >-
      chromium --no-sandbox --test-type --user-data-dir="$WORK/.profile" --no-first-run
      --disable-background-networking --disable-component-update --disable-sync
      --window-position=0,0 --window-size=800,600 --app="file://$WORK/page.html"
    background: true
    wait_window: Rocket page
budget: {steps: 3, seconds: 90}
check: {command: "true"}
oracle:
  - - {wait: {seconds: 1}}
  - - {finished: {summary: looked at the tree}}
"""


def _trees(data_dir: Path) -> list[str]:
    return [
        json.loads(path.read_text()).get("tree") or ""
        for path in sorted(data_dir.rglob("step.json"))
    ]


def test_an_eval_tasks_display_has_the_bus_when_the_agent_reads_the_tree(tmp_path: Path) -> None:
    from jarvis.eval.runner import run_one
    from jarvis.eval.suite import load_suite

    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "rocket.yaml").write_text(TASK)
    [task] = load_suite(suite)
    data = tmp_path / "data"
    (data / "config").mkdir(parents=True)
    (data / "config" / "settings.json").write_text(json.dumps({"observation": "screenshot+tree"}))
    result = run_one(task, suite, data, "e-a11y-rocket-1", 1, "oracle", None)
    assert result.status == "finished", result
    trees = _trees(data)
    assert any('"Launch the rocket"' in t for t in trees), trees

    plain = tmp_path / "plain"  # the screenshot alone: no bus, no tree
    result = run_one(task, suite, plain, "e-a11y-rocket-2", 1, "oracle", None)
    assert result.status == "finished", result
    assert _trees(plain) and not any(_trees(plain))
