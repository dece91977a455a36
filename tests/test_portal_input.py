"""Input and pictures of the portal backend against the fake portal: pictures in
logical size from device-pixel frames at scale 1.25 and 2, clicks mapped from the
model's picture to each stream's logical coordinates, buttons, drag and scroll, the
keysyms of a mixed string and of chords, and no success without a delivery path."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from jarvis.desktop.errors import InputError, InputInterrupted
from jarvis.desktop.portal.bus import PortalBus
from jarvis.desktop.portal.frames import FrameSource
from jarvis.desktop.portal.input import PortalInput, stream_point, text_keysyms
from jarvis.desktop.portal.screen import PortalScreen
from jarvis.desktop.portal.session import PortalSession, Stream
from jarvis.desktop.portal.token import RestoreToken
from tests.portal_fake import FakePortal, SessionBus, fed_source

STREAMS = [(42, (0, 0), (1280, 720)), (43, (1280, 0), (800, 450))]
SCALES = {42: 1.25, 43: 2.0}
MARKS = {42: ((400, 200), (255, 0, 0)), 43: ((500, 300), (0, 255, 0))}
"""Each stream's mark: its centre in the stream's logical pixels, and its colour."""


def device_frame(node: int, size: tuple[int, int]) -> Image.Image:
    """A frame of stream ``node`` in device pixels, its mark drawn at scale."""
    scale = SCALES[node]
    image = Image.new("RGB", (round(size[0] * scale), round(size[1] * scale)), (30, 30, 30))
    (x, y), colour = MARKS[node]
    half = 8 * scale
    ImageDraw.Draw(image).rectangle(
        (x * scale - half, y * scale - half, x * scale + half - 1, y * scale + half - 1),
        fill=colour,
    )
    return image


class Rig:
    """A started session on the fake portal, with fed frames and the input."""

    def __init__(self, address: str, portal: FakePortal, tmp: Path) -> None:
        self.portal = portal
        self.bus = PortalBus(address, timeout=5)
        self.session = PortalSession(self.bus, RestoreToken(tmp)).start()
        self.sources: dict[int, FrameSource] = {}
        self.feeds: list[threading.Event] = []
        for node, _pos, size in STREAMS:
            source, done = fed_source(device_frame(node, size), name=str(node))
            self.sources[node], _ = source, self.feeds.append(done)
        self.input = PortalInput(self.session, stop=threading.Event(), hold=threading.Event())

    def screen(self, monitor: int) -> PortalScreen:
        return PortalScreen(self.session.streams, self.sources, monitor=monitor, max_side=1024)

    def sent(self, *members: str) -> list[tuple]:
        """The (member, arguments after the options) of every input call so far."""
        return [(name, args[2:]) for _i, name, args in self.portal.calls if name in members]

    def close(self) -> None:
        for done in self.feeds:
            done.set()
        for source in self.sources.values():
            source.close()
        self.session.close()
        self.bus.close()


@pytest.fixture(scope="module")
def session_bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionBus]:
    bus = SessionBus(tmp_path_factory.mktemp("bus"))
    yield bus
    bus.close()


@pytest.fixture(scope="module")
def rig(session_bus: SessionBus, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    portal = FakePortal(session_bus.address, streams=STREAMS).serve()
    made = Rig(session_bus.address, portal, tmp_path_factory.mktemp("data"))
    yield made
    made.close()
    portal.close()
    assert portal.errors == [], "the fake portal refused a call's arguments"


@pytest.fixture
def fresh(rig: Rig) -> Rig:
    rig.portal.calls.clear()
    rig.input.hold.clear()  # type: ignore[union-attr]
    return rig


def _centre(image: Image.Image, colour: tuple[int, int, int]) -> tuple[float, float]:
    """The centre of the pixels close to ``colour``."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.int32)
    near = np.abs(pixels - np.array(colour)).sum(axis=2) < 90
    ys, xs = np.nonzero(near)
    assert len(xs), f"no {colour} pixels in the picture"
    return float(xs.mean()), float(ys.mean())


@pytest.mark.parametrize(("monitor", "node"), [(1, 42), (2, 43)])
def test_pictures_are_logical_and_clicks_land_on_the_mark(
    fresh: Rig, monitor: int, node: int
) -> None:
    screen = fresh.screen(monitor)
    (mark_x, mark_y), colour = MARKS[node]
    size = dict((n, s) for n, _p, s in STREAMS)[node]
    shot = screen.capture()
    assert (shot.screen_size.width, shot.screen_size.height) == size
    assert shot.physical_size is not None
    assert shot.physical_size.width == round(size[0] * SCALES[node])
    assert screen.scale == SCALES[node]
    logical = screen.logical_image()
    assert logical.size == size
    lx, ly = _centre(logical, colour)
    assert abs(lx - mark_x) <= 1 and abs(ly - mark_y) <= 1
    model_x, model_y = _centre(shot.image, colour)
    x, y = screen.to_screen(round(model_x), round(model_y))
    fresh.input.click(x, y)
    ((_, (stream, sx, sy)),) = fresh.sent("NotifyPointerMotionAbsolute")
    assert stream == node
    assert abs(sx - mark_x) <= 2 and abs(sy - mark_y) <= 2, (sx, sy)
    assert fresh.sent("NotifyPointerButton") == [
        ("NotifyPointerButton", (0x110, 1)),
        ("NotifyPointerButton", (0x110, 0)),
    ]


def test_the_whole_layout_is_composed_at_the_largest_scale(fresh: Rig) -> None:
    screen = fresh.screen(0)
    device = screen._grab_image()
    assert device.size == (2080 * 2, 720 * 2)
    logical = screen.logical_image()
    assert logical.size == (2080, 720)
    for node, ((x, y), colour) in MARKS.items():
        ox = 1280 if node == 43 else 0
        cx, cy = _centre(logical.crop((ox + x - 20, y - 20, ox + x + 20, y + 20)), colour)
        assert abs(cx - 20) <= 1 and abs(cy - 20) <= 1


def test_stream_points_are_in_each_stream_s_coordinates() -> None:
    streams = [Stream(42, (0, 0), (1280, 720)), Stream(43, (1280, 0), (800, 450))]
    assert stream_point(streams, 0, 0) == (streams[0], 0, 0)
    assert stream_point(streams, 1279, 719) == (streams[0], 1279, 719)
    assert stream_point(streams, 1280, 0) == (streams[1], 0, 0)
    assert stream_point(streams, 2079, 449) == (streams[1], 799, 449)
    with pytest.raises(InputError, match="on no monitor"):
        stream_point(streams, 1500, 600)  # inside the layout's box, on no stream


def test_buttons_drag_and_scroll(fresh: Rig) -> None:
    fresh.input.right_click(10, 10)
    fresh.input.double_click(20, 20)
    assert [a for _m, a in fresh.sent("NotifyPointerButton")] == [
        (0x111, 1), (0x111, 0), (0x110, 1), (0x110, 0), (0x110, 1), (0x110, 0),
    ]  # fmt: skip
    fresh.portal.calls.clear()
    fresh.input.drag(1200, 100, 1400, 100)  # from one stream onto the next
    sent = fresh.sent("NotifyPointerMotionAbsolute", "NotifyPointerButton")
    assert sent[0] == ("NotifyPointerMotionAbsolute", (42, 1200.0, 100.0))
    assert sent[1] == ("NotifyPointerButton", (0x110, 1))
    assert sent[-2] == ("NotifyPointerMotionAbsolute", (43, 120.0, 100.0))
    assert sent[-1] == ("NotifyPointerButton", (0x110, 0))
    fresh.portal.calls.clear()
    fresh.input.scroll(10, 10, "down", 3)
    fresh.input.scroll(10, 10, "left", 2)
    assert [a for _m, a in fresh.sent("NotifyPointerAxisDiscrete")] == [(0, 3), (1, -2)]


def test_a_point_on_no_stream_sends_nothing(fresh: Rig) -> None:
    with pytest.raises(InputError, match="outside the screen"):
        fresh.input.click(1500, 600)
    assert fresh.portal.calls == []


MIXED = "yz@#/-{} ä€ß Привет 中😀\n"
MIXED_KEYSYMS = [
    0x79, 0x7A, 0x40, 0x23, 0x2F, 0x2D, 0x7B, 0x7D, 0x20, 0xE4, 0x10020AC, 0xDF, 0x20,
    0x100041F, 0x1000440, 0x1000438, 0x1000432, 0x1000435, 0x1000442, 0x20,
    0x1004E2D, 0x101F600, 0xFF0D,
]  # fmt: skip


def test_the_keysyms_of_a_mixed_string(fresh: Rig) -> None:
    assert text_keysyms(MIXED) == MIXED_KEYSYMS
    typed = fresh.input.type_text(MIXED)
    assert typed.method == "portal" and typed.chars == len(MIXED) and typed.unchecked
    sent = [a for _m, a in fresh.sent("NotifyKeyboardKeysym")]
    assert sent == [(sym, state) for sym in MIXED_KEYSYMS for state in (1, 0)]


def test_a_chord_is_held_in_order_and_let_go_in_reverse(fresh: Rig) -> None:
    fresh.input.hotkey("ctrl+shift+t")
    sent = [a for _m, a in fresh.sent("NotifyKeyboardKeysym")]
    assert sent == [(0xFFE3, 1), (0xFFE1, 1), (0x74, 1), (0x74, 0), (0xFFE1, 0), (0xFFE3, 0)]


def test_no_success_without_a_delivery_path(
    session_bus: SessionBus, tmp_path: Path, fresh: Rig
) -> None:
    fresh.input.hold.set()  # type: ignore[union-attr]
    with pytest.raises(InputInterrupted, match="took over"):
        fresh.input.click(10, 10)
    assert fresh.portal.calls == []
    bus = PortalBus(session_bus.address, timeout=5)
    session = PortalSession(bus, RestoreToken(tmp_path)).start()
    dead = PortalInput(session)
    session.close()
    with pytest.raises(InputError, match="session is closed"):
        dead.click(10, 10)
    bus.close()


def test_a_pipeline_that_ends_is_one_line_never_an_old_picture() -> None:
    source = FrameSource(["nosuchelement"], name="7")
    with pytest.raises(InputError) as ended:
        source.frame(timeout=10)
    assert str(ended.value).startswith("the screen-cast stream 7 ended: ")
    assert "no element" in str(ended.value) and "\n" not in str(ended.value)
    source.close()


def test_the_desktop_interface_on_the_portal(fresh: Rig) -> None:
    from jarvis.config import Settings
    from jarvis.desktop.clipboard import ClipboardContent
    from jarvis.desktop.portal.desktop import PortalDesktop
    from jarvis.desktop.portal.display import PortalDisplay
    from jarvis.desktop.settle import Settler

    screen = fresh.screen(1)
    where = PortalDisplay("/run/user/1000/wayland-0", "", fresh.bus.address, "GNOME")
    stop = threading.Event()
    desktop = PortalDesktop(
        where, fresh.session, fresh.sources, screen, Settler(screen, Settings()), stop
    )
    assert desktop.backend == "portal" and desktop.name == where.socket
    assert [(o.name, o.box, o.scale) for o in desktop.outputs] == [
        ("42", (0, 0, 1280, 720), 1.25),
        ("43", (1280, 0, 800, 450), 2.0),
    ]
    desktop.input.move(5, 6)
    assert fresh.sent("NotifyPointerMotionAbsolute") == [
        ("NotifyPointerMotionAbsolute", (42, 5.0, 6.0))
    ]
    assert not desktop.windows.focused().known and not desktop.windows.at(5, 6).known
    with pytest.raises(InputError, match="offers no window list"):
        desktop.windows.activate(3)
    with pytest.raises(InputError, match="clipboard is not built"):
        desktop.write_clipboard(ClipboardContent("UTF8_STRING", b"x"))
    stop.set()
    with pytest.raises(InputInterrupted, match="cancelled"):
        desktop.input.click(5, 6)
    screen.close()
