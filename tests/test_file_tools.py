"""read_file, write_file and list_dir through the real registry: what they do inside the
workspace, and a table of escape attempts that must each be refused with the right code
while nothing outside the workspace is read or written."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from jarvis.config import Settings
from jarvis.tools.audit import audit_path, read_audit
from jarvis.tools.context import ToolContext
from jarvis.tools.files import register_file_tools
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INVALID_PARAMS, NOT_ALLOWED, ToolResult
from jarvis.tools.toolbox_settings import ToolboxSettings, WorkspaceSettings

SECRET = "outside secret: do not read\n"


def make_settings(tmp_path: Path, **workspace: Any) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        toolbox=ToolboxSettings(workspace=WorkspaceSettings(**workspace)),
    )


def call(
    settings: Settings, name: str, args: dict[str, Any], channels: tuple[str, ...] = ()
) -> ToolResult:
    registry = ToolRegistry(settings)
    register_file_tools(registry)
    ctx = ToolContext.for_task(settings, "t-files", channels=channels)
    return asyncio.run(registry.execute(name, args, ctx))


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """A workspace with a file, a folder and inside links, and an outside folder with a
    secret; returns the paths and a fingerprint of the outside."""
    settings = make_settings(tmp_path, max_read_bytes=1000, max_write_bytes=1000)
    ws = tmp_path / "data" / "workspace"
    ws.mkdir(parents=True)
    (ws / "notes.txt").write_text("hello workspace\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "deep.txt").write_text("deep\n")
    os.symlink("notes.txt", ws / "inside_link")
    os.symlink(str(ws / "sub"), ws / "abs_inside_link")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    os.symlink(str(outside / "secret.txt"), ws / "link_out")
    os.symlink("../../outside", ws / "dir_link_out")
    os.symlink("loop_b", ws / "loop_a")
    os.symlink("loop_a", ws / "loop_b")
    os.symlink("/dev/zero", ws / "dev_link")
    os.mkfifo(ws / "pipe")
    (ws / "big.txt").write_bytes(b"x" * 5000)
    return {"settings": settings, "ws": ws, "outside": outside, "before": fingerprint(outside)}


def fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_read_write_list_inside_the_workspace(world: dict[str, Any]) -> None:
    settings, ws = world["settings"], world["ws"]
    read = call(settings, "read_file", {"path": "notes.txt"})
    assert read.ok and read.data["content"] == "hello workspace\n"
    linked = call(settings, "read_file", {"path": "inside_link"})
    assert linked.data["content"] == "hello workspace\n"
    assert call(settings, "read_file", {"path": "abs_inside_link/deep.txt"}).ok
    assert call(settings, "read_file", {"path": str(ws / "sub" / "deep.txt")}).ok  # absolute inside
    assert call(settings, "read_file", {"path": "sub/../notes.txt"}).ok

    wrote = call(settings, "write_file", {"path": "new/dir/out.txt", "content": "héllo"})
    assert wrote.ok and wrote.data == {"path": "new/dir/out.txt", "bytes": 6, "created": True}
    assert (ws / "new" / "dir" / "out.txt").read_text() == "héllo"
    again = call(settings, "write_file", {"path": "new/dir/out.txt", "content": "second"})
    assert again.ok and again.data["created"] is False
    assert (ws / "new" / "dir" / "out.txt").read_text() == "second"
    assert not [p for p in (ws / "new" / "dir").iterdir() if p.name.endswith(".tmp")]

    listing = call(settings, "list_dir", {})
    assert listing.ok
    kinds = {e["name"]: e["kind"] for e in listing.data["entries"]}
    assert kinds["notes.txt"] == "file" and kinds["sub"] == "dir" and kinds["pipe"] == "FIFO"
    assert kinds["link_out"] == "symlink"
    assert call(settings, "list_dir", {"path": "sub"}).data["entries"] == [
        {"name": "deep.txt", "kind": "file", "bytes": 5}
    ]


ESCAPES = [
    ("read_file", {"path": "../outside/secret.txt"}, NOT_ALLOWED, "above the workspace"),
    ("read_file", {"path": "sub/../../outside/secret.txt"}, NOT_ALLOWED, "above the workspace"),
    ("read_file", {"path": "OUTSIDE/secret.txt"}, NOT_ALLOWED, "absolute path outside"),
    ("read_file", {"path": "/etc/passwd"}, NOT_ALLOWED, "absolute path outside"),
    ("read_file", {"path": "link_out"}, NOT_ALLOWED, "symlink that leads outside"),
    ("read_file", {"path": "dir_link_out/secret.txt"}, NOT_ALLOWED, "above the workspace"),
    ("read_file", {"path": "loop_a"}, NOT_ALLOWED, "symlink loop"),
    ("read_file", {"path": "dev_link"}, NOT_ALLOWED, "symlink that leads outside"),
    ("read_file", {"path": "pipe"}, NOT_ALLOWED, "is a FIFO"),
    ("read_file", {"path": "big.txt"}, NOT_ALLOWED, "reads at most 1000"),
    ("read_file", {"path": "sub"}, NOT_ALLOWED, "is a dir"),
    ("read_file", {"path": "nope.txt"}, INVALID_PARAMS, "does not exist"),
    ("read_file", {"path": "a\x00b"}, NOT_ALLOWED, "NUL"),
    ("write_file", {"path": "../escaped.txt", "content": "x"}, NOT_ALLOWED, "above"),
    ("write_file", {"path": "OUTSIDE/new.txt", "content": "x"}, NOT_ALLOWED, "absolute"),
    ("write_file", {"path": "link_out", "content": "pwned"}, NOT_ALLOWED, "leads outside"),
    ("write_file", {"path": "dir_link_out/new.txt", "content": "x"}, NOT_ALLOWED, "above"),
    ("write_file", {"path": "loop_b/x.txt", "content": "x"}, NOT_ALLOWED, "symlink loop"),
    ("write_file", {"path": "pipe", "content": "x"}, NOT_ALLOWED, "is a FIFO"),
    ("write_file", {"path": "sub", "content": "x"}, NOT_ALLOWED, "is a dir"),
    ("write_file", {"path": "huge.txt", "content": "y" * 1001}, NOT_ALLOWED, "at most 1000"),
    ("write_file", {"path": "notes.txt/x", "content": "x"}, INVALID_PARAMS, "not a folder"),
    ("list_dir", {"path": ".."}, NOT_ALLOWED, "above the workspace"),
    ("list_dir", {"path": "dir_link_out"}, NOT_ALLOWED, "above the workspace"),
    ("list_dir", {"path": "/"}, NOT_ALLOWED, "absolute path outside"),
    ("list_dir", {"path": "notes.txt"}, NOT_ALLOWED, "not a folder"),
]


@pytest.mark.parametrize(("tool", "args", "code", "reason"), ESCAPES)
def test_escape_attempts_are_refused(
    world: dict[str, Any], tool: str, args: dict[str, Any], code: int, reason: str
) -> None:
    args = {k: v.replace("OUTSIDE", str(world["outside"])) for k, v in args.items()}
    result = call(world["settings"], tool, args)
    assert not result.ok and result.error is not None
    assert result.error.code == code, result.error.message
    assert reason in result.error.message
    assert "outside secret" not in result.to_content()
    assert fingerprint(world["outside"]) == world["before"]  # nothing written outside
    assert not (world["ws"].parent / "escaped.txt").exists()
    assert sorted(p.name for p in world["outside"].iterdir()) == ["secret.txt"]
    assert os.readlink(world["ws"] / "link_out") == str(world["outside"] / "secret.txt")


def test_read_only_workspace_and_the_email_channel(world: dict[str, Any], tmp_path: Path) -> None:
    read_only = make_settings(tmp_path, read_only=True)
    refused = call(read_only, "write_file", {"path": "a.txt", "content": "x"})
    assert refused.error is not None and refused.error.code == NOT_ALLOWED
    assert "read-only" in refused.error.message
    assert call(read_only, "read_file", {"path": "notes.txt"}).ok

    settings = world["settings"]
    by_mail = call(settings, "write_file", {"path": "m.txt", "content": "x"}, channels=("email",))
    assert by_mail.error is not None and by_mail.error.code == NOT_ALLOWED
    assert "channel 'email'" in by_mail.error.message
    assert not (world["ws"] / "m.txt").exists()
    assert call(settings, "read_file", {"path": "notes.txt"}, channels=("email",)).ok
    assert call(settings, "write_file", {"path": "m.txt", "content": "x"}, channels=("tui",)).ok
    lines = read_audit(audit_path(settings.data_dir))
    assert [(r["tool_name"], r["ok"], r["channel"]) for r in lines[-2:]] == [
        ("read_file", True, "email"),
        ("write_file", True, "tui"),
    ]


def test_binary_files_are_not_read_as_text(world: dict[str, Any]) -> None:
    (world["ws"] / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    result = call(world["settings"], "read_file", {"path": "blob.bin"})
    assert result.error is not None and result.error.code == NOT_ALLOWED
    assert "not UTF-8" in result.error.message


def test_a_hard_link_to_an_outside_file_is_not_read(world: dict[str, Any]) -> None:
    os.link(world["outside"] / "secret.txt", world["ws"] / "hard.txt")
    result = call(world["settings"], "read_file", {"path": "hard.txt"})
    assert result.error is not None and result.error.code == NOT_ALLOWED
    assert "hard links" in result.error.message and "outside secret" not in result.to_content()
    wrote = call(world["settings"], "write_file", {"path": "hard.txt", "content": "mine"})
    assert wrote.ok  # the name is replaced; the outside file keeps its content
    assert (world["outside"] / "secret.txt").read_text() == SECRET


def test_a_folder_swapped_for_a_symlink_after_the_check_is_caught(world: dict[str, Any]) -> None:
    """The gap between resolving a path and opening it: a folder on the way becomes a
    symlink to the outside. The open descriptor's real path gives it away."""
    from jarvis.tools.workspace import Refused, open_checked, resolve_inside

    ws, outside = world["ws"], world["outside"]
    root = Path(os.path.realpath(ws))
    (ws / "box").mkdir()
    (ws / "box" / "secret.txt").write_text("inside copy\n")
    path = resolve_inside(root, "box/secret.txt")
    os.rename(ws / "box", ws / "box-old")
    os.symlink(str(outside), ws / "box")
    with pytest.raises(Refused, match="outside the workspace"), open_checked(root, path, "x"):
        pass


def test_a_missing_folder_made_a_symlink_before_the_write_gets_no_folder_outside(
    world: dict[str, Any],
) -> None:
    """write_file makes missing folders; one that became a symlink to the outside after
    the path was checked is refused, and nothing appears outside."""
    from jarvis.tools.workspace import Refused, resolve_inside, write_atomic

    ws, outside = world["ws"], world["outside"]
    root = Path(os.path.realpath(ws))
    path = resolve_inside(root, "made/deeper/note.txt")
    os.symlink(str(outside), ws / "made")
    with pytest.raises(Refused, match="made is a symlink"):
        write_atomic(root, path, b"x", "made/deeper/note.txt")
    assert fingerprint(outside) == world["before"]


def test_no_folder_is_made_outside_while_a_folder_flips_to_a_symlink(
    world: dict[str, Any],
) -> None:
    """A bounded race (200 writes) against a thread that keeps swapping a workspace folder
    for a symlink to the outside: every folder write_file makes stays in the workspace."""
    from jarvis.tools.workspace import Missing, Refused, resolve_inside, write_atomic

    ws, outside = world["ws"], world["outside"]
    root = Path(os.path.realpath(ws))
    (ws / "a").mkdir()
    stop = threading.Event()
    flips = 0

    def flip() -> None:  # a -> a-old-N, a = link to the outside, a = a fresh folder
        nonlocal flips
        while not stop.is_set():
            flips += 1
            with suppress(OSError):  # the writer may have made ``a`` meanwhile
                os.rename(ws / "a", ws / f"a-old-{flips}")
                os.symlink(str(outside), ws / "a")
                os.unlink(ws / "a")
                os.mkdir(ws / "a")

    flipper = threading.Thread(target=flip)
    flipper.start()
    outcomes: set[str] = set()
    try:
        for i in range(200):
            shown = f"a/b{i}/c/note.txt"
            try:
                write_atomic(root, resolve_inside(root, shown), b"x", shown)
                outcomes.add("written")
            except (Refused, Missing, FileNotFoundError, NotADirectoryError) as exc:
                outcomes.add(type(exc).__name__)
    finally:
        stop.set()
        flipper.join()
    assert flips > 0
    assert fingerprint(outside) == world["before"]
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    # once the folder stays put, a write lands (the race above may refuse every one of its
    # 200 when the flipper thread gets the CPU each time)
    write_atomic(root, resolve_inside(root, "z/c/note.txt"), b"x", "z/c/note.txt")
    made = list(ws.rglob("note.txt"))
    assert (ws / "z" / "c" / "note.txt").read_bytes() == b"x"
    assert all(p.resolve().is_relative_to(root) for p in made)
