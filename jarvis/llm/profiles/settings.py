"""The model profiles as settings data: what the ``model_profile`` and ``model_profiles``
settings may hold, checked when the settings load (DESIGN section 13).

A profile entry is a :class:`ProfileSpec` (the shipped ``profiles.json`` beside this module,
each ``model_profiles`` entry overriding the shipped profile of its name field by field, or
adding one, optionally ``extends`` another). :func:`profile_specs` resolves and checks them
all; one that cannot be right (an unknown format or space, a relative space with a format
that sends pixels, a vendor tool on the wrong API, a ``prompt_file`` that cannot be read) is
refused with one line naming the field. :func:`match` picks an entry for a model name.

This module sits in the settings layer: ``jarvis.config`` checks the settings with it, so it
imports no provider code. :mod:`jarvis.llm.profiles.catalog` turns the specs into the
profiles the providers use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

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
    "holo",
    "venus",
]
Coordinates = Literal["pixels", "resized-pixels", "0..1000", "0..999", "0..1"]
MAPPED_FORMATS = frozenset(
    {"qwen-computer-use", "uitars", "glm", "pyautogui", "gemini-computer", "point", "holo", "venus"}
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
SERVED_FORMATS = frozenset({"qwen-computer-use"})
"""Formats of open models whose tool calls a serving stack's parser may lose or leave as
text: by default Jarvis reads them from the reply itself (``served_calls``)."""
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
    resend_scale: float = Field(
        0.5, gt=0, le=1, description="the scale of the screenshots kept across a drop"
    )


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
    served_calls: bool | None = None
    """Whether the model is an open model on a serving stack whose calls Jarvis reads from
    the reply itself (native ``tool_calls``, ``<tool_call>`` blocks, Qwen's XML form, the
    reasoning when the answer has none) and whose server it names in the run report; None:
    yes for Qwen's ``computer_use`` format (:data:`SERVED_FORMATS`)."""
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


def read_prompt(spec: ProfileSpec, base_dir: Path | None) -> str | None:
    """The text of ``prompt_file`` (relative to ``base_dir``), or None when there is none."""
    if not spec.prompt_file:
        return None
    path = Path(spec.prompt_file).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"prompt_file: cannot read {path}: {exc.strerror}") from None


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


def build_specs(
    overrides: dict[str, dict[str, Any]] | None = None, base_dir: Path | None = None
) -> dict[str, ProfileSpec]:
    """All profile entries, resolved and checked, in matching order: the user's new ones,
    then the shipped file's.

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

    specs: dict[str, ProfileSpec] = {}
    for name in [*user_order, *shipped]:
        where = f"model_profiles.{name}" if name in raw else f"{SHIPPED}: {name}"
        try:
            spec = ProfileSpec.model_validate(resolve(name, ()))
        except ValidationError as exc:
            raise ValueError(_one_line(exc, where)) from None
        try:
            read_prompt(spec, base_dir)
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from None
        specs[name] = spec
    return specs


@lru_cache(maxsize=16)
def _cached(key: str, base_dir: str) -> dict[str, ProfileSpec]:
    return build_specs(json.loads(key), Path(base_dir) if base_dir else None)


def profile_specs(
    overrides: dict[str, dict[str, Any]] | None = None, base_dir: Path | None = None
) -> dict[str, ProfileSpec]:
    """:func:`build_specs`, cached per settings value."""
    key = json.dumps(overrides or {}, sort_keys=True)
    return _cached(key, str(base_dir) if base_dir else "")


class UnknownProfile(ValueError):
    """``model_profile`` names no profile."""


class Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def patterns(self) -> Sequence[str]: ...


P = TypeVar("P", bound=Named)


def by_name(name: str, known: Mapping[str, P]) -> P:
    try:
        return known[name]
    except KeyError:
        names = ", ".join(known)
        raise UnknownProfile(f"unknown model profile {name!r}; known: {names}") from None


def match(model: str, setting: str | None, known: Mapping[str, P]) -> tuple[P, str, str | None]:
    """The entry for ``model`` (the setting, else the first matching pattern, else generic),
    the reason, and a warning when nothing matched."""
    if setting:
        return by_name(setting, known), "set by model_profile", None
    lowered = model.lower()
    for profile in known.values():
        for pattern in profile.patterns:
            if re.search(pattern, lowered):
                return profile, f"model name {model!r} matches /{pattern}/", None
    warning = (
        f"no profile matches the model {model!r}; using the generic profile (coordinates in "
        "screenshot pixels). Set model_profile, or add one in model_profiles, if the model "
        "uses another convention."
    )
    return known["generic"], "no pattern matched", warning
