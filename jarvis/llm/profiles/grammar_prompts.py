"""What a text-grammar profile tells its model: the action space in the model's own words.

The texts are files in ``prompts/`` (``grammar_<format>.md``). UI-TARS's follows
``COMPUTER_USE`` in bytedance/UI-TARS ``codes/ui_tars/prompt.py``; GLM's follows the
GUI-agent prompt shape of zai-org/GLM-V (actions with boxes inside ``<|begin_of_box|>``
tokens); OpenCUA's follows the pyautogui action list of xlang-ai/OpenCUA; Holo3's is H
Company's agent-loop output JSON with Jarvis's toolbox; UI-Venus-1.5's follows its web
prompt. ``{{note}}`` is the profile's resolution sentence.

Doubao-1.5-UI-TARS is the exception: Volcengine's model page
(https://www.volcengine.com/docs/82379/1536429) says GUI tasks must use its fixed prompt
template ("处理GUI任务需要使用固定的提示词模板"; the first release: "务必使用以下内容,作为固定的
System Prompt请求模型。如有更改,会影响模型输出的效果。", any change hurts the answers). For
doubao-1-5-ui-tars-250428 that template is ``COMPUTER_USE_DOUBAO`` of bytedance/UI-TARS
``codes/ui_tars/prompt.py``, kept byte for byte in ``prompts/grammar_doubao.md`` with its
``{language}`` and ``{instruction}`` slots: :func:`fixed_prompt` gives it whole, in place
of Jarvis's system prompt and action space.
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


# profile -> its makers' fixed prompt in prompts/ (whole: no Jarvis text around it)
FIXED_PROMPTS = {"doubao": "grammar_doubao"}


def fixed_prompt(profile: str, task: str, language: str = "English") -> str | None:
    """The fixed prompt ``profile``'s makers require, filled with the task, or None."""
    name = FIXED_PROMPTS.get(profile)
    if name is None:
        return None
    return prompts.render(name, language=language, instruction=task)


def grammar_prompt(action_format: str, note: str) -> str:
    """The format's text with the note filled in, final newline kept (the text sent to the
    model is the file's text, byte for byte)."""
    return prompts.render(PROMPTS[action_format], note=note)
