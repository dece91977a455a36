"""The model profiles the providers use, built from the checked entries of
:mod:`jarvis.llm.profiles.settings` (the shipped file plus the ``model_profiles`` setting).

A profile says how Jarvis talks to a model: which API (``api``), in which action format
(``action_format``: Jarvis's own tools, a vendor's computer tool, or a named text
grammar parsed by :mod:`jarvis.llm.profiles.grammars`), in which coordinate space
(``coordinates``), at which image size (``image``), with which prompt, and its history and
sampling defaults.

Choosing (:func:`choose_profile`): the ``model_profile`` setting first, then the
model-name patterns (the user's profiles first, then the shipped file's order, most
specific first), then ``generic`` with a warning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from jarvis.geometry import CoordSpace, Size, anthropic_size, fit_size, smart_size
from jarvis.llm.profiles.settings import (
    SERVED_FORMATS,
    TOOL_CALLING,
    ActionFormat,
    Api,
    ProfileSpec,
    build_specs,
    by_name,
    match,
    read_prompt,
)


@dataclass(frozen=True)
class ImageRule:
    """How big the screenshot is (see :class:`ImageSpec`)."""

    kind: Literal["fit", "anthropic", "smart"] = "fit"
    factor: int = 28
    max_pixels: int = 28 * 28 * 1280
    min_pixels: int = 56 * 56
    max_side: int | None = None

    def size(self, screen: Size, max_side: int, computer_tool: bool = True) -> Size:
        if self.kind == "smart":
            return smart_size(screen, self.factor, self.max_pixels, self.min_pixels)
        if self.kind == "anthropic" and computer_tool:
            return anthropic_size(screen)
        return fit_size(screen, self.max_side or max_side)


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
    resend_scale: float = 0.5
    """The screenshots kept across a drop are sent again (and cached again) at this scale."""
    temperature: float | None = None
    coordinates: str = "pixels"
    prompt: str | None = None
    """The text of ``prompt_file``: the action-space prompt in place of the format's own."""
    text_tool_calls: Literal["run", "report"] = "report"
    """A tool call written as text in a native-mode reply: run it, or report it as an error."""
    tree: bool = True
    """Whether the model gets the accessibility tree when the ``observation`` setting asks."""
    served_calls: bool = False
    """Calls are read from the reply itself and the server is named (see ``ProfileSpec``)."""
    spec: dict[str, Any] = field(default_factory=dict, compare=False)

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


def coord_space(spec: ProfileSpec) -> CoordSpace:
    """The profile's coordinate space. Pixels of a model's own resized image (the ``smart``
    image rule, or ``resized-pixels``) map back by plain scaling ``x * W / w``, as those
    models' own code does (ByteDance UI-TARS README_coordinates.md and
    codes/ui_tars/action_parser.py; OpenCUA's ``_coordinate_projection``, which OSWorld's
    OpenCUA agent runs; the Holo1.5, GTA1 and Jedi sources named in profiles.json: "rescaled
    by width/resized_width"); pixels of the image as sent keep the pixel-centre mapping."""
    plain = spec.image.rule == "smart"
    if spec.coordinates == "pixels":
        return CoordSpace("pixel", box=spec.box, plain=plain)
    if spec.coordinates == "resized-pixels":
        img = spec.image
        return CoordSpace(
            "pixel",
            box=spec.box,
            resize=(img.factor, img.min_pixels, img.max_pixels),
            plain=plain,
        )
    return CoordSpace("relative", float(spec.coordinates.split("..")[1]), box=spec.box)


def _profile(spec: ProfileSpec, base_dir: Path | None) -> Profile:
    img = spec.image
    kind: Literal["fit", "anthropic", "smart"] = "anthropic" if img.rule == "vendor" else img.rule
    prompt = read_prompt(spec, base_dir)
    tree = spec.action_format in TOOL_CALLING if spec.tree is None else spec.tree
    served = (
        spec.action_format in SERVED_FORMATS if spec.served_calls is None else spec.served_calls
    )
    return Profile(
        name=spec.name,
        title=spec.title or spec.name,
        api=spec.api,
        action_format=spec.action_format,
        space=coord_space(spec),
        image=ImageRule(kind, img.factor, img.max_pixels, img.min_pixels, img.max_side),
        served=spec.served,
        source=spec.source,
        patterns=tuple(spec.patterns),
        resolution_prompt=spec.resolution_prompt,
        chunk=spec.history.chunk,
        resend_scale=spec.history.resend_scale,
        temperature=spec.sampling.temperature,
        coordinates=spec.coordinates,
        prompt=prompt,
        text_tool_calls=spec.text_tool_calls,
        tree=tree,
        served_calls=served and spec.api == "openai-chat",
        spec={**spec.model_dump(exclude_defaults=False), "tree": tree, "served_calls": served},
    )


def build_catalog(
    overrides: dict[str, dict[str, Any]] | None = None, base_dir: Path | None = None
) -> dict[str, Profile]:
    """All profiles, in matching order: the user's new ones, then the shipped file's.

    Raises ValueError with one line naming the profile and the field that is wrong.
    """
    specs = build_specs(overrides, base_dir)
    return {name: _profile(spec, base_dir) for name, spec in specs.items()}


@lru_cache(maxsize=16)
def _cached(key: str, base_dir: str) -> dict[str, Profile]:
    return build_catalog(json.loads(key), Path(base_dir) if base_dir else None)


def catalog(
    overrides: dict[str, dict[str, Any]] | None = None, base_dir: Path | None = None
) -> dict[str, Profile]:
    """:func:`build_catalog`, cached per settings value."""
    key = json.dumps(overrides or {}, sort_keys=True)
    return _cached(key, str(base_dir) if base_dir else "")


PROFILES: dict[str, Profile] = build_catalog()
"""The shipped profiles (no user entries)."""


@dataclass(frozen=True)
class Choice:
    profile: Profile
    reason: str
    warning: str | None = None


def profile_by_name(name: str, profiles: dict[str, Profile] | None = None) -> Profile:
    return by_name(name, PROFILES if profiles is None else profiles)


def choose_profile(
    model: str, setting: str | None = None, profiles: dict[str, Profile] | None = None
) -> Choice:
    """The profile for ``model``: the setting, else the first matching pattern, else generic."""
    profile, reason, warning = match(model, setting, PROFILES if profiles is None else profiles)
    return Choice(profile, reason, warning)
