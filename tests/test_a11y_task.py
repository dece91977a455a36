"""A task only the accessibility tree can do, end to end, and what the tree costs.

Chromium shows a page (tests/a11yapps.py) whose rocket button is an 18 px square with no
label drawn: only its accessible name says what it is. The scripted model finds the
button's id in the tree text of the request it receives, calls ``click_element``, and the
verifier reads the button's pressed state from the tree. The run's records hold the tree
and its tokens, the tokens the model reports count it, and ``jarvis report`` shows it. A
profile whose ``tree`` field says no gets the screenshot alone, whatever the setting.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.brain import Brain
from jarvis.cli import main
from jarvis.config import Settings
from jarvis.desktop.a11y import A11yReader
from jarvis.desktop.a11y.session import A11ySession
from jarvis.desktop.desktop import Desktop
from jarvis.events import EventBus
from jarvis.llm.profiles.select import observation_kind
from jarvis.llm.wire_tokens import text_tokens, wire_blocks
from jarvis.runs.report import locate
from jarvis.runs.run_info import RunInfo
from jarvis.runs.step_file import load_steps
from jarvis.tools.computer import build_registry
from tests.a11yapps import EventPage, publishing_env, start_chromium
from tests.agent_harness import agent_settings
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.realapps import App
from tests.runs_harness import run_journaled
from tests.tkdriver import TkApp
from tests.xserver import Xvfb

LAUNCH = re.compile(r'^\[(e\d+)\] toggle button "Launch the rocket"(.*)$', re.M)


@pytest.fixture(scope="module")
def session(xserver: Xvfb) -> Iterator[A11ySession]:
    with A11ySession(xserver.env()) as started:
        yield started


def _page_elements(session: A11ySession, app: App) -> list[str]:
    with A11yReader(session.address) as reader:
        tree = reader.read(app.box)
    return [e.line() for e in tree.elements] if tree else []


def _wire_tokens(body: dict[str, Any]) -> int:
    """What the cost model counts for a Messages API request body."""
    return sum(block.tokens for block in wire_blocks(body))


def _without(body: dict[str, Any], text: str) -> dict[str, Any]:
    """``body`` with ``text`` (and the blank line after it) cut out of its text blocks."""
    out = copy.deepcopy(body)
    for message in out["messages"]:
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "text":
                block["text"] = block["text"].replace(f"{text}\n\n", "")
    return out


def test_a_task_that_needs_the_tree_finishes_and_the_report_shows_the_tree(
    xserver: Xvfb,
    session: A11ySession,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    page = EventPage()
    work = tmp_path / "work"
    work.mkdir()
    app = start_chromium(work, publishing_env(work, xserver.env(), session), page.url)
    try:
        page.rects()  # loaded
        settings = agent_settings(
            tmp_path,
            fake_model,
            monkeypatch,
            observation="screenshot+tree",
            a11y_session_bus=session.address,
            context_policy="sliding",
        )

        def act(request: RecordedRequest) -> Reply:
            found = LAUNCH.search(request.all_text())
            assert found, "the tree is not in the request"
            return Reply(
                text="The unlabelled button is the rocket's.",
                tool_calls=[call("click_element", id=found.group(1))],
                input_tokens=_wire_tokens(request.body),  # the model counts what it got
            )

        def verify(request: RecordedRequest) -> Reply:
            found = LAUNCH.search(request.all_text())
            done = bool(found and "pressed" in found.group(2))
            return Reply(text=json.dumps({"done": done, "reason": "read from the tree"}))

        fake_model.script(
            act,
            Reply(tool_calls=[call("finished", summary="launched the rocket")]),
            verify,
        )
        deadline = time.monotonic() + 20  # the page's tree is published after its load
        while not any("Launch" in line for line in _page_elements(session, app)):
            assert time.monotonic() < deadline, "Chromium published no tree for the page"
            time.sleep(0.1)
        outcome = asyncio.run(run_journaled(settings, "Launch the rocket on the page."))
        assert outcome.status == "finished", outcome
        page.wait("launched")
        assert len(fake_model.requests) == 3  # act, finish, verify (it read "pressed")
        first_request = fake_model.requests[0]
        assert "Accessibility tree of" in first_request.all_text()
        later = fake_model.requests[1].all_text()
        assert later.count("Accessibility tree of") == 1  # the old step's tree is not resent

        folder = locate(settings.data_dir, outcome.task_id)
        steps = [step for _, step in load_steps(folder)]
        first = steps[0]
        assert LAUNCH.search(first.tree)  # step.json holds the tree it sent
        assert first.tree in first_request.all_text()
        assert first.tree_tokens == text_tokens(first.tree)
        # the cost meter: the step's input tokens are what the model counted, the tree in it
        assert first.tokens.input_tokens == _wire_tokens(first_request.body)
        counted = _wire_tokens(first_request.body) - _wire_tokens(
            _without(first_request.body, first.tree)
        )
        assert abs(counted - first.tree_tokens) <= 2, (counted, first.tree_tokens)
        info = RunInfo.load(folder)
        assert info.tokens.input_tokens >= first.tree_tokens + 12

        assert main(["report", outcome.task_id, "--data-dir", str(settings.data_dir)]) == 0
        html = (folder / "report.html").read_text(encoding="utf-8")
        assert 'id="tree-step-1"' in html
        assert f'data-tokens="{first.tree_tokens}"' in html
        launch_line = LAUNCH.search(first.tree)
        assert launch_line is not None
        assert launch_line.group(0).replace('"', "&quot;") in html  # the tree's own text
        whole = first.tokens.input_tokens
        assert f"{first.tree_tokens} of {whole} input tokens" in html
        sent = sum(1 for s in steps if s.tree)
        assert f"{sent} of {len(steps)} steps" in html  # the run's share in the header
        # the verifier got the tree too: the cost meter counts it
        verify_text = fake_model.requests[2].all_text()
        assert "Accessibility tree of" in verify_text
        assert info.verdict is not None and info.verdict.tree_tokens > 0
        verify_tree = verify_text[verify_text.index("Accessibility tree of") :]
        assert info.verdict.tree_tokens <= text_tokens(verify_tree)
        assert f"the verification ≈ {info.verdict.tree_tokens} tokens more" in html
    finally:
        app.close()
        page.close()


def test_a_profile_without_the_tree_gets_the_screenshot_alone(
    xserver: Xvfb, session: A11ySession, tmp_path: Path
) -> None:
    """The setting asks for the tree; the profile says no: no tree, no element tools."""
    wanted = Settings(data_dir=tmp_path, observation="screenshot+tree")
    assert observation_kind(wanted) == "screenshot+tree"
    refused = Settings(
        data_dir=tmp_path, observation="screenshot+tree", model_profiles={"claude": {"tree": False}}
    )
    assert observation_kind(refused) == "screenshot"
    grammar = Settings(
        data_dir=tmp_path, observation="screenshot+tree", model_profile="ui-tars-1.5"
    )
    assert observation_kind(grammar) == "screenshot"  # a text grammar has no click_element
    forced = Settings(
        data_dir=tmp_path,
        observation="screenshot+tree",
        model_profile="ui-tars-1.5",
        model_profiles={"ui-tars-1.5": {"tree": True}},  # the user's word wins
    )
    assert observation_kind(forced) == "screenshot+tree"
    assert observation_kind(Settings(data_dir=tmp_path)) == "screenshot"
    assert "click_element" in build_registry(wanted, presets=[]).names
    assert "click_element" not in build_registry(refused, presets=[]).names
    assert "click_element" not in build_registry(grammar, presets=[]).names
    env = {**xserver.env(), "DBUS_SESSION_BUS_ADDRESS": session.address}
    tk = TkApp.start(env)  # a window whose absence of a tree is said in the observation
    try:
        tk.focus("box")
        for settings, told in ((wanted, True), (refused, False)):
            with Desktop.open(settings, xserver.where, session_bus=session.address) as desktop:
                brain = Brain(_NoModel(), desktop.screen, settings, EventBus(), desktop.elements)
                observation = brain._observe()
                assert bool(observation.tree) == told, observation.tree
    finally:
        tk.close()


class _NoModel:
    """The provider slot of a Brain that only perceives (never asked anything)."""

    name = "anthropic"
