"""The model profiles, as data: the shipped file plus the ``model_profiles`` setting.

A profile says how Jarvis talks to a model: which API (``api``), in which action format
(``action_format``: Jarvis's own tools, a vendor's computer tool, or a named text
grammar parsed by :mod:`jarvis.llm.profiles.grammars`), in which coordinate space
(``coordinates``), at which image size (``image``), with which prompt, and its history and
sampling defaults. The shipped profiles are ``profiles.json`` beside this module; each
entry of the ``model_profiles`` setting (same fields, keyed by name) overrides the shipped
profile of that name field by field, or adds a new one, optionally ``extends`` another.

Every entry is checked by :class:`ProfileSpec` when the settings load; a profile that
cannot be right (an unknown format or space, a relative space with a format that sends
pixels, a vendor tool on the wrong API) is refused with one line naming the field.

Choosing (:func:`choose_profile`): the ``model_profile`` setting first, then the
model-name patterns (the user's profiles first, then the shipped file's order, most
specific first), then ``generic`` with a warning.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from jarvis.geometry import CoordSpace, Size, anthropic_size, fit_size, smart_size

Api = Literal["anthropic", "openai-chat", "openai-responses", "gemini"]
ActionFormat = Literal[
    "tools",
    "claude-computer",
    "openai-computer",
    "gemini-computer",
    "qwen-computer-use",
    "uitars",
    "glm",
    "pyautogui",
    "point",
]
Coordinates = Literal["pixels", "resized-pixels", "0..1000", "0..999", "0..1"]
MAPPED_FORMATS = frozenset(
    {"qwen-computer-use", "uitars", "glm", "pyautogui", "gemini-computer", "point"}
)
"""Formats whose points Jarvis maps itself, so any coordinate space works with them; the
others (Jarvis's tools, Claude's and OpenAI's computer tools) carry pixels of the
screenshot. Gemini's computer use answers on a normalised grid that Jarvis maps."""
VENDOR_API = {
    "claude-computer": "anthropic",
    "openai-computer": "openai-responses",
    "gemini-computer": "gemini",
}
TOOL_CALLING = frozenset({"tools", "claude-computer", "openai-computer", "gemini-computer"})
"""Formats whose requests carry Jarvis's own tools (``click_element`` among them): by
default their models get the accessibility tree when the ``observation`` setting asks."""
SHIPPED = "profiles.json"


class ImageSpec(BaseModel):
    """``fit``: longest side at most ``max_side`` (default: the ``max_side`` setting);
    ``vendor``: the vendor's recommended sizes (``anthropic``: XGA/WXGA/FWXGA by aspect);
    ``smart``: a size the model's own ``smart_resize`` (``factor``, ``min_pixels``,
    ``max_pixels``: set them to the serving stack's limits) leaves unchanged."""

    model_config = ConfigDict(extra="forbid")
    rule: Literal["fit", "vendor", "smart"] = "fit"
    max_side: int | None = Field(None, ge=64)
    vendor: Literal["anthropic"] | None = None
    factor: int = Field(28, ge=1)
    min_pixels: int = Field(56 * 56, ge=1)
    max_pixels: int = Field(28 * 28 * 1280, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> ImageSpec:
        if self.rule == "vendor" and self.vendor is None:
            raise ValueError("rule 'vendor' needs vendor: 'anthropic'")
        if self.min_pixels > self.max_pixels:
            raise ValueError("min_pixels is larger than max_pixels")
        if self.rule == "smart" and self.max_pixels < self.factor * self.factor:
            raise ValueError("max_pixels is smaller than one factor x factor patch")
        return self


class GroundingSpec(BaseModel):
    """How to ask the model for one point (the ``grounder`` setting): its own prompt, with
    ``{target}`` (the planner's words) and ``{width}``/``{height}`` (the image sent)."""

    model_config = ConfigDict(extra="forbid")
    system: str = ""
    prompt: str = Field(min_length=1)

    @model_validator(mode="after")
    def _names_the_target(self) -> GroundingSpec:
        if "{target}" not in self.prompt:
            raise ValueError("prompt must contain {target} (the element the planner names)")
        try:
            (self.system + self.prompt).format(target="", width=0, height=0)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"only {{target}}, {{width}}, {{height}} may be used: {exc}") from None
        return self


class HistorySpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    chunk: int = Field(5, ge=0, description="screenshots dropped at once (cache-friendly)")


class SamplingSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: float | None = Field(None, ge=0, le=2)


class ProfileSpec(BaseModel):
    """One profile as written in ``profiles.json`` or ``model_profiles``."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    title: str = ""
    patterns: list[str] = Field(default_factory=list)
    api: Api = "openai-chat"
    action_format: ActionFormat = "tools"
    coordinates: Coordinates = "pixels"
    box: bool = False
    image: ImageSpec = Field(default_factory=ImageSpec)
    resolution_prompt: str = ""
    prompt_file: str | None = None
    text_tool_calls: Literal["run", "report"] = "report"
    tree: bool | None = None
    """Whether the model gets the accessibility tree (and the element tools) when the
    ``observation`` setting asks for it; None: yes for the formats that call Jarvis's tools
    (:data:`TOOL_CALLING`), no for text grammars, which have no element action to use it."""
    grounding: GroundingSpec | None = None
    history: HistorySpec = Field(default_factory=HistorySpec)
    sampling: SamplingSpec = Field(default_factory=SamplingSpec)
    served: str = ""
    source: str = ""

    @model_validator(mode="after")
    def _can_be_right(self) -> ProfileSpec:
        for pattern in self.patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"patterns: {pattern!r} is not a regular expression: {exc}"
                ) from None
        if self.coordinates != "pixels" and self.action_format not in MAPPED_FORMATS:
            raise ValueError(
                f"coordinates: {self.coordinates!r} with action_format {self.action_format!r}, "
                "which sends pixels of the screenshot; use 'pixels' or one of "
                f"{', '.join(sorted(MAPPED_FORMATS))}"
            )
        if self.coordinates == "resized-pixels" and self.image.rule != "smart":
            raise ValueError("coordinates: 'resized-pixels' needs image rule 'smart'")
        vendor_api = VENDOR_API.get(self.action_format)
        if vendor_api and self.api != vendor_api:
            raise ValueError(
                f"api: action_format {self.action_format!r} needs api {vendor_api!r}, "
                f"not {self.api!r}"
            )
        if self.action_format == "point" and self.grounding is None:
            raise ValueError("grounding: a 'point' (grounding-only) profile needs its prompt")
        if self.image.rule == "vendor" and self.action_format != "claude-computer":
            raise ValueError("image: rule 'vendor' (Anthropic's sizes) needs claude-computer")
        return self


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
    temperature: float | None = None
    coordinates: str = "pixels"
    prompt: str | None = None
    """The text of ``prompt_file``: the action-space prompt in place of the format's own."""
    text_tool_calls: Literal["run", "report"] = "report"
    """A tool call written as text in a native-mode reply: run it, or report it as an error."""
    tree: bool = True
    """Whether the model gets the accessibility tree when the ``observation`` setting asks."""
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
    if spec.coordinates == "pixels":
        return CoordSpace("pixel", box=spec.box)
    if spec.coordinates == "resized-pixels":
        img = spec.image
        return CoordSpace(
            "pixel", box=spec.box, resize=(img.factor, img.min_pixels, img.max_pixels)
        )
    return CoordSpace("relative", float(spec.coordinates.split("..")[1]), box=spec.box)


def _profile(spec: ProfileSpec, base_dir: Path | None) -> Profile:
    img = spec.image
    kind: Literal["fit", "anthropic", "smart"] = "anthropic" if img.rule == "vendor" else img.rule
    prompt = None
    if spec.prompt_file:
        path = Path(spec.prompt_file).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            prompt = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"prompt_file: cannot read {path}: {exc.strerror}") from None
    tree = spec.action_format in TOOL_CALLING if spec.tree is None else spec.tree
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
        temperature=spec.sampling.temperature,
        coordinates=spec.coordinates,
        prompt=prompt,
        text_tool_calls=spec.text_tool_calls,
        tree=tree,
        spec={**spec.model_dump(exclude_defaults=False), "tree": tree},
    )


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _one_line(exc: ValidationError, where: str) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "literal_error":
        msg = f"{err.get('input')!r} is not one of: {msg.removeprefix('Input should be ')}"
    return f"{where}{'.' + loc if loc else ''}: {msg}"


def shipped_entries() -> list[dict[str, Any]]:
    text = resources.files(__package__).joinpath(SHIPPED).read_text(encoding="utf-8")
    return list(json.loads(text)["profiles"])


def build_catalog(
    overrides: dict[str, dict[str, Any]] | None = None, base_dir: Path | None = None
) -> dict[str, Profile]:
    """All profiles, in matching order: the user's new ones, then the shipped file's.

    Raises ValueError with one line naming the profile and the field that is wrong.
    """
    shipped = {e["name"]: e for e in shipped_entries()}
    raw: dict[str, dict[str, Any]] = {}
    for name, entry in (overrides or {}).items():
        if not isinstance(entry, dict):
            raise ValueError(f"model_profiles.{name}: must be an object of profile fields")
        entry = {**entry, "name": entry.get("name", name)}
        if entry["name"] != name:
            raise ValueError(f"model_profiles.{name}.name: differs from its key {name!r}")
        raw[name] = entry
    user_order = [n for n in raw if n not in shipped]
    resolved: dict[str, dict[str, Any]] = {}

    def resolve(name: str, seen: tuple[str, ...]) -> dict[str, Any]:
        if name in resolved:
            return resolved[name]
        if name in seen:
            raise ValueError(f"model_profiles.{name}.extends: a cycle ({' -> '.join(seen)})")
        if name not in raw:
            resolved[name] = shipped[name]
            return shipped[name]
        entry = dict(raw[name])
        parent = entry.pop("extends", None)
        if parent is None and name in shipped:
            parent = name  # an entry named like a shipped profile overrides it field by field
        if parent is not None:
            if parent not in raw and parent not in shipped:
                known = ", ".join([*shipped, *user_order])
                raise ValueError(
                    f"model_profiles.{name}.extends: no profile {parent!r}; known: {known}"
                )
            base = shipped[parent] if parent == name else resolve(parent, (*seen, name))
            base = {k: v for k, v in base.items() if k not in ("patterns",) or parent == name}
            entry = _merge(base, entry)
        resolved[name] = entry
        return entry

    profiles: dict[str, Profile] = {}
    for name in [*user_order, *shipped]:
        where = f"model_profiles.{name}" if name in raw else f"{SHIPPED}: {name}"
        try:
            spec = ProfileSpec.model_validate(resolve(name, ()))
        except ValidationError as exc:
            raise ValueError(_one_line(exc, where)) from None
        try:
            profiles[name] = _profile(spec, base_dir)
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from None
    return profiles


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


class UnknownProfile(ValueError):
    """``model_profile`` names no profile."""


def profile_by_name(name: str, profiles: dict[str, Profile] | None = None) -> Profile:
    known_profiles = PROFILES if profiles is None else profiles
    try:
        return known_profiles[name]
    except KeyError:
        known = ", ".join(known_profiles)
        raise UnknownProfile(f"unknown model profile {name!r}; known: {known}") from None


def choose_profile(
    model: str, setting: str | None = None, profiles: dict[str, Profile] | None = None
) -> Choice:
    """The profile for ``model``: the setting, else the first matching pattern, else generic."""
    known = PROFILES if profiles is None else profiles
    if setting:
        return Choice(profile_by_name(setting, known), "set by model_profile")
    lowered = model.lower()
    for profile in known.values():
        for pattern in profile.patterns:
            if re.search(pattern, lowered):
                return Choice(profile, f"model name {model!r} matches /{pattern}/")
    warning = (
        f"no profile matches the model {model!r}; using the generic profile (coordinates in "
        "screenshot pixels). Set model_profile, or add one in model_profiles, if the model "
        "uses another convention."
    )
    return Choice(known["generic"], "no pattern matched", warning)
