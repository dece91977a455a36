"""`jarvis calibrate`: which coordinate convention a model's answers fit.

The model is shown one picture of the screen's size with five numbered, coloured circles
at known places, sent exactly as a task's screenshot would be (the profile's image size,
prompt and action format), and asked to click each one in turn. Each answer is taken back
to the number the model wrote (the inverse of the profile's mapping onto the tool grid),
then read under every convention Jarvis knows: pixels of the image sent, relative
0..1000, 0..999 and 0..1, and pixels of the full screen (a model that ignores the resize).
Answers keep their fractions (a 0..1 answer is never truncated to 0); a reading outside
the picture is no fit.
The convention whose reading lands nearest the circles (median distance, in screen
pixels) is the one the model uses; it fits when that is inside the circles' radius.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageDraw, ImageFont

from jarvis.desktop.screen import encode_image, resize_image
from jarvis.geometry import (
    PIXELS,
    REL_999,
    REL_1000,
    REL_GRID,
    REL_UNIT,
    SUBPIXELS,
    CoordSpace,
    OffScreen,
    Size,
    to_screen,
)
from jarvis.llm.base import complete
from jarvis.llm.profiles.catalog import Profile, build_catalog
from jarvis.llm.profiles.select import active_profile, geometry, profiles_of, system_prompt
from jarvis.llm.profiles.settings import MAPPED_FORMATS
from jarvis.llm.types import ImagePart, LLMRequest, Message, TextPart, ToolSpec

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.llm.base import Provider

POINT_TOOLS = ("click", "double_click", "right_click", "mouse_move")


@dataclass(frozen=True)
class Target:
    label: str
    colour: str
    rgb: tuple[int, int, int]
    fx: float
    fy: float
    """Where its centre is, as a fraction of the screen's width and height."""

    def centre(self, screen: Size) -> tuple[int, int]:
        return round(self.fx * (screen.width - 1)), round(self.fy * (screen.height - 1))


TARGETS = (
    Target("1", "red", (220, 30, 30), 0.12, 0.18),
    Target("2", "blue", (30, 70, 220), 0.84, 0.23),
    Target("3", "green", (20, 160, 60), 0.47, 0.53),
    Target("4", "orange", (245, 140, 0), 0.23, 0.81),
    Target("5", "purple", (140, 40, 180), 0.91, 0.87),
)


@dataclass(frozen=True)
class Convention:
    name: str
    space: CoordSpace
    of_screen: bool = False
    """The numbers are pixels of the full screen, not of the image sent."""

    coordinates: str = "pixels"
    """The profile field value for this convention."""

    def read(self, raw: tuple[float, float], image: Size, screen: Size) -> tuple[int, int] | None:
        """The screen pixel the answer means under this convention (None: off the picture)."""
        try:
            return to_screen(list(raw), self.space, screen if self.of_screen else image, screen)
        except OffScreen:
            return None


CONVENTIONS = (
    Convention("pixels of the image sent", PIXELS),
    Convention("relative 0..1000", REL_1000, coordinates="0..1000"),
    Convention("relative 0..999", REL_999, coordinates="0..999"),
    Convention("relative 0..1", REL_UNIT, coordinates="0..1"),
    Convention("pixels of the full screen", PIXELS, of_screen=True),
)


def picture(screen: Size) -> Image.Image:
    """The calibration picture at the screen's size; the radius is :func:`radius`."""
    image = Image.new("RGB", (screen.width, screen.height), (246, 246, 242))
    draw = ImageDraw.Draw(image)
    r = radius(screen)
    font = ImageFont.load_default(size=max(12, round(r * 1.2)))
    for t in TARGETS:
        x, y = t.centre(screen)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=t.rgb)
        draw.text((x, y), t.label, fill=(255, 255, 255), font=font, anchor="mm")
    return image


def radius(screen: Size) -> int:
    return max(8, round(min(screen.width, screen.height) * 0.03))


def raw_answer(point: tuple[float, float], space: CoordSpace, grid: Size) -> tuple[float, float]:
    """The number the model wrote, from the point the profile mapped it to on the tool grid
    (pixels are exact; a relative value to within half a grid cell)."""
    if space.kind == "pixel" and space.plain:
        return point[0] / SUBPIXELS, point[1] / SUBPIXELS
    if space.kind == "pixel":
        return float(point[0]), float(point[1])  # fractions kept: 0.12 stays 0.12
    d = space.denominator
    return (point[0] + 0.5) * d / REL_GRID, (point[1] + 0.5) * d / REL_GRID


def _point(arguments: dict[str, Any]) -> tuple[float, float] | None:
    """The click's point as written (fractions kept), or None when it has none."""
    try:
        x, y = arguments["x"], arguments["y"]
        if isinstance(x, bool) or isinstance(y, bool):
            return None
        fx, fy = float(x), float(y)
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    return (fx, fy) if math.isfinite(fx) and math.isfinite(fy) else None


@dataclass
class Report:
    profile: Profile
    model: str
    catalog: dict[str, Profile]
    screen: Size
    image: Size
    radius: int
    answers: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    """Per target label: the raw answer, or None when the model gave no point."""
    errors: dict[str, float] = field(default_factory=dict)
    """Per convention: the median distance (screen px) of its reading from the targets."""

    @property
    def best(self) -> str | None:
        return min(self.errors, key=self.errors.__getitem__) if self.errors else None

    @property
    def fitting(self) -> list[str]:
        return [name for name, error in self.errors.items() if error <= self.radius]

    @property
    def declared(self) -> str:
        space = self.profile.space
        for c in CONVENTIONS:
            if not c.of_screen and same_scale(c.space, space):
                return c.name
        return space.describe()

    @property
    def fits(self) -> bool:
        return self.declared in self.fitting

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile.name,
            "declared": self.declared,
            "screen": str(self.screen),
            "image": str(self.image),
            "radius_px": self.radius,
            "answers": {k: list(v) if v else None for k, v in self.answers.items()},
            "median_error_px": {k: round(v, 1) for k, v in self.errors.items()},
            "best": self.best,
            "fitting": self.fitting,
            "fits": self.fits,
            "suggestion": None if self.fits else suggestion(self),
        }

    def lines(self) -> list[str]:
        got = sum(v is not None for v in self.answers.values())
        out = [
            f"profile {self.profile.name}: declares {self.declared}",
            f"screen {self.screen}, image sent {self.image}, {got} of {len(TARGETS)} answers "
            f"with a point; circles of radius {self.radius} px",
        ]
        for name, error in sorted(self.errors.items(), key=lambda kv: kv[1]):
            mark = "fits" if error <= self.radius else "    "
            out.append(f"  {mark}  {name:<28} median {error:7.1f} px from the targets")
        if not self.errors:
            out.append("no answer had a point: the model did not click (see the log)")
        elif self.fits:
            out.append(f"OK: the answers fit the profile's convention ({self.declared})")
        else:
            fit = ", ".join(self.fitting) or f"no convention (nearest: {self.best})"
            out.append(f"MISMATCH: the answers fit {fit}, not {self.declared}. {suggest(self)}")
        return out


def same_scale(a: CoordSpace, b: CoordSpace) -> bool:
    """Whether two spaces read numbers alike (a box or a point does not matter here)."""
    return (a.kind, a.denominator) == (b.kind, b.denominator)


def suggestion(report: Report) -> dict[str, Any] | None:
    """What to set for the convention the answers fit: ``model_profile`` (profiles with
    it) and a ``model_profiles`` entry to paste (checked to load), or None when no
    convention fits."""
    best = next((c for c in CONVENTIONS if c.name == report.best), None)
    if best is None or best.of_screen or report.best not in report.fitting:
        return None
    same = [p.name for p in report.catalog.values() if same_scale(p.space, best.space)]
    base = report.profile
    if best.coordinates != "pixels" and base.action_format not in MAPPED_FORMATS:
        base = report.catalog["qwen3-vl"]  # Jarvis maps its computer_use calls' points
    name = re.sub(r"[^a-z0-9.-]+", "-", report.model.lower()).strip("-") or "my-model"
    entry = {
        "extends": base.name,
        "patterns": [f"^{re.escape(report.model.lower())}$"],
        "coordinates": best.coordinates,
    }
    build_catalog({name: entry})  # a suggestion that would be refused is a bug here
    return {"model_profile": same, "model_profiles": {name: entry}}


def suggest(report: Report) -> str:
    """The suggestion in words, with the entry to paste into settings.json."""
    found = suggestion(report)
    if found is None:
        return "Check how the server resizes images and the model card's convention."
    named = ", ".join(found["model_profile"])
    entry = json.dumps({"model_profiles": found["model_profiles"]})
    lead = (
        f"Set model_profile to one with that convention ({named}), or paste"
        if named
        else ("No profile ships with it; paste")
    )
    return f"{lead} into settings.json: {entry}"


async def calibrate(
    settings: Settings, provider: Provider, tools: list[ToolSpec], screen: Size
) -> Report:
    """Ask the model for each target and read its answers under every convention."""
    profile = active_profile(settings).profile
    grid, image = geometry(profile, screen, settings)
    known = profiles_of(settings)
    sent = resize_image(picture(screen), image)  # as a task's screenshot is resized
    part = ImagePart.from_bytes(encode_image(sent, "png"), "image/png")
    report = Report(profile, settings.active_model, known, screen, image, radius(screen))
    offered = [t for t in tools if t.name in (*POINT_TOOLS, "finished", "call_user")]
    system = system_prompt(profile, image, grid)
    for t in TARGETS:
        ask = (
            f"The screenshot shows five numbered coloured circles. Click the centre of the "
            f"{t.colour} circle labelled {t.label}: one click action, nothing else."
        )
        request = LLMRequest(
            system=system,
            messages=[Message(role="user", content=[part, TextPart(text=ask)])],
            tools=offered,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            tool_mode=settings.tool_mode,
        )
        response = await complete(provider, request)
        clicks = [c for c in response.tool_calls if c.name in POINT_TOOLS and not c.parse_error]
        point = _point(clicks[0].arguments) if clicks else None
        report.answers[t.label] = None if point is None else raw_answer(point, profile.space, grid)
    points = {k: v for k, v in report.answers.items() if v is not None}
    if points:
        for c in CONVENTIONS:
            distances = [
                math.inf
                if (at := c.read(raw, image, screen)) is None
                else math.dist(at, t.centre(screen))
                for t in TARGETS
                if (raw := points.get(t.label)) is not None
            ]
            report.errors[c.name] = statistics.median(distances)
    return report
