"""``only_in`` by URL: in Chromium (its accessibility tree on a private bus) a login page on
a loopback port; the page's URL comes from the tree (the ``URI`` attribute of its
``document web`` element). A secret limited to ``*github.com*`` is refused there, and so
is one whose pattern matches only the page's title (a page picks its own title); one
limited to the page's host:port is typed, and the page takes it."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import Settings, load_settings
from jarvis.desktop.a11y.session import A11ySession
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.x11 import XDisplay
from jarvis.secrets.store import SecretInfo, SecretStore
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.results import NOT_ALLOWED
from tests.a11yapps import publishing_env, start_chromium
from tests.login_site import LoginSite
from tests.xserver import Xvfb

PASSWORD = "url-bound-Secret-71"


@pytest.fixture(scope="module")
def session(xserver: Xvfb) -> Iterator[A11ySession]:
    with A11ySession(xserver.env()) as started:
        yield started


def _settings(data: Path, session: A11ySession) -> Settings:
    return load_settings(
        data,
        safety={"secrets": {"store": "file"}},
        observation="screenshot+tree",
        a11y_session_bus=session.address,
    )


def _type_secret(
    settings: Settings, desktop: Desktop, only_in: list[str]
) -> tuple[int | None, str]:
    store = SecretStore(settings.data_dir, settings.safety.secrets)
    store.add(SecretInfo(name="site", description="Example", only_in=only_in), PASSWORD)
    registry = build_registry(settings, presets=[])
    ctx = ToolContext.for_task(
        settings,
        "T1",
        screen=desktop.screen,
        input=desktop.input,
        windows=desktop.windows,
        masks=desktop.screen.masks,
        elements=desktop.elements,
    )
    result = asyncio.run(registry.execute("type_secret", {"name": "site"}, ctx))
    error = result.error
    return (error.code, error.message) if error else (None, json.dumps(result.data))


def test_only_in_matches_the_page_url_from_the_tree(
    xserver: Xvfb,
    session: A11ySession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JARVIS_SECRETS_KEY", "the user's passphrase")
    site = LoginSite(PASSWORD)
    work = tmp_path / "work"
    work.mkdir()
    app = start_chromium(work, publishing_env(work, xserver.env(), session), site.url)
    settings = _settings(tmp_path / "data", session)
    try:
        site.wait("rects")
        px, py = site.centre("pw")
        argv = ["xdotool", "mousemove", str(px), str(py), "click", "1"]
        subprocess.run(argv, env=xserver.env(), check=True, timeout=30)
        with Desktop.open(settings, XDisplay.from_env()) as desktop:
            assert desktop.elements is not None
            title = desktop.windows.focused().title
            assert "Example login" in title, title
            code, said = _type_secret(settings, desktop, ["*github.com*"])
            assert code == NOT_ALLOWED, said
            assert f"the page is '{site.url}'" in said and "*github.com*" in said, said
            # the title matches, the URL does not: a page's title is not trusted
            code, said = _type_secret(settings, desktop, ["*Example login*"])
            assert code == NOT_ALLOWED and f"the page is '{site.url}'" in said, said
            host_port = site.url.split("//")[1].rstrip("/")
            code, said = _type_secret(settings, desktop, [f"*://{host_port}/*"])
            assert code is None, said
            assert PASSWORD not in said and '"hidden": "field"' in said, said
        subprocess.run(["xdotool", "key", "Return"], env=xserver.env(), check=True, timeout=30)
        site.wait("logins")
        assert site.logins == [True]  # the refused calls typed nothing; the third typed it
    finally:
        app.close()
        site.close()
