"""`jarvis memory ...` through its real argparse wiring, on a temp data dir."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import get_args

import pytest

from jarvis.cli import build_parser
from jarvis.config import load_settings
from jarvis.memory.commands import TYPES
from jarvis.memory.long_term import MemoryType


def jarvis(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Parse like `jarvis ...` and call the handler the way jarvis.cli does."""
    parser = build_parser()  # the real `jarvis` parser: --data-dir is the CLI's
    args = parser.parse_args(argv)
    code = args.handler(args, load_settings(args.data_dir))
    return code, capsys.readouterr().out


def test_add_search_list_forget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(tmp_path)
    code, out = jarvis(capsys, "memory", "add", "I like dark mode everywhere", "--data-dir", d)
    assert code == 0
    pref_id = out.strip()
    code, out = jarvis(
        capsys, "memory", "--data-dir", d, "add", "Ctrl+Alt+T opens a terminal",
        "--type", "skill", "--importance", "8", "--task-id", "T7",
    )  # fmt: skip
    skill_id = out.strip()

    code, out = jarvis(capsys, "memory", "search", "which theme?", "--top-k", "1", "--data-dir", d)
    assert code == 0
    assert pref_id in out and "dark mode" in out and skill_id not in out

    code, out = jarvis(
        capsys, "memory", "search", "theme", "--type", "skill", "--json", "--data-dir", d
    )
    (hit,) = [json.loads(line) for line in out.splitlines()]
    assert hit["memory"]["id"] == skill_id
    assert hit["memory"]["access_count"] == 0  # browsing from the shell is not a use
    assert hit["memory"]["task_ids"] == ["T7"] and hit["memory"]["importance"] == 8

    code, out = jarvis(capsys, "memory", "list", "--json", "--data-dir", d)
    assert [json.loads(line)["id"] for line in out.splitlines()] == [pref_id, skill_id]
    code, out = jarvis(capsys, "memory", "list", "--type", "preference", "--data-dir", d)
    assert pref_id in out and skill_id not in out and "1 memories" in out

    assert jarvis(capsys, "memory", "forget", pref_id, "--data-dir", d) == (
        0,
        f"forgot {pref_id}\n",
    )
    code, out = jarvis(capsys, "memory", "forget", pref_id, "--data-dir", d)
    assert code == 1 and "no memory" in out
    skills = json.loads((tmp_path / "memory/long_term/skills.json").read_text())
    assert [m["id"] for m in skills["memories"]] == [skill_id]


def test_compress_and_repair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(tmp_path)
    for text in ("The user prefers dark mode.", "The user prefers dark mode!"):
        jarvis(capsys, "memory", "add", text, "--data-dir", d)
    jarvis(capsys, "memory", "add", "Zero importance note", "--importance", "0", "--data-dir", d)

    code, out = jarvis(capsys, "memory", "compress", "--dry-run", "--data-dir", d)
    assert code == 0 and "would forget 1" in out and "->" in out
    code, out = jarvis(capsys, "memory", "compress", "--data-dir", d)
    assert code == 0 and "forgot 1" in out
    code, out = jarvis(capsys, "memory", "list", "--data-dir", d)
    assert "1 memories" in out

    prefs = tmp_path / "memory/long_term/preferences.json"
    prefs.write_text('{"version": 1, "type": "preference", "memories": []}\n')
    code, out = jarvis(capsys, "memory", "repair", "--data-dir", d)
    assert code == 0
    assert "found: preferences.json differs" in out and "rewrote preferences.json;" in out
    assert len(json.loads(prefs.read_text())["memories"]) == 1


def test_usage_and_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = jarvis(capsys, "memory", "--data-dir", str(tmp_path))
    assert code == 2 and "compress" in out
    with pytest.raises(SystemExit):
        jarvis(capsys, "memory", "add", "x", "--importance", "11")
    with pytest.raises(SystemExit):
        jarvis(capsys, "memory", "list", "--type", "opinion")
    assert set(TYPES) == set(get_args(MemoryType))


def test_a_broken_embedding_setting_is_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()  # the real `jarvis` parser: --data-dir is the CLI's
    args = parser.parse_args(["memory", "list"])
    settings = SimpleNamespace(data_dir=tmp_path, embedding="onnx-dir", embedding_model_dir=None)
    assert args.handler(args, settings) == 1
    assert "embedding_model_dir" in capsys.readouterr().out
