"""Waiting for a still screen: the sampling rule on scripted frames, then on Xvfb."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jarvis.config import load_settings
from jarvis.desktop.screen import Screen
from jarvis.desktop.settle import Settler, SettleResult, wait_until_still
from tests.tkdriver import TkApp


def frames(*values: str, then: str | None = None) -> Callable[[], bytes]:
    """A grab that returns ``values`` in order, then ``then`` forever (default: the last)."""
    tail = itertools.repeat(values[-1] if then is None else then)
    source: Iterator[str] = itertools.chain(values, tail)
    return lambda: next(source).encode()


def test_still_screen_returns_after_the_floor() -> None:
    result = wait_until_still(frames("a"), floor_ms=50, ceiling_ms=3000, interval_ms=25)
    assert result == SettleResult(result.waited_ms, False, 3)  # first frame + two unchanged
    assert result.waited_ms >= 50


@pytest.mark.parametrize(
    ("floor_ms", "interval_ms", "at_most"),
    [(50, 25, 3), (0, 25, 3), (100, 25, 5), (130, 25, 7), (60, 20, 4), (200, 50, 5)],
)
def test_still_screen_returns_within_the_floor_plus_one_frame(
    floor_ms: float, interval_ms: float, at_most: int
) -> None:
    """Frame k is sampled at k * interval: the first sample at or past the floor (and two
    unchanged) ends the wait, so no more than one frame past the floor is ever taken."""
    result = wait_until_still(frames("a"), floor_ms=floor_ms, interval_ms=interval_ms)
    assert not result.timed_out and result.waited_ms >= floor_ms
    assert 3 <= result.frames <= at_most


def test_changes_delay_settling_until_two_unchanged_frames() -> None:
    result = wait_until_still(frames("a", "b", "c", "d", "e"), floor_ms=0, interval_ms=5)
    assert not result.timed_out
    assert result.frames == 7  # a b c d e (changing), then e e


def test_one_unchanged_frame_is_not_enough() -> None:
    result = wait_until_still(frames("a", "a", "b", "b", "c", "c", "d"), floor_ms=0, interval_ms=5)
    assert result.frames == 9  # ... d d d


def test_floor_is_honoured() -> None:
    result = wait_until_still(frames("a"), floor_ms=120, interval_ms=10)
    assert not result.timed_out
    assert result.waited_ms >= 120


def test_a_screen_that_never_settles_hits_the_ceiling() -> None:
    counter = itertools.count()
    result = wait_until_still(
        lambda: str(next(counter)).encode(), floor_ms=10, ceiling_ms=100, interval_ms=10
    )
    assert result.timed_out
    assert result.waited_ms >= 100
    assert result.frames >= 2


def test_stop_ends_the_wait() -> None:
    stop = threading.Event()
    stop.set()
    counter = itertools.count()
    result = wait_until_still(lambda: str(next(counter)).encode(), ceiling_ms=60_000, stop=stop)
    assert result.timed_out and result.frames == 1


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        wait_until_still(frames("a"), interval_ms=0)
    with pytest.raises(ValueError):
        wait_until_still(frames("a"), still_frames=0)


# ----------------------------------------------------------------- on Xvfb


@pytest.fixture
def settler(xserver: object, tmp_path: Path) -> Iterator[Settler]:
    settings = load_settings(data_dir=tmp_path)
    with Screen.from_settings(settings) as screen:
        yield Settler(screen, settings)


@pytest.mark.serial  # three grabs 20 ms apart on the real screen
def test_still_desktop_settles_at_the_floor(tkapp: TkApp, settler: Settler) -> None:
    assert (settler.floor_ms, settler.interval_ms) == (40, 20)  # the defaults
    result = settler.wait()
    assert not result.timed_out
    assert result.frames == 3  # one grab, then two unchanged at 20 and 40 ms


@pytest.mark.serial  # the sampling against a real animation's frame times
@pytest.mark.parametrize("run", range(5))
def test_animation_is_never_captured_midway(tkapp: TkApp, settler: Settler, run: int) -> None:
    """A square moves for 500 ms; once wait() returns, the screen is its final state
    (five runs, each one a chance to catch it midway)."""
    screen = settler.screen
    _, before = screen.grab_raw()
    tkapp.animate(500)  # returns once the first frame is drawn
    result = settler.wait()
    _, settled = screen.grab_raw()
    tkapp.wait_kind("animate_done", timeout=5)
    tkapp.sync()
    _, final = screen.grab_raw()
    assert not result.timed_out
    # compared as booleans: a failing bytes comparison would have pytest diff megabytes
    moved, stopped = settled != before, settled == final
    assert moved, "the square did not move"
    assert stopped, "wait() returned before the animation stopped"


@pytest.mark.serial
def test_endless_animation_times_out_at_the_ceiling(tkapp: TkApp, settler: Settler) -> None:
    settler.ceiling_ms = 300
    tkapp.animate(5000)
    result = settler.wait()
    assert result.timed_out
    assert result.waited_ms >= 300
