"""Secrets: RFC 6238 codes, the encrypted store, `jarvis secrets`, and type_secret /
type_totp on the real Tk app under Xvfb (channel policy, only_in, the mask, the audit)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis import redaction
from jarvis.cli import main
from jarvis.config import Settings, load_settings
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.masks import MASK_FILL
from jarvis.desktop.x11 import XDisplay
from jarvis.secrets.store import SecretInfo, SecretsError, SecretStore
from jarvis.secrets.totp import decode_seed, totp
from jarvis.tools.audit import audit_path, read_audit
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.results import NOT_ALLOWED
from tests.tkdriver import TkApp
from tests.xserver import Xvfb

# RFC 6238 appendix B, SHA1: the seed is the ASCII "12345678901234567890"
RFC_SEED = b"12345678901234567890"
RFC_VECTORS = [
    (59, "94287082"),
    (1111111109, "07081804"),
    (1111111111, "14050471"),
    (1234567890, "89005924"),
    (2000000000, "69279037"),
    (20000000000, "65353130"),
]
PASSWORD = "correct-horse-7Qz!battery"
SEED = "JBSWY3DPEHPK3PXP"
PASSPHRASE = "a passphrase the user holds"


@pytest.mark.parametrize(("at", "code"), RFC_VECTORS)
def test_totp_gives_the_rfc_6238_sha1_vectors(at: int, code: str) -> None:
    assert totp(RFC_SEED, at, digits=8) == code


def test_a_base32_seed_decodes_and_a_bad_one_is_one_line() -> None:
    assert decode_seed("gezd gnbv gy3t qojq gezd gnbv gy3t qojq") == RFC_SEED
    with pytest.raises(ValueError, match="base32"):
        decode_seed("not base32!")


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JARVIS_SECRETS_KEY", PASSPHRASE)


def _settings(data: Path, **overrides: object) -> Settings:
    return load_settings(data, safety={"secrets": {"store": "file"}}, **overrides)


def test_the_file_store_keeps_values_encrypted_and_wants_the_passphrase(
    tmp_path: Path, secret_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path / "data")
    store = SecretStore(settings.data_dir, settings.safety.secrets)
    store.add(SecretInfo(name="site", description="the site's password"), PASSWORD)
    for path in (settings.data_dir / "config").iterdir():
        assert PASSWORD.encode() not in path.read_bytes()
        assert path.stat().st_mode & 0o077 == 0  # 0600
    assert SecretStore(settings.data_dir, settings.safety.secrets).value("site") == PASSWORD
    monkeypatch.setenv("JARVIS_SECRETS_KEY", "not the passphrase")
    with pytest.raises(SecretsError, match="wrong passphrase"):
        SecretStore(settings.data_dir, settings.safety.secrets).value("site")
    monkeypatch.delenv("JARVIS_SECRETS_KEY")
    with pytest.raises(SecretsError, match="JARVIS_SECRETS_KEY"):
        SecretStore(settings.data_dir, settings.safety.secrets).value("site")


def test_jarvis_secrets_add_list_remove(
    tmp_path: Path,
    secret_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = str(tmp_path / "data")
    (tmp_path / "data" / "config").mkdir(parents=True)
    settings_file = tmp_path / "data" / "config" / "settings.json"
    settings_file.write_text(json.dumps({"safety": {"secrets": {"store": "file"}}}))
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    args = ["secrets", "add", "site", "--description", "the site", "--only-in", "*example*"]
    assert main([*args, "--data-dir", data]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("not base32!"))
    assert main(["secrets", "add", "otp", "--totp", "--data-dir", data]) == 2
    capsys.readouterr()
    assert main(["secrets", "list", "--json", "--data-dir", data]) == 0
    listed = json.loads(capsys.readouterr().out)["secrets"]
    assert [(s["name"], s["description"], s["only_in"]) for s in listed] == [
        ("site", "the site", ["*example*"])
    ]
    assert main(["secrets", "list", "--data-dir", data]) == 0
    shown = capsys.readouterr().out
    assert "site: the site" in shown and PASSWORD not in shown
    assert main(["secrets", "add", "bad name!", "--data-dir", data]) == 2
    assert main(["secrets", "remove", "site", "--data-dir", data]) == 0
    assert main(["secrets", "remove", "site", "--data-dir", data]) == 1
    assert "no secret named" in capsys.readouterr().out


# ---------------------------------------------------------------- the tools on a real desktop


@pytest.fixture
def desktop(xserver: Xvfb, tmp_path: Path) -> Iterator[Desktop]:
    with Desktop.open(Settings(data_dir=tmp_path / "d0"), XDisplay.from_env()) as opened:
        yield opened


def _stored(data: Path, only_in: list[str] | None = None) -> None:
    settings = _settings(data)
    store = SecretStore(settings.data_dir, settings.safety.secrets)
    store.add(SecretInfo(name="site", description="the site", only_in=only_in or []), PASSWORD)
    store.add(SecretInfo(name="otp", description="the site's codes", kind="totp"), SEED)


def _entry(app: TkApp) -> str:
    app.sync()  # the keys the app took are in before the sync's answer
    return app.entry_text()


def _call(
    settings: Settings, desktop: Desktop, tool: str, channels: tuple[str, ...] = ()
) -> tuple[int | None, str]:
    registry = build_registry(settings, presets=[])
    ctx = ToolContext.for_task(
        settings,
        "T1",
        screen=desktop.screen,
        input=desktop.input,
        channels=channels,
        windows=desktop.windows,
        masks=desktop.screen.masks,
    )
    result = asyncio.run(
        registry.execute(tool, {"name": "site" if tool == "type_secret" else "otp"}, ctx)
    )
    error = result.error
    return (error.code, error.message) if error else (None, json.dumps(result.data))


def test_type_secret_types_masks_and_audits_by_name(
    tkapp: TkApp, desktop: Desktop, tmp_path: Path, secret_env: None
) -> None:
    data = tmp_path / "data"
    _stored(data)
    settings = _settings(data)
    registry = build_registry(settings, presets=[])
    spec = next(s for s in registry.specs() if s.name == "type_secret")
    assert "site: the site" in spec.description and PASSWORD not in spec.description
    assert "type_totp" in registry.names
    tkapp.focus("box")
    desktop.screen.masks.clear()
    code, said = _call(settings, desktop, "type_secret")
    assert code is None, said
    assert _entry(tkapp) == PASSWORD
    assert PASSWORD not in said and '"typed": "site"' in said
    # the focused window (Tk publishes no tree) is hidden from every later picture
    x, y = tkapp.widget_center("box")
    shot = desktop.screen.capture()
    mx, my = desktop.screen.to_model(x, y)
    assert shot.image.getpixel((mx, my)) == MASK_FILL
    lines = read_audit(audit_path(settings.data_dir))
    assert [(r["tool_name"], r["args"], r["ok"]) for r in lines] == [
        ("type_secret", {"name": "site"}, True)
    ]
    assert PASSWORD not in audit_path(settings.data_dir).read_text()
    assert PASSWORD in redaction.known_secrets()  # registered: every text out is redacted
    desktop.screen.masks.clear()
    assert desktop.screen.capture().image.getpixel((mx, my)) != MASK_FILL


def test_only_in_refuses_another_window(
    tkapp: TkApp, desktop: Desktop, tmp_path: Path, secret_env: None
) -> None:
    tkapp.focus("box")
    title = desktop.windows.focused().title
    assert title
    _stored(tmp_path / "data", only_in=["*github.com*"])
    settings = _settings(tmp_path / "data")
    code, said = _call(settings, desktop, "type_secret")
    assert code == NOT_ALLOWED and "*github.com*" in said and title in said, said
    assert said.startswith("not run:")
    tkapp.sync()
    assert tkapp.entry_text() == ""
    _stored(tmp_path / "data", only_in=["*github.com*", f"{title[:3]}*"])
    assert _call(settings, desktop, "type_secret")[0] is None
    assert _entry(tkapp) == PASSWORD


def test_an_email_task_gets_no_secret_unless_its_channel_allows_it(
    tkapp: TkApp, desktop: Desktop, tmp_path: Path, secret_env: None
) -> None:
    _stored(tmp_path / "data")
    tkapp.focus("box")
    for channel in ("email", "a2a", "mcp"):
        code, said = _call(_settings(tmp_path / "data"), desktop, "type_secret", (channel,))
        assert code == NOT_ALLOWED and f"channel '{channel}'" in said, said
    tkapp.sync()
    assert tkapp.entry_text() == ""
    denied = _settings(tmp_path / "data", channels={"tui": {"secrets": False}})
    assert _call(denied, desktop, "type_secret", ("tui",))[0] == NOT_ALLOWED
    allowed = _settings(tmp_path / "data", channels={"email": {"secrets": True}})
    assert _call(allowed, desktop, "type_secret", ("email",))[0] is None
    assert _entry(tkapp) == PASSWORD


def test_type_totp_types_the_current_code(
    tkapp: TkApp, desktop: Desktop, tmp_path: Path, secret_env: None
) -> None:
    import time

    _stored(tmp_path / "data")
    tkapp.focus("box")
    code, said = _call(_settings(tmp_path / "data"), desktop, "type_totp")
    assert code is None, said
    now = time.time()
    expected = {totp(decode_seed(SEED), now), totp(decode_seed(SEED), now - 30)}
    assert _entry(tkapp) in expected
