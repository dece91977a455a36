"""Prompt templates: files in ``prompts/`` with ``{{variable}}`` slots.

A slot without a value is an error, never an empty string; a value that is
not used by the template is an error too, so renames cannot go unnoticed.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from jarvis.shipped import shipped

PROMPTS_DIR = shipped("prompts")
_SLOT = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class PromptError(Exception):
    """A template is missing, or its variables do not match what was given."""


@lru_cache(maxsize=32)
def load(name: str, directory: Path = PROMPTS_DIR) -> str:
    path = directory / (name if name.endswith(".md") else f"{name}.md")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PromptError(f"prompt template not found: {path}") from exc


def slots(template: str) -> set[str]:
    return set(_SLOT.findall(template))


def fill(template: str, values: dict[str, object], name: str = "template") -> str:
    """Substitute every ``{{slot}}``; missing or unused variables raise PromptError."""
    wanted = slots(template)
    missing = sorted(wanted - values.keys())
    if missing:
        raise PromptError(f"{name}: missing variable(s) {', '.join(missing)}")
    unused = sorted(values.keys() - wanted)
    if unused:
        raise PromptError(f"{name}: unknown variable(s) {', '.join(unused)}")
    return _SLOT.sub(lambda m: str(values[m.group(1)]), template)


def render(name: str, directory: Path = PROMPTS_DIR, **values: object) -> str:
    """Load ``prompts/NAME.md`` and fill it."""
    return fill(load(name, directory), values, name)


def render_text(name: str, directory: Path = PROMPTS_DIR, **values: object) -> str:
    """:func:`render` without the file's final newline: for a prompt that is a whole
    system prompt or that other text is joined to."""
    return render(name, directory, **values).removesuffix("\n")
