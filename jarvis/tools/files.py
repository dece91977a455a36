"""`read_file`, `write_file` and `list_dir`: text files inside the workspace folder only.

The workspace is ``settings.toolbox.workspace.dir`` (default ``DATA_DIR/workspace``).
Every path goes through :func:`jarvis.tools.workspace.resolve_inside`; anything that would
leave the folder (``..``, an absolute path elsewhere, a symlink out, a symlink loop),
anything that is not a regular file (FIFOs, devices, sockets) and, for reading, a file
with other hard links (one of them may be outside) is refused with -32006 and the
reason, as are files over the size caps and writes while the workspace is read-only
(by settings, or by the policy of the task's channel).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jarvis.config import Settings
from jarvis.tools.context import ToolContext
from jarvis.tools.policy import Policy
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INVALID_PARAMS, NOT_ALLOWED, ToolFailure
from jarvis.tools.workspace import (
    Missing,
    Refused,
    kind_of,
    open_checked,
    read_capped,
    relative,
    resolve_inside,
    write_atomic,
)

MAX_PATH = 1024


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArgs(_Args):
    path: str = Field(
        min_length=1, max_length=MAX_PATH, description="file path relative to the workspace"
    )


class WriteFileArgs(_Args):
    path: str = Field(
        min_length=1, max_length=MAX_PATH, description="file path relative to the workspace"
    )
    content: str = Field(description="the whole new content of the file (UTF-8 text)")


class ListDirArgs(_Args):
    path: str = Field(
        ".", max_length=MAX_PATH, description="folder relative to the workspace ('.' is its top)"
    )


def workspace_root(settings: Settings) -> Path:
    """The workspace folder (made if missing), resolved once: the boundary for every path."""
    configured = settings.toolbox.workspace.dir
    if configured is None:
        folder = settings.data_dir / "workspace"
    elif configured.is_absolute():
        folder = configured
    else:
        folder = settings.data_dir / configured
    folder.mkdir(parents=True, exist_ok=True)
    return Path(os.path.realpath(folder))


def _resolve(root: Path, path: str) -> Path:
    try:
        return resolve_inside(root, path)
    except Refused as exc:
        raise ToolFailure(NOT_ALLOWED, str(exc)) from exc
    except Missing as exc:
        raise ToolFailure(INVALID_PARAMS, str(exc)) from exc


def _guarded(action: Any) -> Any:
    try:
        return action()
    except Refused as exc:
        raise ToolFailure(NOT_ALLOWED, str(exc)) from exc
    except Missing as exc:
        raise ToolFailure(INVALID_PARAMS, str(exc)) from exc


def read_file(args: ReadFileArgs, ctx: ToolContext) -> dict[str, Any]:
    """Read a UTF-8 text file from the workspace folder."""
    root = workspace_root(ctx.settings)
    cap = ctx.settings.toolbox.workspace.max_read_bytes
    path = _resolve(root, args.path)
    shown = relative(root, path)

    def read() -> bytes:
        with open_checked(root, path, shown) as fd:
            info = os.fstat(fd)
            if info.st_nlink > 1:  # another name for it may be a file outside the workspace
                raise Refused(f"'{shown}' has other hard links; read_file reads files with one")
            size = info.st_size
            if size > cap:
                raise Refused(f"'{shown}' is {size} bytes; read_file reads at most {cap}")
            data = read_capped(fd, cap)
            if len(data) > cap:
                raise Refused(f"'{shown}' grew past {cap} bytes while it was read")
            return data

    data = _guarded(read)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        message = f"'{shown}' is not UTF-8 text; read_file reads text"
        raise ToolFailure(NOT_ALLOWED, message) from None
    return {"path": shown, "bytes": len(data), "content": text}


def write_file(args: WriteFileArgs, ctx: ToolContext) -> dict[str, Any]:
    """Write a UTF-8 text file in the workspace folder (replaces it whole; makes folders)."""
    settings = ctx.settings.toolbox.workspace
    if settings.read_only:
        raise ToolFailure(NOT_ALLOWED, "the workspace is read-only (settings)")
    if Policy.for_settings(ctx.settings).workspace_read_only(ctx.channels):
        raise ToolFailure(
            NOT_ALLOWED, f"the workspace is read-only for tasks from channel '{ctx.channel}'"
        )
    data = args.content.encode("utf-8")
    if len(data) > settings.max_write_bytes:
        raise ToolFailure(
            NOT_ALLOWED,
            f"the content is {len(data)} bytes; "
            f"write_file writes at most {settings.max_write_bytes}",
        )
    root = workspace_root(ctx.settings)
    path = _resolve(root, args.path)
    shown = relative(root, path)
    if path == root:
        raise ToolFailure(INVALID_PARAMS, "name a file, not the workspace folder itself")
    created = _guarded(lambda: write_atomic(root, path, data, shown))
    return {"path": shown, "bytes": len(data), "created": created}


def list_dir(args: ListDirArgs, ctx: ToolContext) -> dict[str, Any]:
    """List a folder of the workspace: names, kinds (file, dir, symlink...) and sizes."""
    root = workspace_root(ctx.settings)
    cap = ctx.settings.toolbox.workspace.max_entries
    path = _resolve(root, args.path)
    shown = relative(root, path)

    def scan() -> tuple[list[dict[str, Any]], bool]:
        with open_checked(root, path, shown, directory=True) as fd:
            names = sorted(os.listdir(fd))
            entries = []
            for name in names[:cap]:
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                entry: dict[str, Any] = {"name": name, "kind": kind_of(info.st_mode)}
                if stat.S_ISREG(info.st_mode):
                    entry["bytes"] = info.st_size
                entries.append(entry)
            return entries, len(names) > cap

    entries, truncated = _guarded(scan)
    return {"path": shown, "entries": entries, "truncated": truncated}


def register_file_tools(registry: ToolRegistry) -> None:
    """Add read_file, write_file and list_dir."""
    registry.register("read_file", read_file, ReadFileArgs)
    registry.register("write_file", write_file, WriteFileArgs)
    registry.register("list_dir", list_dir, ListDirArgs)
