"""The accessibility tree's part of a run's context, for its report.

A step that sent the tree beside its screenshot (the ``observation`` setting) recorded the
tree's text and the tokens it adds (``tree`` and ``tree_tokens`` in ``step.json``). The
report shows, per step, that text and its share of the step's input tokens, and in the
header the tree's tokens over the run beside every input token the run paid for, and the
tree's tokens in the verification of ``finished`` (``tree_tokens`` of the verdict in
``run.json``).
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from jarvis.runs.step_file import StepFile
from jarvis.usage import Usage


def prompt_tokens(usage: Usage) -> int:
    """The whole prompt of a response: fresh, cached and cache-written input tokens."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def _share(part: int, whole: int) -> str:
    if whole <= 0:
        return f"≈ {part} tokens"
    return f"≈ {part} of {whole} input tokens ({100 * part / whole:.0f}%)"


def tree_html(step: StepFile, anchor: str) -> str:
    """The tree a step sent, folded under a line with its size (empty text without one)."""
    if not step.tree:
        return ""
    head = (
        f"Accessibility tree in the context: {len(step.tree)} characters, "
        f"{_share(step.tree_tokens, prompt_tokens(step.tokens))}"
    )
    return (
        f'<details class="tree" id="tree-{anchor}" data-tokens="{step.tree_tokens}">'
        f"<summary>{escape(head)}</summary><pre>{escape(step.tree)}</pre></details>"
    )


def tree_meta(steps: list[tuple[Path, StepFile]], verifier: int = 0) -> list[tuple[str, str]]:
    """The header row for the tree's tokens over the run (none when no step sent one);
    ``verifier``: the tree's tokens in the verification of ``finished``, said apart."""
    sent = [step for _, step in steps if step.tree]
    if not sent and not verifier:
        return []
    tokens = sum(step.tree_tokens for step in sent)
    whole = sum(prompt_tokens(step.tokens) for _, step in steps)
    text = f"{len(sent)} of {len(steps)} steps, {_share(tokens, whole)}"
    if verifier:
        text += f"; the verification ≈ {verifier} tokens more"
    return [("accessibility tree", f'<span id="tree-tokens">{escape(text)}</span>')]
