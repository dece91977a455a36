"""Where a recorded call acts on today's screen, or why a replay must not repeat it.

- a pointer call needs its recorded target crop found near the recorded point (around
  where earlier calls found theirs); the call is shifted by the match's offset. Equal
  matches are told apart by the whole screen's shift against the recorded "before"; a
  flat crop needs the whole screen to match the recording by pHash instead; a
  :class:`Regrounder` (the model) may look for a target nothing matched. The shifted
  points must stay on the screen, and the window under the first one must be the
  recorded one;
- a key call needs the window with the keyboard to be the recorded one (without a
  recorded window: the screen must match by pHash);
- ``wait`` is repeated as recorded; a call that lost a secret, and any other tool, are not.

Every refusal raises :class:`Stop` with the reason.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from jarvis.desktop.screen import Observation, model_to_screen
from jarvis.desktop.windows import Windows
from jarvis.runs.grab import Grabber
from jarvis.runs.matching import Match, find_target, global_shift, has_contrast, search_box
from jarvis.runs.step_file import KEY_TOOLS, POINTER_TOOLS, CallFile, StepFile

HINT_PX = 12
"""How near (screen pixels, both axes summed) an ambiguous match must be to the screen's
overall shift to be taken."""


class Stop(Exception):
    """A guard failed: the replay stops here and acts no more."""


class Regrounder(Protocol):
    """Finds a recorded target on the current screen (the model, for ``--model``)."""

    async def locate(
        self, observation: Observation, crop: Image.Image, call: CallFile
    ) -> tuple[int, int] | None: ...


@dataclass
class Placement:
    arguments: dict[str, Any]
    info: dict[str, Any]


class Placer:
    """Places a replay's calls one after another (it remembers where the last target was
    found: the next is looked for around there)."""

    def __init__(
        self,
        *,
        windows: Windows,
        grabber: Grabber,
        phash_bits: int,
        match_score: float,
        search_px: int,
        regrounder: Regrounder | None,
    ) -> None:
        self.windows = windows
        self.grabber = grabber
        self.phash_bits = phash_bits
        self.match_score = match_score
        self.search_px = search_px
        self.regrounder = regrounder
        self.offset = (0, 0)

    async def place(
        self,
        step_dir: Path,
        recorded: StepFile,
        call: CallFile,
        observation: Observation,
        distance: int,
    ) -> Placement:
        """The arguments to repeat ``call`` with now (``distance``: the screen's pHash
        distance from the recording's "before"), and how they were found."""
        if call.redacted:
            raise Stop(
                f"step {recorded.step}: the recorded {call.name} had a secret cut out of it; "
                "it cannot be repeated"
            )
        if call.name in POINTER_TOOLS:
            return await self._place_pointer(step_dir, recorded, call, observation, distance)
        if call.name in KEY_TOOLS:
            self._check_keyboard(recorded, call, distance)
            return Placement(dict(call.arguments), {"method": "window", "offset": None})
        if call.name == "wait":
            return Placement(dict(call.arguments), {"method": "as recorded", "offset": None})
        raise Stop(
            f"step {recorded.step}: a replay cannot check what {call.name} would act on; "
            "it repeats only the mouse, keyboard and wait tools"
        )

    def _check_keyboard(self, recorded: StepFile, call: CallFile, distance: int) -> None:
        focus = self.windows.focused()
        if call.focus is not None and call.focus.known:
            if not focus.same_as(call.focus):
                raise Stop(
                    f"step {recorded.step}: refusing to {call.name} into {focus.label()}; "
                    f"the recording sent it to {call.focus.label()}"
                )
        elif distance > self.phash_bits:
            raise Stop(
                f"step {recorded.step}: the screen differs from the recording by "
                f"{distance} pHash bits and the recorded window is unknown"
            )

    async def _place_pointer(
        self,
        step_dir: Path,
        recorded: StepFile,
        call: CallFile,
        observation: Observation,
        distance: int,
    ) -> Placement:
        where = f"step {recorded.step}: {call.name} at {call.model_points[0]}"
        if call.target is None or not (step_dir / call.target.file).is_file():
            raise Stop(f"{where}: the recording has no target crop to check against")
        with Image.open(step_dir / call.target.file) as opened:
            crop = opened.convert("RGB")
        method, score = "exact", None
        if has_contrast(crop):
            offset, method, score = await self._find(
                step_dir, recorded, call, observation, crop, where
            )
        elif distance <= self.phash_bits:
            offset = (0, 0)
        else:
            raise Stop(
                f"{where}: the target area is flat, and the screen differs from the "
                f"recording by {distance} pHash bits"
            )
        scale_x, scale_y = recorded.scale
        dx, dy = round(offset[0] / scale_x), round(offset[1] / scale_y)
        self._check_landing(where, call, observation, offset, (dx, dy))
        self.offset = offset
        return Placement(
            shift_call(call, dx, dy),
            {"method": method, "offset": list(offset), "model_offset": [dx, dy], "score": score},
        )

    async def _find(
        self,
        step_dir: Path,
        recorded: StepFile,
        call: CallFile,
        observation: Observation,
        crop: Image.Image,
        where: str,
    ) -> tuple[tuple[int, int], str, float | None]:
        """The target crop's offset on the screen now (screen pixels), how it was found,
        and the match's score (None: the model found it)."""
        assert call.target is not None  # checked by the caller
        ox, oy = observation.origin
        size = observation.screen_size
        bounds = (ox, oy, ox + size.width, oy + size.height)
        left, top, right, bottom = call.target.box
        dx0, dy0 = self.offset  # where earlier calls found things: search around there
        shifted = (left + dx0, top + dy0, right + dx0, bottom + dy0)
        region_box = search_box(shifted, self.search_px, bounds)
        region = await asyncio.to_thread(self.grabber.grab, region_box)
        match = find_target(
            region,
            region_box,
            crop,
            call.target.box,
            self.match_score,
            self.offset,
            bounds=bounds,
        )
        why = (
            f"the recorded target is not on the screen within {self.search_px} px "
            f"(no match scores {self.match_score})"
        )
        if match is not None and match.ambiguous:
            match, why = self._disambiguate(step_dir, recorded, observation, match)
        if match is None:
            offset, method = await self._reground(where, why, observation, crop, call)
            return offset, method, None
        offset = match.offset
        return offset, "exact" if offset == (0, 0) else "template", round(match.score, 4)

    def _check_landing(
        self,
        where: str,
        call: CallFile,
        observation: Observation,
        offset: tuple[int, int],
        model_offset: tuple[int, int],
    ) -> None:
        """Shifted by ``model_offset``, the call's points must stay on the screen and the
        window under the first must be the recorded one."""
        dx, dy = model_offset
        width, height = observation.model_size.width, observation.model_size.height
        for x, y in call.model_points:
            if not (0 <= x + dx < width and 0 <= y + dy < height):
                raise Stop(f"{where}: shifted by {offset} px it would leave the screen")
        x, y = call.model_points[0]
        sx, sy = screen_point(observation, x + dx, y + dy)
        if call.window is not None and call.window.known:
            now = self.windows.at(sx, sy)
            if not now.same_as(call.window):
                raise Stop(
                    f"{where}: the window there is {now.label()}; the recording acted on "
                    f"{call.window.label()}"
                )

    def _disambiguate(
        self, step_dir: Path, recorded: StepFile, observation: Observation, match: Match
    ) -> tuple[Match | None, str]:
        """Equally good places for the crop (or the best at the edge of the search): take
        the one the whole screen's shift against the recorded "before" points to, if one is
        near it; else none, and why."""
        with Image.open(step_dir / recorded.before) as opened:
            before = opened.convert("RGB")
        shift = global_shift(before, observation.image)
        if shift is None:
            return None, "the target matches several places; not guessing"
        hint = (shift[0] * recorded.scale[0], shift[1] * recorded.scale[1])
        chosen = match.nearest(hint)
        miss = abs(chosen.offset[0] - hint[0]) + abs(chosen.offset[1] - hint[1])
        if miss > HINT_PX:
            return None, (
                "the target matches several places, or only at the edge of the search, and "
                f"none where the screen moved ({hint[0]:+.0f}, {hint[1]:+.0f} px)"
            )
        return chosen, ""

    async def _reground(
        self, where: str, why: str, observation: Observation, crop: Image.Image, call: CallFile
    ) -> tuple[tuple[int, int], str]:
        if self.regrounder is None:
            raise Stop(f"{where}: {why}; not acting blind")
        point = await self.regrounder.locate(observation, crop, call)
        if point is None:
            raise Stop(f"{where}: neither the recording nor the model found the target")
        x, y = call.model_points[0]
        scale_x, scale_y = (
            observation.screen_size.width / observation.model_size.width,
            (observation.screen_size.height / observation.model_size.height),
        )
        return (round((point[0] - x) * scale_x), round((point[1] - y) * scale_y)), "model"


def shift_call(call: CallFile, dx: int, dy: int) -> dict[str, Any]:
    """The call's arguments moved by (``dx``, ``dy``) model pixels."""
    args = dict(call.arguments)
    if call.name == "drag":
        for key, delta in (("startX", dx), ("startY", dy), ("endX", dx), ("endY", dy)):
            args[key] = int(args[key]) + delta
    else:
        args["x"], args["y"] = int(args["x"]) + dx, int(args["y"]) + dy
    return args


def screen_point(observation: Observation, x: int, y: int) -> tuple[int, int]:
    return model_to_screen(
        x, y, observation.model_size, observation.screen_size, observation.origin
    )
