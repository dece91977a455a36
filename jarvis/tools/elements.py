"""Tools that act on an element of the accessibility tree the model was shown this step.

Offered when the ``observation`` setting is ``screenshot+tree`` or ``screenshot+marks``.
Each call looks the id up in the step's tree and checks the element against the live tree
first (:meth:`jarvis.desktop.a11y.reader.A11yReader.check`): an element that vanished, was
hidden, became disabled or moved is an invalid-params error the model sees, and nothing is done.

- ``click_element``: a left click at the element's centre (what a person's click does);
  an element off the screen, or under another window (the click would land there), is
  activated through its accessible action instead (``Action.DoAction``: a button presses,
  a check box toggles, a menu item activates).
- ``focus_element``: the element takes the keyboard focus (``Component.GrabFocus``), read
  back from the live tree (its FOCUSED state) before it reports.
- ``set_value``: a text field's whole text (``EditableText.SetTextContents``; where the
  field has no such interface, as in Chromium, it is focused, selected and typed into, and
  only once its window has the X input focus, activated if need be, and the element is
  FOCUSED in the live tree: otherwise nothing is typed and the model gets an error) or a
  slider's or spin box's number (``Value.CurrentValue``), read back before it reports.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jarvis.desktop.a11y.bus import COMPONENT, PROPS, A11yError, A11yTimeout, Call, prop
from jarvis.desktop.a11y.tree import ACTION, EDITABLE_TEXT, TEXT, VALUE, Element
from jarvis.desktop.a11y.view import ElementView
from jarvis.tools.computer import _act, _input
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INTERNAL, INVALID_PARAMS, ToolFailure

ID_FIELD = Field(
    min_length=2, max_length=12, description="an element id from the accessibility tree, e.g. 'e7'"
)
MAX_VALUE = 10_000


class ElementArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = ID_FIELD


class SetValueArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = ID_FIELD
    value: str = Field(
        max_length=MAX_VALUE,
        description="the text the field should hold (all of it), or a number for a slider",
    )


def _view(ctx: ToolContext) -> ElementView:
    if ctx.elements is None:
        raise ToolFailure(INTERNAL, "no accessibility tree is attached to this task")
    return ctx.elements


def _live(ctx: ToolContext, element_id: str) -> tuple[ElementView, Element]:
    """The element ``element_id`` of this step's tree, checked against the live tree."""
    view = _view(ctx)
    try:
        element = view.element(element_id)
        problem = view.reader.check(element)
    except KeyError as exc:
        raise ToolFailure(INVALID_PARAMS, str(exc.args[0])) from exc
    except A11yError as exc:
        raise ToolFailure(INTERNAL, f"the accessibility tree cannot be read: {exc}") from exc
    if problem:
        raise ToolFailure(INVALID_PARAMS, f"{problem}; look at the new screenshot and tree")
    return view, element


def _described(element: Element, **more: Any) -> dict[str, Any]:
    return {"id": element.id, "role": element.role, "name": element.name, **more}


def _on_screen(view: ElementView, element: Element) -> bool:
    ox, oy = view.screen.origin
    size = view.screen.size
    x, y = element.center
    return ox <= x < ox + size.width and oy <= y < oy + size.height


def _do_action(view: ElementView, element: Element) -> str:
    """Run the element's first accessible action (``Action.DoAction(0)``, what a click
    does: press, toggle, activate); its name."""
    if ACTION not in element.interfaces:
        raise ToolFailure(
            INVALID_PARAMS,
            f"element {element.id} cannot be clicked: it is off the screen or covered, "
            "and has no accessible action",
        )
    try:
        count = int(view.reader.call(prop(element.ref, ACTION, "NActions"))[0][1])
        name = str(view.reader.call(Call(element.ref, ACTION, "GetName", "i", (0,)))[0])
        done = bool(count) and view.reader.call(Call(element.ref, ACTION, "DoAction", "i", (0,)))[0]
    except A11yTimeout as exc:  # e.g. Qt answers a menu item's action once its dialog closes
        raise ToolFailure(
            INVALID_PARAMS,
            f"element {element.id}'s action got no answer in time: it may have happened "
            "(a dialog may have opened); look again before repeating it",
        ) from exc
    except A11yError as exc:
        raise ToolFailure(
            INVALID_PARAMS, f"element {element.id} refused its action: {exc}"
        ) from exc
    if not done:
        raise ToolFailure(INVALID_PARAMS, f"element {element.id} refused its action")
    return name


def click_element(args: ElementArgs, ctx: ToolContext) -> dict[str, Any]:
    """Click an element of the accessibility tree by its id (e.g. 'e7')."""
    view, element = _live(ctx, args.id)
    if _on_screen(view, element) and not view.covered(element):
        x, y = element.center
        _act(ctx, lambda: _input(ctx).click(x, y))
        return _described(element, via="pointer")
    action = _do_action(view, element)  # a click at its centre would miss it
    return _described(element, via="action", action=action)


def focus_element(args: ElementArgs, ctx: ToolContext) -> dict[str, Any]:
    """Give an element of the accessibility tree the keyboard focus, by its id."""
    view, element = _live(ctx, args.id)
    if "focusable" not in element.states:
        raise ToolFailure(
            INVALID_PARAMS, f"element {element.id} ({element.role}) cannot take focus"
        )
    try:
        _grab_focus(view, element)
    except A11yError as exc:
        raise ToolFailure(INTERNAL, f"focusing element {element.id} failed: {exc}") from exc
    return _described(element, focused=True)


def _grab_focus(view: ElementView, element: Element) -> None:
    """``Component.GrabFocus``, then the element's FOCUSED state read back from the live
    tree (an app may answer yes and not move its focus)."""
    if not view.reader.call(Call(element.ref, COMPONENT, "GrabFocus"))[0]:
        raise ToolFailure(INVALID_PARAMS, f"element {element.id} did not take the focus")
    if not _read_back(lambda: "focused" in view.reader.states(element), True):
        raise ToolFailure(
            INVALID_PARAMS, f"element {element.id} did not take the focus (it is not focused)"
        )


def _read_text(view: ElementView, element: Element) -> str:
    count = int(view.reader.call(prop(element.ref, TEXT, "CharacterCount"))[0][1])
    return str(view.reader.call(Call(element.ref, TEXT, "GetText", "ii", (0, count)))[0])


def _read_back(read: Any, expected: Any, timeout: float = 1.0) -> Any:
    """What ``read()`` gives once it equals ``expected``, or its last answer after
    ``timeout`` (an app applies a change on its own main loop)."""
    deadline = time.monotonic() + timeout
    while True:
        got = read()
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


def _keys_reach(view: ElementView, element: Element) -> None:
    """Make sure keys typed now reach ``element``: its window has the X input focus
    (activated when it has not) and the element is focused in the live tree; a
    ToolFailure (and nothing typed) when either does not hold."""
    window = view.window_of(element)
    if not window:
        raise ToolFailure(
            INVALID_PARAMS, f"the window of element {element.id} is not known: nothing typed"
        )
    if view.windows.focused().id != window:
        view.windows.activate(window)
        _read_back(lambda: view.windows.focused().id, window)
    _grab_focus(view, element)
    now = view.windows.focused()
    if now.id != window:
        raise ToolFailure(
            INVALID_PARAMS,
            f"the keyboard is on {now.label()}, not on the window of element {element.id}, "
            "and that window could not be activated: nothing typed",
        )


def _type_into(ctx: ToolContext, view: ElementView, element: Element, value: str) -> None:
    """Replace a field's text as a person would: focus it, select all, type; only once
    the keys are sure to reach it (:func:`_keys_reach`)."""
    _keys_reach(view, element)
    hands = _input(ctx)
    _act(ctx, lambda: hands.hotkey("ctrl+a"))
    if value:
        _act(ctx, lambda: hands.type_text(value))
    else:
        _act(ctx, lambda: hands.press_key("delete"))


def set_value(args: SetValueArgs, ctx: ToolContext) -> dict[str, Any]:
    """Set a text field's whole text, or a slider's or spin box's number, by element id."""
    view, element = _live(ctx, args.id)
    try:
        if EDITABLE_TEXT in element.interfaces and "editable" in element.states:
            call = Call(element.ref, EDITABLE_TEXT, "SetTextContents", "s", (args.value,))
            view.reader.call(call)
            now = _read_back(lambda: _read_text(view, element), args.value)
            if now != args.value:
                raise ToolFailure(
                    INVALID_PARAMS, f"element {element.id} holds {now[:200]!r} after the change"
                )
            return _described(element, chars=len(args.value))
        if TEXT in element.interfaces and "editable" in element.states:
            _type_into(ctx, view, element, args.value)  # Chromium has no EditableText
            now = _read_back(lambda: _read_text(view, element), args.value)
            if now != args.value:
                raise ToolFailure(
                    INVALID_PARAMS, f"element {element.id} holds {now[:200]!r} after typing"
                )
            return _described(element, chars=len(args.value), via="keyboard")
        if VALUE in element.interfaces:
            try:
                number = float(args.value)
            except ValueError as exc:
                raise ToolFailure(INVALID_PARAMS, f"{element.role} takes a number") from exc
            setting = ("org.a11y.atspi.Value", "CurrentValue", ("d", number))
            view.reader.call(Call(element.ref, PROPS, "Set", "ssv", setting))
            got = _read_back(
                lambda: float(view.reader.call(prop(element.ref, VALUE, "CurrentValue"))[0][1]),
                number,
            )
            if abs(got - number) > 1e-9:
                raise ToolFailure(
                    INVALID_PARAMS, f"element {element.id} is at {got:g}, not {number:g}"
                )
            return _described(element, value=got)
    except A11yError as exc:
        raise ToolFailure(INVALID_PARAMS, f"element {element.id} refused the value: {exc}") from exc
    raise ToolFailure(
        INVALID_PARAMS, f"element {element.id} ({element.role}) holds no value to set"
    )


def register_element_tools(registry: ToolRegistry) -> None:
    """Add ``click_element``, ``focus_element`` and ``set_value`` to ``registry``."""
    registry.register("click_element", click_element, ElementArgs, moves_input=True)
    registry.register("focus_element", focus_element, ElementArgs, settles=True)
    registry.register("set_value", set_value, SetValueArgs, moves_input=True)
