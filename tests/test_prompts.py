from __future__ import annotations

from pathlib import Path

import pytest

from jarvis import prompts
from jarvis.prompts import PromptError, fill, render


def test_fill_substitutes_every_slot() -> None:
    assert fill("a {{x}} b {{ y }} {{x}}", {"x": 1, "y": "two"}) == "a 1 b two 1"


def test_missing_variable_is_an_error() -> None:
    with pytest.raises(PromptError, match="missing variable"):
        fill("hello {{name}}", {})


def test_unknown_variable_is_an_error() -> None:
    with pytest.raises(PromptError, match="unknown variable"):
        fill("hello", {"name": "x"})


def test_values_are_not_expanded_again() -> None:
    assert fill("{{a}}", {"a": "{{b}}"}) == "{{b}}"


def test_missing_template(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="not found"):
        render("nope", directory=tmp_path)


@pytest.mark.parametrize("name", ["system", "user", "step", "verify", "wrap_up"])
def test_shipped_templates_have_slots(name: str) -> None:
    assert prompts.slots(prompts.load(name))


def test_system_prompt_marks_screen_text_untrusted() -> None:
    text = prompts.load("system").lower()
    assert "untrusted" in text
    assert "not instructions" in text
