"""Opening an Xlib connection: the one place every python-xlib ``Display`` is made.

python-xlib reads the cookie file (``$XAUTHORITY``, else ``~/.Xauthority``) before it
connects and raises ``XauthError`` when that file does not exist. libX11 does not: with
no cookie file it connects without a cookie, which is what an X server started without
``-auth`` (``Xvfb :1 &`` in a container, many VNC servers) expects. :func:`open_display`
does what libX11 does: a missing or unreadable cookie file means "no cookie", and a server
that wants one refuses the connection with its own clear error.

pyautogui (and mouseinfo, which it imports) open their own connection at import time, so
:func:`allow_missing_xauthority` must run before they are imported; :func:`open_display`
calls it too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_MARK = "_jarvis_no_cookie_ok"


def allow_missing_xauthority() -> None:
    """Make python-xlib connect without a cookie when the cookie file is missing
    (``XauthError``), as libX11 does. Idempotent; affects only that one case."""
    from Xlib.support import unix_connect

    if getattr(unix_connect.get_auth, _MARK, False):
        return
    unix_connect.get_auth = _without_missing_file(unix_connect.get_auth)


def _without_missing_file(get_auth: Callable[..., tuple[Any, Any]]) -> Callable[..., Any]:
    from Xlib.error import XauthError

    def get_auth_or_none(sock: Any, dname: str, host: str, dno: int) -> tuple[Any, Any]:
        try:
            return get_auth(sock, dname, host, dno)
        except XauthError as exc:  # no cookie file: connect without a cookie
            log.debug("no X cookie file (%s): connecting to %s without one", exc, dname)
            return "", ""

    setattr(get_auth_or_none, _MARK, True)
    return get_auth_or_none


def open_display(name: str | None = None) -> Any:
    """An ``Xlib.display.Display`` for ``name`` (default ``$DISPLAY``). Raises python-xlib's
    ``DisplayError`` (no server there, or it refused us) like ``Display()`` itself."""
    from Xlib.display import Display

    allow_missing_xauthority()
    return Display(name)
