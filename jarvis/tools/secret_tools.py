"""``type_secret(name)`` and ``type_totp(name)``: Jarvis types a stored secret, the model
only names it (DESIGN.md section 17).

The model reads the secrets' names and descriptions in the tools' descriptions. A call:

1. is refused (-32006) for a task whose channel may not use secrets
   (:func:`jarvis.safety.channel_policy.secrets_refused`: email, a2a and mcp unless their
   block says ``secrets: true``), or when the place matches none of the secret's
   ``only_in`` patterns: in a web page whose URL the accessibility tree gives (the
   ``URI`` attribute of Chromium's and Firefox's ``document web`` element), that URL, since
   a page chooses its own title; elsewhere the focused window's title;
2. hides the focused field from every later picture of the screen before a key is typed
   (its box from the accessibility tree when there is one, else the focused window's);
3. types the value as keys (never through the clipboard), the value registered with the
   redaction so no text that leaves the process can carry it.

The audit line names the secret (its ``name`` argument is kept verbatim).
"""

from __future__ import annotations

import fnmatch
import logging
import time
from typing import Any

from pydantic import Field

from jarvis.config import Settings
from jarvis.desktop import x11
from jarvis.desktop.a11y.bus import A11yError, Call
from jarvis.desktop.a11y.tree import Tree
from jarvis.safety.channel_policy import secrets_refused
from jarvis.secrets.store import SecretInfo, SecretsError, SecretStore, open_store
from jarvis.secrets.totp import decode_seed, seconds_left, totp
from jarvis.tools.computer import Args, _act, _input
from jarvis.tools.context import ToolContext, WindowLike
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INTERNAL, INVALID_PARAMS, NOT_ALLOWED, ToolFailure

log = logging.getLogger(__name__)

FRESH_CODE_S = 3.0
"""A one-time code with less time left than this is not typed: the next one is."""
TEXT_ROLES = frozenset({"password text", "entry", "text", "editbar", "terminal", "combo box"})
DOCUMENT = "org.a11y.atspi.Document"


class SecretArgs(Args):
    name: str = Field(min_length=1, max_length=64, description="the secret's name")


def _listing(entries: list[SecretInfo]) -> str:
    return "; ".join(e.line() for e in entries) or "none"


def register_secret_tools(registry: ToolRegistry, settings: Settings) -> list[str]:
    """Offer ``type_secret`` (and ``type_totp`` when a TOTP seed is stored) when the data
    dir has secrets; their values are read now so the redaction knows them. The names of
    the tools registered."""
    store = open_store(settings.data_dir, settings.safety.secrets)
    try:
        entries = store.entries()
    except SecretsError as exc:
        log.warning("secrets: %s; type_secret is not offered", exc)
        return []
    try:
        store.load_all()
    except (SecretsError, OSError) as exc:  # the tools say it again when called
        log.warning("secrets cannot be read yet: %s", exc)
    passwords = [e for e in entries if e.kind == "password"]
    seeds = [e for e in entries if e.kind == "totp"]
    names = []
    if passwords:
        registry.register(
            "type_secret",
            _typer(store, "password"),
            SecretArgs,
            "Type a stored secret (a password) at the keyboard focus by its name: click the "
            "field first. You never see the value; the field is hidden in later screenshots. "
            f"Stored secrets: {_listing(passwords)}",
            audit_fields=("name",),
            moves_input=True,
        )
        names.append("type_secret")
    if seeds:
        registry.register(
            "type_totp",
            _typer(store, "totp"),
            SecretArgs,
            "Type the current one-time code (TOTP) of a stored seed at the keyboard focus by "
            f"its name: click the field first. Stored seeds: {_listing(seeds)}",
            audit_fields=("name",),
            moves_input=True,
        )
        names.append("type_totp")
    return names


def _typer(store: SecretStore, kind: str) -> Any:
    def run(args: SecretArgs, ctx: ToolContext) -> dict[str, Any]:
        info = _allowed(store, args.name, kind, ctx)
        window = ctx.windows.focused() if ctx.windows is not None else None
        tree = ctx.elements.read()[0] if ctx.elements is not None else None
        _check_place(info, window, page_url(ctx, tree))
        _check_typing(ctx)
        hidden = _hide_field(ctx, window, tree)
        value = _value(store, info)
        _act(ctx, lambda: _input(ctx).type_text(value))
        return {"typed": info.name, "into": window.title if window else "", "hidden": hidden}

    run.__doc__ = "Type a stored secret by its name."
    return run


def _allowed(store: SecretStore, name: str, kind: str, ctx: ToolContext) -> SecretInfo:
    reason = secrets_refused(ctx.settings.channels, ctx.channels)
    if reason is not None:
        raise ToolFailure(NOT_ALLOWED, f"not run: {reason}")
    try:
        info = store.get(name)
    except SecretsError as exc:
        raise ToolFailure(INTERNAL, str(exc)) from exc
    if info is None or info.kind != kind:
        same = [e.name for e in store.entries() if e.kind == kind]
        other = "type_totp" if kind == "password" else "type_secret"
        hint = f" ('{name}' is for {other})" if info is not None else ""
        known = ", ".join(same) or "none"
        raise ToolFailure(INVALID_PARAMS, f"no such secret '{name}'{hint}; known: {known}")
    return info


def page_url(ctx: ToolContext, tree: Tree | None) -> str:
    """The URL of the web page in the focused window's tree ("" when it shows none)."""
    if ctx.elements is None or tree is None:
        return ""
    for doc in tree.elements:
        if doc.role != "document web" or DOCUMENT not in doc.interfaces:
            continue
        try:
            found = ctx.elements.reader.call(
                Call(doc.ref, DOCUMENT, "GetAttributeValue", "s", ("URI",))
            )
        except A11yError as exc:
            log.debug("no URL from %s: %s", doc.id, exc)
            continue
        if found and str(found[0]):
            return str(found[0])
    return ""


def _check_place(info: SecretInfo, window: WindowLike | None, url: str = "") -> None:
    """Refuse a place that matches none of the secret's ``only_in`` patterns: the page's
    URL where there is one, else the focused window's title."""
    if not info.only_in:
        return
    title = window.title if window is not None else ""
    place = url or title
    if any(fnmatch.fnmatch(place.lower(), p.lower()) for p in info.only_in):
        return
    where = f"the page is {url!r}" if url else f"the focused window is {title or '(untitled)'!r}"
    raise ToolFailure(
        NOT_ALLOWED,
        f"not run: '{info.name}' may only be typed into "
        f"{'pages' if url else 'windows'} matching {', '.join(info.only_in)}; {where}",
    )


def _check_typing(ctx: ToolContext) -> None:
    """A secret is typed as keys: a paste would leave it on the clipboard. A wlroots
    desktop types through its virtual keyboard (wtype, the text on its stdin); X11 through
    xdotool unless ``type_method`` is ``clipboard``."""
    if getattr(ctx.input, "type_method", "") == "wtype":
        return
    if ctx.settings.type_method == "clipboard" or not x11.have("xdotool"):
        raise ToolFailure(
            NOT_ALLOWED,
            "not run: a secret is typed as keys and this desktop would paste it "
            "(type_method clipboard, or no xdotool)",
        )


def _hide_field(ctx: ToolContext, window: WindowLike | None, tree: Tree | None) -> str:
    """Mask the focused field (or window) in every later picture; what was masked."""
    box, what = None, ""
    if tree is not None:
        focused = [e for e in tree.elements if "focused" in e.states and e.role in TEXT_ROLES]
        if focused:
            box, what = focused[-1].bounds, "field"
    if box is None and window is not None and window.box is not None:
        box, what = window.box, "window"
    if box is None or ctx.masks is None:
        raise ToolFailure(
            NOT_ALLOWED, "not run: the focused field cannot be found to hide it from screenshots"
        )
    ctx.masks.add(box, ctx.settings.safety.secrets.mask_s)
    return what


def _value(store: SecretStore, info: SecretInfo) -> str:
    try:
        value = store.value(info.name)
    except SecretsError as exc:
        raise ToolFailure(INTERNAL, str(exc)) from exc
    if info.kind == "password":
        return value
    if seconds_left() < FRESH_CODE_S:  # about to change: type the next one
        time.sleep(seconds_left() + 0.05)
    return totp(decode_seed(value))
