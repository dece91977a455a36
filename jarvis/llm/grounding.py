"""A grounding model: the planner names an element in words, this model finds its point.

Agent S and UI-TARS-desktop split the work the same way: a planner that reasons well but
points badly says *what* to click ("the OK button of the dialog"), and a grounding model
(GTA1, UGround, Holo, Jedi, OS-Atlas, ShowUI, ...) says *where*, on a screenshot of its
own size. The request is the grounding profile's own prompt (``grounding`` in
``profiles.json``), the image at the profile's size, and nothing else; the answer is read
with the profile's grammar (or as a bare point, see :mod:`jarvis.llm.profiles.points`)
and goes through :func:`jarvis.geometry.place` and the screen mapping, the one conversion
every profile uses, with the one edge rule (a point just off the screen lands on its edge
and ``click_target``'s result says so; further off is :class:`jarvis.geometry.OffScreen`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarvis.geometry import Size, model_to_screen, tool_grid
from jarvis.llm.base import AdapterBase, Connection, Provider, complete
from jarvis.llm.placer import Placer
from jarvis.llm.profiles.catalog import Profile
from jarvis.llm.profiles.grammars import TEXT_GRAMMARS, clean_reply
from jarvis.llm.profiles.points import point_numbers
from jarvis.llm.types import ImagePart, LLMRequest, Message, TextPart

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.events import EventBus

POINT_TOOLS = ("click", "double_click", "right_click", "mouse_move")


class GroundingError(ValueError):
    """The grounding model gave no usable point (the message says why, in one line)."""


def grounding_request(
    profile: Profile, target: str, image: bytes, media_type: str, size: Size, max_tokens: int
) -> LLMRequest:
    """The request the grounding model gets: its own prompt, the screenshot, no tools."""
    spec = profile.spec.get("grounding")
    if not spec:
        raise GroundingError(
            f"profile {profile.name!r} has no grounding prompt; give it a 'grounding' "
            "block in model_profiles or use a grounding profile"
        )
    values = {"target": target, "width": size.width, "height": size.height}
    system = str(spec.get("system") or "").format(**values)
    prompt = str(spec["prompt"]).format(**values)
    message = Message(
        role="user",
        content=[ImagePart.from_bytes(image, media_type), TextPart(text=prompt)],
    )
    return LLMRequest(
        system=system,
        messages=[message],
        max_tokens=max_tokens,
        temperature=profile.temperature,
        tool_mode="native",
        cache=False,
    )


def read_point(
    profile: Profile, text: str, image: Size, placer: Placer | None = None
) -> tuple[int, int]:
    """The answer ``text`` as a point on the profile's tool grid for ``image``.

    Raises :class:`jarvis.geometry.OffScreen` for a point further outside the picture than
    the edge rule allows and :class:`GroundingError` when the answer holds no point;
    ``placer`` keeps the note of a point moved onto the edge.
    """
    point = placer or Placer(profile.space, image)

    grammar = TEXT_GRAMMARS.get(profile.action_format)
    if grammar is not None and profile.action_format != "point":
        for call in grammar(text, point):
            if call.name in POINT_TOOLS and call.parse_error is None:
                return int(call.arguments["x"]), int(call.arguments["y"])
    values = point_numbers(clean_reply(text))
    if values is None:
        shown = " ".join(text.split())[:160]
        raise GroundingError(f"the grounding model answered no point: {shown!r}")
    return point(values)


@dataclass
class Located:
    screen: tuple[int, int]
    """The absolute logical screen pixel."""
    answer: str
    image: Size
    note: str = ""
    """Set when the answer was just off the screen and moved onto its edge (the edge rule)."""


class Grounder:
    """Asks ``provider`` (speaking ``profile``) where a described element is."""

    def __init__(self, provider: Provider, profile: Profile, max_tokens: int = 512) -> None:
        self.provider = provider
        self.profile = profile
        self.max_tokens = max_tokens

    def image_size(self, screen: Size, max_side: int) -> Size:
        """The size of the screenshot the grounding model gets for a ``screen``."""
        return self.profile.image.size(screen, max_side, computer_tool=False)

    async def locate(
        self,
        target: str,
        image: bytes,
        media_type: str,
        size: Size,
        screen: Size,
        origin: tuple[int, int] = (0, 0),
    ) -> Located:
        """The screen pixel of ``target`` on a screenshot of ``size`` showing ``screen``."""
        request = grounding_request(self.profile, target, image, media_type, size, self.max_tokens)
        response = await complete(self.provider, request)
        # a serving stack with a tool parser (vLLM's hermes, for Jedi) hands the call back
        # as a native one: its arguments are the answer then
        text = " ".join(
            [response.text, *(json.dumps(c.arguments) for c in response.tool_calls)]
        ).strip()
        placer = Placer(self.profile.space, size)
        gx, gy = read_point(self.profile, text, size, placer)
        grid = tool_grid(self.profile.space, size)
        note = placer.notes.get((gx, gy), "")
        return Located(model_to_screen(gx, gy, grid, screen, origin), text, size, note)

    async def aclose(self) -> None:
        close: Any = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()


def make_grounder(settings: Settings, bus: EventBus | None = None) -> Grounder:
    """The grounder the ``grounder`` setting describes, on its own endpoint and key."""
    from jarvis.llm.anthropic import AnthropicProvider
    from jarvis.llm.openai import OpenAIProvider
    from jarvis.llm.profiles.catalog import choose_profile
    from jarvis.llm.profiles.select import profiles_of
    from jarvis.llm.retry import RetryPolicy

    block = settings.grounder
    if block is None:
        raise ValueError("no grounder is set")
    profile = choose_profile(block.model, block.profile, profiles_of(settings)).profile
    connection: Connection = {
        "api_key": os.environ.get(block.api_key_env) or "EMPTY",
        "base_url": block.base_url,
        "bus": bus,
        "retry": RetryPolicy(max_retries=settings.max_retries),
        "timeout_s": settings.request_timeout_s,
    }
    provider: AdapterBase
    if block.provider == "anthropic":
        provider = AnthropicProvider(block.model, **connection)
    else:
        provider = OpenAIProvider(block.model, **connection)
    return Grounder(provider, profile, block.max_tokens)
