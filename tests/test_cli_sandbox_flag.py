"""`--sandbox` takes an optional kind (x11, wayland) on `run`, `eval`, `serve` and `worker`;
with none it is x11, wherever the task or suite stands (the flag before the task must not
eat it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jarvis.cli import bare_sandbox, build_parser


@pytest.mark.parametrize(
    ("argv", "kind", "task"),
    [
        (["run", "--sandbox", "open the notes"], "x11", "open the notes"),
        (["run", "open the notes", "--sandbox"], "x11", "open the notes"),
        (["run", "--sandbox", "wayland", "open the notes"], "wayland", "open the notes"),
        (["run", "open the notes", "--sandbox", "x11"], "x11", "open the notes"),
        (["--data-dir", "d", "run", "--sandbox", "go"], "x11", "go"),
    ],
)
def test_run_sandbox_kind(argv: list[str], kind: str, task: str) -> None:
    args = build_parser().parse_args(bare_sandbox(argv))
    assert (args.sandbox, args.task) == (kind, task)


def test_eval_and_serve() -> None:
    assert build_parser().parse_args(bare_sandbox(["eval", "--sandbox", "s.yaml"])).sandbox == "x11"
    assert build_parser().parse_args(bare_sandbox(["serve", "--sandbox"])).sandbox == "x11"
    assert bare_sandbox(["run", "--", "--sandbox"]) == ["run", "--", "--sandbox"]


def test_serve_and_worker_take_a_kind() -> None:
    parse = build_parser().parse_args
    assert parse(bare_sandbox(["serve", "--sandbox", "wayland"])).sandbox == "wayland"
    assert parse(bare_sandbox(["serve", "--sandbox", "--http", "off"])).sandbox == "x11"
    assert parse(["serve"]).sandbox is None
    assert parse(bare_sandbox(["worker", "--sandbox", "--name", "w"])).sandbox == "x11"
    assert parse(bare_sandbox(["worker", "--sandbox", "wayland"])).sandbox == "wayland"
    assert parse(["worker"]).sandbox is None
    with pytest.raises(SystemExit):
        parse(["serve", "--sandbox", "mir"])


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--sandbox", "open the notes"],
        ["run", "--sandbox", "wayland", "open the notes"],
        ["serve", "--sandbox", "--http", "off"],
        ["worker", "--sandbox", "--redis", "redis://127.0.0.1:1"],
    ],
)
def test_no_key_is_said_before_any_private_display_starts(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41 point 6: every command checks the key before it starts a display. Xvfb and
    sway on PATH are spies that leave a mark: none may be started."""
    import subprocess
    import sys

    spies = tmp_path / "bin"
    spies.mkdir()
    for name in ("Xvfb", "sway"):
        spy = spies / name
        spy.write_text(f"#!/bin/sh\ntouch {tmp_path}/started-{name}\nexit 1\n")
        spy.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PATH"] = f"{spies}:{env['PATH']}"
    done = subprocess.run(
        [sys.executable, "-m", "jarvis", *argv, "--data-dir", str(tmp_path / "data")],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 1 and "ANTHROPIC_API_KEY is not set" in said, said
    assert len(said.splitlines()) == 1 and "Traceback" not in said
    assert not list(tmp_path.glob("started-*")), "a display was started before the key check"
