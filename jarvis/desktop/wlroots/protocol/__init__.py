"""Client-side bindings (pywayland) of the two input protocols Jarvis sends on wlroots.

Written out by hand from the protocols' wire signatures: ``zwlr_virtual_pointer_v1``
version 2 (wlr-protocols) and ``zwp_virtual_keyboard_v1`` version 1 (wlroots). Every
request of each interface is declared, in protocol order, because the request's index is
its opcode and libwayland checks each message against the interface's full table; only
the requests Jarvis sends have a body that marshals.
"""

from __future__ import annotations

from pywayland.protocol.wayland import WlOutput, WlSeat, WlSeatProxy
from pywayland.protocol_core import Argument, ArgumentType, Interface, Proxy

U, F, FD = ArgumentType.Uint, ArgumentType.Fixed, ArgumentType.FileDescriptor
I32 = ArgumentType.Int


class ZwlrVirtualPointerV1(Interface):
    name = "zwlr_virtual_pointer_v1"
    version = 2


class ZwlrVirtualPointerManagerV1(Interface):
    name = "zwlr_virtual_pointer_manager_v1"
    version = 2


class ZwpVirtualKeyboardV1(Interface):
    name = "zwp_virtual_keyboard_v1"
    version = 1


class ZwpVirtualKeyboardManagerV1(Interface):
    name = "zwp_virtual_keyboard_manager_v1"
    version = 1


def _args(*kinds: ArgumentType) -> list[Argument]:
    return [Argument(kind) for kind in kinds]


class ZwlrVirtualPointerV1Proxy(Proxy[ZwlrVirtualPointerV1]):
    interface = ZwlrVirtualPointerV1

    @ZwlrVirtualPointerV1.request(*_args(U, F, F))
    def motion(self, time: int, dx: float, dy: float) -> None:
        self._marshal(0, time, dx, dy)

    @ZwlrVirtualPointerV1.request(*_args(U, U, U, U, U))
    def motion_absolute(self, time: int, x: int, y: int, x_extent: int, y_extent: int) -> None:
        self._marshal(1, time, x, y, x_extent, y_extent)

    @ZwlrVirtualPointerV1.request(*_args(U, U, U))
    def button(self, time: int, button: int, state: int) -> None:
        self._marshal(2, time, button, state)

    @ZwlrVirtualPointerV1.request(*_args(U, U, F))
    def axis(self, time: int, axis: int, value: float) -> None:
        self._marshal(3, time, axis, value)

    @ZwlrVirtualPointerV1.request()
    def frame(self) -> None:
        self._marshal(4)

    @ZwlrVirtualPointerV1.request(*_args(U))
    def axis_source(self, axis_source: int) -> None:
        self._marshal(5, axis_source)

    @ZwlrVirtualPointerV1.request(*_args(U, U))
    def axis_stop(self, time: int, axis: int) -> None:
        self._marshal(6, time, axis)

    @ZwlrVirtualPointerV1.request(*_args(U, U, F, I32))
    def axis_discrete(self, time: int, axis: int, value: float, discrete: int) -> None:
        self._marshal(7, time, axis, value, discrete)

    @ZwlrVirtualPointerV1.request(version=1)
    def destroy(self) -> None:
        self._marshal(8)
        self._destroy()


class ZwlrVirtualPointerManagerV1Proxy(Proxy[ZwlrVirtualPointerManagerV1]):
    interface = ZwlrVirtualPointerManagerV1

    @ZwlrVirtualPointerManagerV1.request(
        Argument(ArgumentType.Object, interface=WlSeat, nullable=True),
        Argument(ArgumentType.NewId, interface=ZwlrVirtualPointerV1),
    )
    def create_virtual_pointer(self, seat: WlSeatProxy | None) -> ZwlrVirtualPointerV1Proxy:
        made: ZwlrVirtualPointerV1Proxy = self._marshal_constructor(0, ZwlrVirtualPointerV1, seat)
        return made

    @ZwlrVirtualPointerManagerV1.request(version=1)
    def destroy(self) -> None:
        self._marshal(1)
        self._destroy()

    @ZwlrVirtualPointerManagerV1.request(
        Argument(ArgumentType.Object, interface=WlSeat, nullable=True),
        Argument(ArgumentType.Object, interface=WlOutput, nullable=True),
        Argument(ArgumentType.NewId, interface=ZwlrVirtualPointerV1),
        version=2,
    )
    def create_virtual_pointer_with_output(self, seat: object, output: object) -> object:
        raise NotImplementedError("Jarvis maps the pointer over the whole layout")


class ZwpVirtualKeyboardV1Proxy(Proxy[ZwpVirtualKeyboardV1]):
    interface = ZwpVirtualKeyboardV1

    @ZwpVirtualKeyboardV1.request(*_args(U, FD, U))
    def keymap(self, keymap_format: int, fd: int, size: int) -> None:
        self._marshal(0, keymap_format, fd, size)

    @ZwpVirtualKeyboardV1.request(*_args(U, U, U))
    def key(self, time: int, key: int, state: int) -> None:
        self._marshal(1, time, key, state)

    @ZwpVirtualKeyboardV1.request(*_args(U, U, U, U))
    def modifiers(self, depressed: int, latched: int, locked: int, group: int) -> None:
        self._marshal(2, depressed, latched, locked, group)

    @ZwpVirtualKeyboardV1.request()
    def destroy(self) -> None:
        self._marshal(3)
        self._destroy()


class ZwpVirtualKeyboardManagerV1Proxy(Proxy[ZwpVirtualKeyboardManagerV1]):
    interface = ZwpVirtualKeyboardManagerV1

    @ZwpVirtualKeyboardManagerV1.request(
        Argument(ArgumentType.Object, interface=WlSeat),
        Argument(ArgumentType.NewId, interface=ZwpVirtualKeyboardV1),
    )
    def create_virtual_keyboard(self, seat: WlSeatProxy) -> ZwpVirtualKeyboardV1Proxy:
        made: ZwpVirtualKeyboardV1Proxy = self._marshal_constructor(0, ZwpVirtualKeyboardV1, seat)
        return made


for _interface, _proxy in (
    (ZwlrVirtualPointerV1, ZwlrVirtualPointerV1Proxy),
    (ZwlrVirtualPointerManagerV1, ZwlrVirtualPointerManagerV1Proxy),
    (ZwpVirtualKeyboardV1, ZwpVirtualKeyboardV1Proxy),
    (ZwpVirtualKeyboardManagerV1, ZwpVirtualKeyboardManagerV1Proxy),
):
    _interface._gen_c()  # the wl_interface table libwayland checks messages against
    _interface.proxy_class = _proxy
