"""The profile of the configured model, and the screen geometry it asks for."""

from __future__ import annotations

import platform
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING

from jarvis import prompts
from jarvis.geometry import Size, tool_grid
from jarvis.llm.profiles.catalog import Choice, Profile, catalog, choose_profile

if TYPE_CHECKING:
    from jarvis.config import Settings


def profiles_of(settings: Settings) -> dict[str, Profile]:
    """The shipped profiles with the ``model_profiles`` setting applied."""
    return catalog(settings.model_profiles, settings.profiles_dir)


def active_profile(settings: Settings) -> Choice:
    """The profile for the configured provider's model (``model_profile`` first)."""
    return choose_profile(settings.active_model, settings.model_profile, profiles_of(settings))


def observation_kind(settings: Settings) -> str:
    """What the model is shown each step: the ``observation`` setting when the active
    profile takes the accessibility tree (its ``tree`` field), else the screenshot alone.
    The tree costs tokens every step, so both must ask for it."""
    if settings.observation == "screenshot" or not active_profile(settings).profile.tree:
        return "screenshot"
    return settings.observation


def uses_native_tool(profile: Profile, settings: Settings) -> bool:
    """Whether the vendor's own computer tool is in use (Claude's only with the setting)."""
    if profile.action_format == "claude-computer":
        return settings.native_computer_tool
    return profile.action_format == "openai-computer"


def geometry(profile: Profile, screen: Size, settings: Settings) -> tuple[Size, Size]:
    """(tool grid, image size) for ``screen``: the grid tool calls carry points on, and
    the pixel size of the screenshot sent."""
    image = profile.image.size(screen, settings.max_side, uses_native_tool(profile, settings))
    return tool_grid(profile.space, image), image


def screen_sizer(settings: Settings) -> Callable[[Size], tuple[Size, Size]]:
    profile = active_profile(settings).profile

    def sizer(screen: Size) -> tuple[Size, Size]:
        return geometry(profile, screen, settings)

    return sizer


def system_prompt(profile: Profile, image: Size, grid: Size, monitors: str = "") -> str:
    """The system prompt for screenshots of ``image`` pixels whose points go on ``grid``
    (they differ for a relative profile, whose own convention then rules); ``monitors``
    says which monitor the screenshots show on a desktop with several."""
    text = prompts.render(
        "system",
        screen_width=image.width,
        screen_height=image.height,
        max_x=image.width - 1,
        max_y=image.height - 1,
        date=date.today().isoformat(),
        platform=f"{platform.system()} {platform.release()}",
    )
    if grid != image and not profile.space.plain:  # a plain-scaled grid is still pixels
        text += f"\n\nInstead of pixels: {profile.grid_note(image)}"
    if monitors:
        text += f"\n\n{monitors}"
    return text
