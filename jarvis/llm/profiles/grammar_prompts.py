"""What a text-grammar profile tells its model: the action space in the model's own words.

The texts are files in ``prompts/`` (``grammar_<format>.md``). UI-TARS's follows
``COMPUTER_USE`` in bytedance/UI-TARS ``codes/ui_tars/prompt.py``; GLM's follows the
GUI-agent prompt shape of zai-org/GLM-V (actions with boxes inside ``<|begin_of_box|>``
tokens); OpenCUA's follows the pyautogui action list of xlang-ai/OpenCUA; Holo3's is H
Company's agent-loop output JSON with Jarvis's toolbox; UI-Venus-1.5's follows its web
prompt. ``{{note}}`` is the profile's resolution sentence.
"""

from __future__ import annotations

from jarvis import prompts

# action format -> its prompt file in prompts/
PROMPTS = {
    "uitars": "grammar_uitars",
    "glm": "grammar_glm",
    "pyautogui": "grammar_pyautogui",
    "holo": "grammar_holo",
    "venus": "grammar_venus",
}


def grammar_prompt(action_format: str, note: str) -> str:
    """The format's text with the note filled in, final newline kept (the text sent to the
    model is the file's text, byte for byte)."""
    return prompts.render(PROMPTS[action_format], note=note)
