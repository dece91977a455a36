"""What a tool gets besides its arguments: the task, the desktop, the settings, the bus.

The model supplies arguments; everything else reaches a tool through one
:class:`ToolContext` built by the agent loop for a task. Argument models forbid
extra fields, so the model can never pass (or override) anything in here.

Tools report loop-level outcomes through the context, not through exceptions:
``finished`` and ``call_user`` fill :attr:`ToolContext.control`; ``screenshot``
raises :attr:`ToolContext.screenshot_requested`. The loop reads both after the
calls of a step with :meth:`ToolContext.take_control` and
:meth:`ToolContext.take_screenshot_request`.
"""

from __future__ import annotations

import threading
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel

from jarvis.events import EventBus

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.desktop.a11y.view import ElementView

ControlKind = Literal["finished", "call_user", "aborted"]


class SizeLike(Protocol):
    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...


class ScreenLike(Protocol):
    """The part of ``jarvis.desktop.screen.Screen`` the tools use."""

    @property
    def model_size(self) -> SizeLike: ...

    @property
    def monitor_note(self) -> str:
        """Which monitor the screenshots show ("" on a one-monitor display)."""
        ...

    def to_screen(self, x: int, y: int) -> tuple[int, int]: ...

    def reachable(self, x: int, y: int) -> bool:
        """Whether a screen point (``to_screen``'s) is on a monitor."""
        ...


class TypedLike(Protocol):
    """What ``type_text`` reports (``jarvis.desktop.input.TypedText``)."""

    @property
    def method(self) -> str: ...

    @property
    def chars(self) -> int: ...

    @property
    def target(self) -> str: ...

    @property
    def paste_key(self) -> str: ...

    @property
    def unchecked(self) -> str: ...


class InputLike(Protocol):
    """The part of ``jarvis.desktop.input.Input`` the tools use (real screen coordinates)."""

    def click(self, x: int, y: int) -> None: ...

    def double_click(self, x: int, y: int) -> None: ...

    def triple_click(self, x: int, y: int) -> None: ...

    def middle_click(self, x: int, y: int) -> None: ...

    def position(self) -> tuple[int, int]: ...

    def hold_key(self, key: str, down: bool = True) -> None: ...

    def release_keys(self) -> None: ...

    def right_click(self, x: int, y: int) -> None: ...

    def move(self, x: int, y: int) -> None: ...

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None: ...

    def scroll(
        self, x: int, y: int, direction: Literal["up", "down", "left", "right"], amount: int = 3
    ) -> None: ...

    def type_text(self, text: str) -> TypedLike: ...

    def hotkey(self, keys: str) -> None: ...

    def press_key(self, key: str) -> None: ...


class WindowLike(Protocol):
    """What the tools read of a top-level window (``jarvis.desktop.windows.WindowInfo``)."""

    @property
    def title(self) -> str: ...

    @property
    def box(self) -> tuple[int, int, int, int] | None: ...


class WindowsLike(Protocol):
    """The window lookups the tools use (``jarvis.desktop.windows.Windows``)."""

    def focused(self) -> WindowLike: ...


class MasksLike(Protocol):
    """Boxes every picture of the screen hides (``jarvis.desktop.masks.ScreenMasks``)."""

    def add(self, box: tuple[int, int, int, int], seconds: float) -> None: ...


class ControlOutcome(BaseModel):
    """A loop-level outcome a tool asked for.

    ``finished``: the model says the task is done (``text`` is its summary; the loop verifies).
    ``call_user``: the model needs the user (``text`` is the question).
    ``aborted``: the input fail-safe fired (the user slammed the pointer into a corner).
    """

    kind: ControlKind
    text: str


def _new_trace_id() -> str:
    return uuid.uuid4().hex


@dataclass(eq=False)
class ToolContext:
    """Dependencies and outcome slots for the tool calls of one task."""

    task_id: str
    settings: Settings
    data_dir: Path
    screen: ScreenLike | None = None
    input: InputLike | None = None
    bus: EventBus = field(default_factory=EventBus)
    trace_id: str = field(default_factory=_new_trace_id)
    provider: str | None = None
    """Provider whose policy applies; ``None`` means ``settings.provider``."""
    channels: tuple[str, ...] = ()
    """The channels the task came from (the ``via:`` of its messages: tui, email, api,
    inbox...); each one's policy narrows the tools. Empty for ``jarvis run``."""
    control: ControlOutcome | None = None
    screenshot_requested: bool = False
    stop: threading.Event | None = None
    """The stop the desktop input checks between pieces of an action: set by the agent on
    cancel, and by the registry for a moment when a blocking tool times out."""
    elements: ElementView | None = None
    """The step's accessibility tree (``observation`` with a tree), for the element tools."""
    approved: set[str] = field(default_factory=set)
    """Ids of held calls that were let through (a person allowed them, or the task runs
    unattended): a risky ``call_user`` that is in here goes on instead of stopping."""
    windows: WindowsLike | None = None
    """The desktop's window lookups (the focused window a secret would be typed into)."""
    masks: MasksLike | None = None
    """The screen's masks: a field a secret was typed into is hidden from every picture."""

    @classmethod
    def for_task(
        cls,
        settings: Settings,
        task_id: str,
        *,
        screen: ScreenLike | None = None,
        input: InputLike | None = None,
        bus: EventBus | None = None,
        trace_id: str | None = None,
        provider: str | None = None,
        stop: threading.Event | None = None,
        channels: tuple[str, ...] = (),
        elements: ElementView | None = None,
        windows: WindowsLike | None = None,
        masks: MasksLike | None = None,
    ) -> ToolContext:
        """A context whose data dir and provider come from ``settings``."""
        return cls(
            task_id=task_id,
            settings=settings,
            data_dir=settings.data_dir,
            screen=screen,
            input=input,
            bus=bus if bus is not None else EventBus(),
            trace_id=trace_id or _new_trace_id(),
            provider=provider,
            stop=stop,
            channels=tuple(channels),
            elements=elements,
            windows=windows,
            masks=masks,
        )

    @property
    def provider_name(self) -> str:
        return self.provider or self.settings.provider

    @property
    def channel(self) -> str | None:
        """The task's first channel (where it came from), if any."""
        return self.channels[0] if self.channels else None

    def set_control(self, kind: ControlKind, text: str) -> None:
        """Record a loop-level outcome; the first one in a step wins, except ``aborted``."""
        if self.control is None or kind == "aborted":
            self.control = ControlOutcome(kind=kind, text=text)

    def request_screenshot(self) -> None:
        """Ask the loop for a fresh observation before the next model call."""
        self.screenshot_requested = True

    def take_control(self) -> ControlOutcome | None:
        """The outcome set during this step (if any), clearing the slot."""
        outcome, self.control = self.control, None
        return outcome

    def take_screenshot_request(self) -> bool:
        requested, self.screenshot_requested = self.screenshot_requested, False
        return requested


current_context: ContextVar[ToolContext | None] = ContextVar("jarvis_tool_context", default=None)
"""The context of the task the agent loop is running in this asyncio task (set by the loop),
for code that runs outside a tool call but acts for the task: a provider that must ask a
person (OpenAI's safety checks)."""
