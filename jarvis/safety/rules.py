"""Which tool calls wait for a person: pure functions over the call and ``safety.approve``.

A call is held when its tool name matches one of ``tools`` (exact or shell-style
pattern), when ``type`` would type text matching one of ``text_patterns``
(case-insensitive regular expressions), when ``hotkey`` or ``press_key`` presses a chord
in ``hotkeys`` (order and aliases do not matter: ``F4+Alt`` is ``alt+f4``), or when the
model itself marks a step as risky with ``call_user(risky=true)`` (``model_marked``). The
result names the rule, so "allow for this task" can cover that rule and nothing else.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from jarvis.desktop.keys import UnknownKeyError, parse_chord
from jarvis.safety.settings import ApprovalRules

TEXT_TOOLS = frozenset({"type"})
MODEL_MARKED = "model:call_user"
"""The rule of a ``call_user`` the model marked as risky: a person approves the step."""
HOTKEY_TOOLS = {"hotkey": "keys", "press_key": "key"}
"""Tools that press a chord, and the argument that names it (press_key takes chords too)."""


@dataclass(frozen=True)
class Held:
    """Why a call waits: ``rule`` identifies the matching rule, ``reason`` says it in words."""

    rule: str
    reason: str


def chord_key(chord: str) -> frozenset[str] | None:
    """The set of canonical keys of a chord, or None when a key is unknown."""
    try:
        return frozenset(parse_chord(chord))
    except UnknownKeyError:
        return None


def _fold(text: str) -> str:
    """Compatibility-fold the text (fullwidth letters, ligatures) and drop format characters
    (zero-width spaces and joiners), so ``ｓｕｄｏ`` or ``su\u200bdo`` still match ``sudo``."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(c for c in folded if unicodedata.category(c) != "Cf")


@dataclass(frozen=True)
class RuleSet:
    """``safety.approve`` compiled once."""

    rules: ApprovalRules

    @cached_property
    def _patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(p, re.compile(p, re.IGNORECASE)) for p in self.rules.text_patterns]

    @cached_property
    def _chords(self) -> dict[frozenset[str], str]:
        found: dict[frozenset[str], str] = {}
        for chord in self.rules.hotkeys:
            key = chord_key(chord)
            if key is None:
                raise ValueError(f"safety.approve.hotkeys: unknown key in {chord!r}")
            found[key] = "+".join(sorted(key))
        return found

    def held(self, name: str, arguments: Any) -> Held | None:
        """Whether a call of ``name`` with ``arguments`` must wait for a person."""
        for pattern in self.rules.tools:
            if name == pattern or fnmatch.fnmatchcase(name, pattern):
                return Held(f"tool:{pattern}", f"the tool '{name}' needs approval")
        args = arguments if isinstance(arguments, dict) else {}
        if name == "call_user" and args.get("risky") is True and self.rules.model_marked:
            asked = " ".join(str(args.get("message", "")).split())[:300]
            return Held(MODEL_MARKED, f"the model asks to approve a risky step: {asked}")
        if name in TEXT_TOOLS and isinstance(args.get("text"), str):
            text = _fold(args["text"])
            for source, compiled in self._patterns:
                match = compiled.search(text)
                if match is not None:
                    return Held(
                        f"text:{source}", f"the text to type contains {match.group(0).strip()!r}"
                    )
        pressed = args.get(HOTKEY_TOOLS.get(name, ""))
        if isinstance(pressed, str):
            key = chord_key(pressed)
            if key is None:  # the tool will refuse it anyway; nothing is pressed
                return None
            if key in self._chords:
                chord = self._chords[key]
                return Held(f"hotkey:{chord}", f"the hotkey {chord} needs approval")
        return None
