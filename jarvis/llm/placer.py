"""Answers placed on the tool grid with the edge rule, and its notes carried to the calls.

:func:`jarvis.geometry.place` moves a point that is just off the picture (by at most 1 %
of the model's coordinate range) onto its edge and says so in a note. A grammar or a
vendor action maps answers to points first and builds our tool calls afterwards, so a
:class:`Placer` remembers each note by the grid point it landed on, and
:meth:`Placer.annotate` sets it on the calls that carry that point: the registry adds it
to the call's result, and the model reads where its point went.
"""

from __future__ import annotations

from collections.abc import Sequence

from jarvis.geometry import CoordSpace, Size, place
from jarvis.llm.types import ToolCall

POINT_KEYS = (("x", "y"), ("startX", "startY"), ("endX", "endY"))
"""The argument pairs of our tools that hold a point on the tool grid."""


class Placer:
    """A point function (answer -> grid point) for ``space`` and ``image`` that keeps the
    edge notes; raises :class:`jarvis.geometry.OffScreen` as :func:`place` does."""

    def __init__(self, space: CoordSpace, image: Size) -> None:
        self.space = space
        self.image = image
        self.notes: dict[tuple[int, int], str] = {}

    def __call__(self, values: Sequence[float]) -> tuple[int, int]:
        placed = place(values, self.space, self.image)
        if placed.note:
            self.notes[(placed.x, placed.y)] = placed.note
        return placed.x, placed.y

    def annotate(self, calls: list[ToolCall]) -> list[ToolCall]:
        """``calls`` with the note of every point that was moved onto the edge."""
        if not self.notes:
            return calls
        out: list[ToolCall] = []
        for call in calls:
            said = [
                self.notes[point]
                for kx, ky in POINT_KEYS
                if (point := (call.arguments.get(kx), call.arguments.get(ky))) in self.notes
            ]
            out.append(call.model_copy(update={"note": "; ".join(said)}) if said else call)
        return out
