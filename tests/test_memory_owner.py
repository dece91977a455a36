"""One process owns the long-term memory store: a second one is told who has it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import jarvis.memory.long_term as long_term
from jarvis.cli import build_parser
from jarvis.config import load_settings
from jarvis.memory.long_term import LongTermMemory, MemoryInUse

ROOT = Path(__file__).resolve().parents[1]

HOLDER = """
import sys
from pathlib import Path
from jarvis.memory.store_owner import claim_store
claim_store(Path(sys.argv[1]), 0.0)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture()
def holder(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Another process that owns ``DATA/memory/long_term`` until it is killed."""
    store = tmp_path / "memory" / "long_term"
    store.mkdir(parents=True)
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "held"
    yield child
    child.send_signal(signal.SIGKILL)
    child.wait()


def test_second_process_is_told_who_holds_the_store(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    settings = load_settings(tmp_path)
    with pytest.raises(MemoryInUse) as raised:
        LongTermMemory.from_settings(settings, wait_s=0.2)
    assert raised.value.holder is not None and raised.value.holder["pid"] == holder.pid
    assert f"pid {holder.pid}" in str(raised.value)

    holder.send_signal(signal.SIGKILL)  # the OS lets go of a dead holder's lock
    holder.wait()
    with LongTermMemory.from_settings(settings, wait_s=2.0) as memory:
        assert memory.count() == 0
        with LongTermMemory.from_settings(settings, wait_s=0.0) as same_process:
            assert same_process.count() == 0  # opens within one process share the store
    with LongTermMemory.from_settings(settings, wait_s=0.0) as reopened:
        assert reopened.count() == 0  # both closes let it go


def test_memory_cli_says_the_store_is_busy(
    tmp_path: Path,
    holder: subprocess.Popen[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(long_term, "OPEN_WAIT_S", 0.2)
    parser = build_parser()  # the real `jarvis` parser: --data-dir is the CLI's
    args = parser.parse_args(["memory", "add", "dark mode", "--data-dir", str(tmp_path)])
    code = args.handler(args, load_settings(args.data_dir))
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("jarvis memory: long-term memory is open in another process")
    assert f"pid {holder.pid}" in out and len(out.strip().splitlines()) == 1
    assert not (tmp_path / "memory/long_term/preferences.json").exists()  # nothing written
