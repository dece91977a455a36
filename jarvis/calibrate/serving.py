"""`jarvis calibrate --serving`: does the user's server give Jarvis a click it can run?

One fixed screenshot (a generated picture with one red circle labelled OK at a known
place) goes through the real request path (the configured base URL, model and profile,
as a task's screenshot goes) with one question: click the circle. The answer is read as a
task reads it (for served profiles: native calls, calls written as text, a call only in
the reasoning), mapped to the screen, and compared with the circle's centre. One line says
whether it parsed and landed, the server and its version, and every server quirk met on
the way (:data:`QUIRKS`). When the server's parser gave the call (natively, or
left it in the reasoning), the same request is sent once more with ``tool_choice:
"required"``, which Jarvis never sends, to say whether the server answers it with no
calls (vLLM's Qwen XML parsers do).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PIL import Image, ImageDraw, ImageFont

from jarvis.calibrate.calibrate import POINT_TOOLS, Convention, _point, raw_answer
from jarvis.desktop.screen import encode_image, resize_image
from jarvis.events import Event, EventBus, ServedCallsRead, ToolModeFallback
from jarvis.geometry import Size
from jarvis.llm.base import AdapterBase, ProviderError, complete
from jarvis.llm.openai import OpenAIProvider
from jarvis.llm.profiles.adapter import ProfileProvider
from jarvis.llm.profiles.select import active_profile, geometry, system_prompt
from jarvis.llm.server_id import ServerInfo
from jarvis.llm.types import ImagePart, LLMRequest, LLMResponse, Message, TextPart, ToolSpec

if TYPE_CHECKING:
    from jarvis.config import Settings

SCREEN = Size(1280, 800)
TARGET = (0.62, 0.41)
"""Where the circle's centre is, as a fraction of the screen's width and height."""
RADIUS = 24
ASK = "Click the centre of the red circle labelled OK: one click action, nothing else."
EXIT_LANDED, EXIT_MISSED, EXIT_UNANSWERED = 0, 1, 2

QUIRKS = {
    "reasoning": "call found only inside reasoning",
    "required": "tool calls came back empty with tool_choice=required (Jarvis never sends it)",
    "text": "the server gave no tool_calls: read from text",
    "template": "server has no tool template: read from text",
    "jinja": "llama.cpp without --jinja: read from text",
    "auto": "vLLM without --enable-auto-tool-choice --tool-call-parser: read from text",
    "eaten": "SGLang's tool parser ({parser}) dropped the call: start it without "
    "--tool-call-parser and Jarvis reads the call from text",
    "image": "image not accepted",
}
IMAGE_HINTS = {
    "llama.cpp": "start llama-server with --mmproj (and --chat-template-file when the "
    "model's template drops images)",
    "vLLM": "start vLLM with --limit-mm-per-prompt '{\"image\": 1}' and a vision model",
    "SGLang": "serve a vision model (SGLang takes images only for multimodal models)",
    "Ollama": "pull a vision model (ollama show MODEL lists 'vision' under capabilities)",
}
_IMAGE_ERROR = re.compile(r"image|multimodal|multi-modal|vision|mmproj|mm_per_prompt", re.I)


def target_centre(screen: Size = SCREEN) -> tuple[int, int]:
    return round(TARGET[0] * (screen.width - 1)), round(TARGET[1] * (screen.height - 1))


def serving_picture(screen: Size = SCREEN) -> Image.Image:
    """A plain desktop-like picture with one red circle labelled OK at :data:`TARGET`."""
    image = Image.new("RGB", (screen.width, screen.height), (236, 238, 241))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, screen.width, 36), fill=(52, 58, 70))
    x, y = target_centre(screen)
    draw.ellipse((x - RADIUS, y - RADIUS, x + RADIUS, y + RADIUS), fill=(220, 30, 30))
    font = ImageFont.load_default(size=20)
    draw.text((x, y), "OK", fill=(255, 255, 255), font=font, anchor="mm")
    return image


@dataclass
class Outcome:
    """What happened to the one question (see :meth:`line`)."""

    server: ServerInfo = field(default_factory=ServerInfo)
    model: str = ""
    profile: str = ""
    parsed: bool = False
    distance: float | None = None
    error: str = ""
    empty: bool = False
    quirks: list[str] = field(default_factory=list)

    @property
    def landed(self) -> bool:
        return self.distance is not None and self.distance <= RADIUS

    @property
    def exit_code(self) -> int:
        if self.landed:
            return EXIT_LANDED
        return EXIT_UNANSWERED if self.error else EXIT_MISSED

    def to_json(self) -> dict[str, object]:
        return {
            "server": self.server.name,
            "version": self.server.version,
            "model": self.model,
            "profile": self.profile,
            "parsed": self.parsed,
            "landed": self.landed,
            "distance_px": None if self.distance is None else round(self.distance, 1),
            "tolerance_px": RADIUS,
            "error": self.error or None,
            "quirks": self.quirks,
            "line": self.line(),
        }

    def line(self) -> str:
        head = f"{self.server}, model {self.model} (profile {self.profile})"
        if self.error:
            result = f"not answered: {self.error}"
        elif not self.parsed:
            result = "not parsed: " + ("the answer was empty" if self.empty else "no click in it")
        elif self.distance is None:
            result = "parsed, but the click is off the screen"
        else:
            verb = "landed" if self.landed else "missed"
            result = (
                f"parsed and {verb}, {self.distance:.0f} px from the target (tolerance {RADIUS})"
            )
        quirks = f"; quirks: {'; '.join(self.quirks)}" if self.quirks else "; no quirks"
        return f"serving: {head}: {result}{quirks}"


Served = AdapterBase | ProfileProvider


def _inner(provider: Served) -> OpenAIProvider | None:
    inner = provider.inner if isinstance(provider, ProfileProvider) else provider
    return inner if isinstance(inner, OpenAIProvider) else None


def _request(settings: Settings, tools: list[ToolSpec]) -> tuple[LLMRequest, Size, Size]:
    profile = active_profile(settings).profile
    grid, image = geometry(profile, SCREEN, settings)
    sent = resize_image(serving_picture(SCREEN), image)  # as a task's screenshot
    part = ImagePart.from_bytes(encode_image(sent, "png"), "image/png")
    offered = [t for t in tools if t.name in (*POINT_TOOLS, "finished", "call_user")]
    request = LLMRequest(
        system=system_prompt(profile, image, grid),
        messages=[Message(role="user", content=[part, TextPart(text=ASK)])],
        tools=offered,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        tool_mode=settings.tool_mode,
    )
    return request, grid, image


def _fallback_quirk(reason: str) -> str:
    if "--jinja" in reason:
        return QUIRKS["jinja"]
    if "--enable-auto-tool-choice" in reason or "--tool-call-parser" in reason:
        return QUIRKS["auto"]
    return QUIRKS["template"]


def _error_text(exc: ProviderError, server: ServerInfo) -> tuple[str, str | None]:
    """The verdict's error and its quirk (an image the server would not take)."""
    if _IMAGE_ERROR.search(exc.message):
        hint = IMAGE_HINTS.get(server.name, "serve a vision model")
        return f"{exc.message} ({hint})", QUIRKS["image"]
    return exc.message, None


def _landing(
    settings: Settings, response: LLMResponse, grid: Size, image: Size
) -> tuple[bool, float | None]:
    profile = active_profile(settings).profile
    clicks = [c for c in response.tool_calls if c.name in POINT_TOOLS and not c.parse_error]
    point = _point(clicks[0].arguments) if clicks else None
    if point is None:
        return False, None
    raw = raw_answer(point, profile.space, grid)
    at = Convention("profile", profile.space).read(raw, image, SCREEN)
    return True, (None if at is None else math.dist(at, target_centre()))


async def _required_ignored(
    settings: Settings, provider: Served, inner: OpenAIProvider, request: LLMRequest
) -> bool:
    """Whether the server answers the same request with no calls under tool_choice=required."""
    wire = provider.wire_request(request) if isinstance(provider, ProfileProvider) else request
    if not wire.tools:
        return False
    probe = OpenAIProvider(
        inner.model,
        tool_choice="required",
        api_key=inner.api_key,
        base_url=inner.base_url,
        timeout_s=settings.request_timeout_s,
        text_tool_calls="report",
    )
    try:
        response = await complete(probe, wire.model_copy(update={"tool_mode": "native"}))
    except ProviderError:
        return False
    finally:
        await probe.aclose()
    return not [c for c in response.tool_calls if not c.parse_error]


async def check_serving(
    settings: Settings, provider: Served, bus: EventBus, tools: list[ToolSpec]
) -> Outcome:
    """Ask for the one click through ``provider`` (built with ``bus``) and judge it."""
    inner = _inner(provider)
    if inner is None:
        raise ValueError("--serving checks an OpenAI-compatible server: set provider to openai")
    seen: list[Event] = []
    unsubscribe = bus.subscribe(seen.append)
    request, grid, image = _request(settings, tools)
    profile = active_profile(settings).profile
    outcome = Outcome(model=inner.model, profile=profile.name)
    try:
        response: LLMResponse | None = await complete(provider, request)
    except ProviderError as exc:
        response = None
        outcome.server = await inner.identify()
        outcome.error, quirk = _error_text(exc, outcome.server)
        outcome.quirks += [quirk] if quirk else []
    finally:
        unsubscribe()
    outcome.server = await inner.identify()
    for event in seen:
        if isinstance(event, ToolModeFallback):
            outcome.quirks.append(_fallback_quirk(event.reason))
        elif isinstance(event, ServedCallsRead) and not any(
            isinstance(e, ToolModeFallback) for e in seen
        ):
            outcome.quirks.append(QUIRKS[event.where])
    if response is None:
        return outcome
    outcome.parsed, outcome.distance = _landing(settings, response, grid, image)
    outcome.empty = not response.text.strip() and not response.tool_calls
    parser = outcome.server.details.get("tool_call_parser")
    if outcome.empty and outcome.server.name == "SGLang" and parser:
        outcome.quirks.append(QUIRKS["eaten"].format(parser=parser))
    from_text = any(isinstance(e, ServedCallsRead) and e.where == "text" for e in seen)
    required = outcome.parsed and not inner.text_fallback and not from_text
    if required and await _required_ignored(settings, provider, inner, request):
        outcome.quirks.append(QUIRKS["required"])
    return outcome
