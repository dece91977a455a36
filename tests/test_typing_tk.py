"""Typing into a plain Xlib application: a Tk Entry, which neither answers ``_NET_WM_PING``
nor fetches the keymap the way Xt clients do (with a core ``GetKeyboardMapping``). What it
does, while dispatching a ``MappingNotify``, is fetch the changed keys with XKB's
``GetMap`` (Xlib's ``XRefreshKeyboardMapping`` with XKB), and that request, seen through
RECORD, is its signal (``jarvis.desktop.map_answers``).

One Xvfb (``-noreset``), one Tk window for the module; under ``de`` and under ``us,ru``
with the Russian group locked, the mixed text (ASCII symbols, accents, Cyrillic, CJK with
more distinct characters than half the spare keycodes, so keycodes are remapped between
pieces, emoji) is typed five times and read back byte for byte from the Entry (the app
writes its content to a file on every change). The log must not say that the client gave
no sign: every remap waited for the Tk client's fetch.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.realapps import app_env, find_window, focus
from tests.test_typing_layouts import TEXT, keyboard_state, set_layout
from tests.xserver import Xvfb, start_xvfb

tkinter = pytest.importorskip("tkinter")

RUNS = 5
LINE = TEXT.replace("\n", "")  # an Entry holds one line
TK_APP = """
import sys, tkinter as tk
out = sys.argv[1]
root = tk.Tk(className="jarvistk")
root.geometry("1000x140+0+0")
text = tk.StringVar()
def save(*_):
    with open(out, "w", encoding="utf-8") as f:
        f.write(text.get())
text.trace_add("write", save)
entry = tk.Entry(root, textvariable=text, font=("DejaVu Sans", 14))
entry.pack(fill="x")
entry.focus_set()
root.mainloop()
"""


@dataclass
class TkEntry:
    server: Xvfb
    proc: subprocess.Popen[bytes]
    out: Path
    inp: Any  # jarvis.desktop.input.Input

    def text(self) -> str:
        return self.out.read_text("utf-8") if self.out.exists() else ""

    def saved(self, expected: str, timeout: float = 10.0) -> str:
        """The Entry's text once it equals ``expected``, else what it holds at the timeout."""
        deadline = time.monotonic() + timeout
        while (got := self.text()) != expected and time.monotonic() < deadline:
            time.sleep(0.02)
        return got

    def clear(self) -> None:
        self.inp.press_key("home")
        self.inp.hotkey("ctrl+k")  # Tk's Entry: delete to the end
        assert self.saved("") == "", "the Entry was not cleared"


@pytest.fixture(scope="module")
def tk_entry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TkEntry]:
    work = tmp_path_factory.mktemp("tk")
    with start_xvfb(1280, 800, set_env=True) as server:
        from jarvis.desktop.input import Input

        env = app_env(work / "home", server.env())
        out = work / "entry.txt"
        proc = subprocess.Popen([sys.executable, "-c", TK_APP, str(out)], env=env)
        try:
            window, _ = find_window(proc.pid, "jarvistk", timeout=30)
            focus(window)
            yield TkEntry(server, proc, out, Input(failsafe=False, display=server.where))
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.parametrize(("layout", "group"), [("de", 0), ("us,ru", 1)])
def test_tk_entry_takes_the_mixed_text_exactly(
    tk_entry: TkEntry, layout: str, group: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jarvis.desktop.keytyper")
    where = tk_entry.server.where
    failures = []
    try:
        set_layout(where, layout, group)
        for run in range(RUNS):
            tk_entry.clear()
            typed = tk_entry.inp.type_text(LINE)
            got = tk_entry.saved(LINE)
            if got != LINE:
                failures.append(f"run {run}: {got!r}")
            assert typed.chars == len(LINE) and typed.method == "xdotool"
            assert keyboard_state(where) == (group, {}), "the keyboard was left changed"
    finally:
        set_layout(where, "us", 0)
    assert not failures, f"{layout}: {len(failures)} of {RUNS} runs differ: {failures}"
    unproven = [r.getMessage() for r in caplog.records if "gave no sign" in r.getMessage()]
    assert unproven == [], "the Tk client's keymap fetches were not seen: typed without proof"
