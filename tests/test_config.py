"""Settings precedence: defaults < settings.json < JARVIS_* env < CLI flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.config import ConfigError, load_settings


def write_settings(data_dir: Path, payload: object) -> Path:
    path = data_dir / "config" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return path


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("JARVIS_"):
            monkeypatch.delenv(name)


def test_defaults(tmp_path: Path) -> None:
    s = load_settings(tmp_path)
    assert s.max_side == 1280
    assert s.failsafe is True
    assert s.data_dir == tmp_path


@pytest.mark.parametrize(
    ("file", "env", "cli", "expected"),
    [
        (None, None, None, 30),
        (12, None, None, 12),
        (12, "13", None, 13),
        (12, "13", 14, 14),
        (None, "13", None, 13),
        (None, None, 14, 14),
    ],
)
def test_precedence(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    file: int | None,
    env: str | None,
    cli: int | None,
    expected: int,
) -> None:
    if file is not None:
        write_settings(tmp_path, {"max_steps": file})
    if env is not None:
        monkeypatch.setenv("JARVIS_MAX_STEPS", env)
    assert load_settings(tmp_path, max_steps=cli).max_steps == expected


def test_data_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_settings().data_dir == Path("data")
    monkeypatch.setenv("JARVIS_DATA_DIR", str(tmp_path / "env"))
    assert load_settings().data_dir == tmp_path / "env"
    assert load_settings(tmp_path / "cli").data_dir == tmp_path / "cli"


def test_nested_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_settings(tmp_path, {"tools": {"deny": ["drag"], "timeout_s": 5}})
    monkeypatch.setenv("JARVIS_TOOLS__DENY", '["scroll"]')
    s = load_settings(tmp_path)
    assert s.tools.deny == ["scroll"]


def test_malformed_json_names_file(tmp_path: Path) -> None:
    path = write_settings(tmp_path, '{"max_steps": 3,,}')
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path)
    assert str(path) in str(err.value)
    assert "line 1" in str(err.value)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"max_steps": "many"}, "max_steps"),
        ({"image_format": "gif"}, "image_format"),
        ({"tools": {"timeout_s": -1}}, "tools.timeout_s"),
        ({"no_such_setting": 1}, "no_such_setting"),
    ],
)
def test_bad_field_names_file_and_field(tmp_path: Path, payload: dict, field: str) -> None:
    path = write_settings(tmp_path, payload)
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path)
    message = str(err.value)
    assert str(path) in message
    assert f"'{field}'" in message


def test_top_level_must_be_object(tmp_path: Path) -> None:
    write_settings(tmp_path, "[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        load_settings(tmp_path)
