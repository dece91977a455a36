"""The shipped model profiles, and choosing one for a model.

A profile says how Jarvis talks to a model: which API (``api``), in which action format
(``action_format``: Jarvis's own tools, a vendor's computer tool, or a named text
grammar parsed by :mod:`jarvis.llm.profiles.grammars`), in which coordinate space
(:class:`~jarvis.geometry.CoordSpace`), at which image size (``image``),
what the prompt says about the resolution, and its history and sampling defaults.

Choosing (:func:`choose_profile`): the ``model_profile`` setting first, then the
model-name patterns, most specific first (Qwen2.5-VL before any "qwen"), then the
generic profile with a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from jarvis.geometry import (
    PIXELS,
    REL_1000,
    CoordSpace,
    Size,
    anthropic_size,
    fit_size,
    smart_size,
)

Api = Literal["anthropic", "openai-chat", "openai-responses"]
ActionFormat = Literal[
    "tools", "claude-computer", "openai-computer", "qwen-computer-use", "uitars", "glm", "pyautogui"
]


@dataclass(frozen=True)
class ImageRule:
    """How big the screenshot is and who resizes it.

    ``fit``: longest side at most the ``max_side`` setting; ``anthropic``: Anthropic's
    recommended sizes (with Claude's computer tool); ``smart``: a size the model's own
    ``smart_resize`` (``factor``, ``max_pixels``) leaves unchanged, so Jarvis does the
    only resize.
    """

    kind: Literal["fit", "anthropic", "smart"] = "fit"
    factor: int = 28
    max_pixels: int = 28 * 28 * 1280

    def size(self, screen: Size, max_side: int, computer_tool: bool = True) -> Size:
        if self.kind == "smart":
            return smart_size(screen, self.factor, self.max_pixels)
        if self.kind == "anthropic" and computer_tool:
            return anthropic_size(screen)
        return fit_size(screen, max_side)


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    api: Api
    action_format: ActionFormat
    space: CoordSpace
    image: ImageRule
    served: str
    source: str
    patterns: tuple[str, ...] = ()
    resolution_prompt: str = ""
    chunk: int = 5
    """History default: the window of screenshots grows by this many past the
    ``keep_screenshots`` setting, then drops them at once (a prefix the cache reuses)."""
    temperature: float | None = None

    def grid_note(self, image: Size) -> str:
        """What the prompt says about coordinates for a screenshot of ``image``."""
        if self.resolution_prompt:
            return self.resolution_prompt.format(w=image.width, h=image.height)
        if self.space.kind == "relative":
            return (
                f"Coordinates are relative: 0..{self.space.denominator:g} across the "
                "screenshot's width and height, whatever its pixel size."
            )
        return f"Coordinates are pixels of the {image.width}x{image.height} screenshot."


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            # Anthropic computer-use docs: coordinates are pixels of the screenshot as sent;
            # scale to XGA/WXGA/FWXGA by aspect (see coords.anthropic_size).
            name="claude",
            title="Claude (Sonnet 4.x, Opus 4.x, Haiku 4.5)",
            api="anthropic",
            action_format="claude-computer",
            space=PIXELS,
            image=ImageRule("anthropic"),
            served="Anthropic API",
            source="docs.claude.com: Computer use tool (computer_20250124, computer_20251124)",
            patterns=(r"claude",),
        ),
        Profile(
            # OpenAI "Computer use" guide: the computer tool's actions carry x, y in pixels
            # of the screenshot sent as computer_call_output.
            name="openai-computer",
            title="OpenAI computer-use-preview / gpt-5.4 computer tool",
            api="openai-responses",
            action_format="openai-computer",
            space=PIXELS,
            image=ImageRule("fit"),
            served="OpenAI Responses API",
            source="platform.openai.com/docs/guides/tools-computer-use",
            patterns=(r"computer-use", r"gpt-5\.4"),
        ),
        Profile(
            # Qwen2.5-VL tech report (arXiv 2502.13923) s.2.1: absolute coordinates on the
            # resized image; qwen_vl_utils.smart_resize: factor 28, max 1280*28*28 in the
            # computer-use cookbook; the cookbook's `computer_use` function tool.
            name="qwen2.5-vl",
            title="Qwen2.5-VL (3B/7B/32B/72B)",
            api="openai-chat",
            action_format="qwen-computer-use",
            space=PIXELS,
            image=ImageRule("smart", 28, 28 * 28 * 1280),
            served="vLLM (hermes tool parser), SGLang, llama.cpp, DashScope",
            source="QwenLM/Qwen2.5-VL cookbooks/computer_use.ipynb; qwen_vl_utils",
            patterns=(r"qwen2\.5-?vl", r"qwen2_5_vl"),
        ),
        Profile(
            # Qwen3-VL model card / cookbook: grounding coordinates are relative on
            # 0..1000; the processor's patch 16 x merge 2 gives a resize factor of 32.
            name="qwen3-vl",
            title="Qwen3-VL (2B..235B, Instruct/Thinking)",
            api="openai-chat",
            action_format="qwen-computer-use",
            space=REL_1000,
            image=ImageRule("smart", 32, 32 * 32 * 1280),
            served="vLLM (hermes tool parser), SGLang, Ollama, DashScope",
            source="QwenLM/Qwen3-VL README and cookbooks/computer_use.ipynb",
            patterns=(r"qwen3-?vl",),
        ),
        Profile(
            # UI-TARS-1.5 README "Coordinates processing": absolute pixels of the image
            # after Qwen2.5-VL smart_resize (factor 28); prompt grammar
            # "Thought: ...\nAction: click(start_box='(x,y)')" (bytedance/UI-TARS prompt.py).
            name="ui-tars-1.5",
            title="UI-TARS-1.5 (7B)",
            api="openai-chat",
            action_format="uitars",
            space=PIXELS,
            image=ImageRule("smart", 28, 28 * 28 * 1280),
            served="vLLM, HF endpoints",
            source="bytedance/UI-TARS README_coordinates.md, codes/ui_tars/prompt.py",
            patterns=(r"ui-?tars-?1\.5", r"ui-?tars-?1_5"),
            temperature=0.0,
        ),
        Profile(
            # GLM-4.5V README (zai-org/GLM-V): GUI answers wrap coordinates in
            # <|begin_of_box|>...<|end_of_box|>, relative on a 0..999 grid (x/1000*w).
            name="glm-4.5v",
            title="GLM-4.5V / GLM-4.1V-Thinking",
            api="openai-chat",
            action_format="glm",
            space=REL_1000,
            image=ImageRule("fit"),
            served="vLLM (glm45 reasoning parser), Z.ai API",
            source="zai-org/GLM-V README (GUI agent prompts, box tokens)",
            patterns=(r"glm-?4\.[15]v",),
            temperature=0.0,
        ),
        Profile(
            # OpenCUA README (xlang-ai/OpenCUA): OpenCUA-7B/32B (Qwen2.5-VL based) answer
            # pyautogui code with absolute coordinates of the smart-resized image.
            name="opencua",
            title="OpenCUA-7B / OpenCUA-32B",
            api="openai-chat",
            action_format="pyautogui",
            space=PIXELS,
            image=ImageRule("smart", 28, 28 * 28 * 1280),
            served="vLLM",
            source="xlang-ai/OpenCUA README (pyautogui actions, smart_resize coordinates)",
            patterns=(r"opencua",),
        ),
        Profile(
            name="generic",
            title="Any OpenAI-compatible vision model",
            api="openai-chat",
            action_format="tools",
            space=PIXELS,
            image=ImageRule("fit"),
            served="any OpenAI-compatible endpoint",
            source="Jarvis's own convention: pixels of the screenshot as sent",
            patterns=(r"^gpt-", r"^o\d", r"gemini", r"llava", r"pixtral"),
        ),
    )
}

# most specific first: a Qwen2.5 pattern wins over a later, looser one
_ORDER = (
    "ui-tars-1.5",
    "opencua",
    "qwen2.5-vl",
    "qwen3-vl",
    "glm-4.5v",
    "openai-computer",
    "claude",
    "generic",
)


@dataclass(frozen=True)
class Choice:
    profile: Profile
    reason: str
    warning: str | None = None


class UnknownProfile(ValueError):
    """``model_profile`` names no shipped profile."""


def profile_by_name(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(PROFILES)
        raise UnknownProfile(f"unknown model profile {name!r}; known: {known}") from None


def choose_profile(model: str, setting: str | None = None) -> Choice:
    """The profile for ``model``: the setting, else the first matching pattern, else generic."""
    if setting:
        return Choice(profile_by_name(setting), "set by model_profile")
    lowered = model.lower()
    for name in _ORDER:
        for pattern in PROFILES[name].patterns:
            if re.search(pattern, lowered):
                return Choice(PROFILES[name], f"model name {model!r} matches /{pattern}/")
    warning = (
        f"no profile matches the model {model!r}; using the generic profile (coordinates in "
        "screenshot pixels). Set model_profile if the model uses another convention."
    )
    return Choice(PROFILES["generic"], "no pattern matched", warning)
