"""Benchmark typing speed per method in real applications.

On a private 1920x1080 Xvfb, each of mousepad (GTK), featherpad (Qt), xterm,
xfce4-terminal (VTE) and Chromium (a textarea on a loopback page) is started once,
with its own config dirs (see ``tests/realapps.py``). Into each, an ASCII text (400
printable characters) and a CJK text (the 130-character paragraph of the test matrix,
about 50 distinct characters, more than there are spare keycodes) are typed with
each method: ``xdotool`` (key presses, the default) and ``clipboard`` (pasted with
the application's paste key). A run is timed from the call to its return (keys:
until the application answered the ping after the last key, or for xterm its keymap
fetch seen through RECORD; clipboard: until the application fetched the text and went quiet) and the
text is then read back (saved file, ``cat`` output, the page's posted value) to
check that it arrived exactly.

Keyboard layouts (``layouts``): in the same run, xterm is typed into under ``us`` and
under ``de`` (set with ``setxkbmap`` on the same Xvfb, started with ``-noreset``), the
ASCII text and the mixed text of ``tests/test_typing_layouts.py`` (symbols that need
AltGr under de, umlauts, Cyrillic, CJK, emoji), with the characters per second of each
and the ratio de/us (target: at least 0.8).

Prints ONE JSON object: characters per second per application, method and text
(median of REPEAT runs), whether every run arrived exactly, the median over the
applications per method and text, the layouts' speeds and ratio, and the load average
before and after.

Run: ``python bench/typing_speed.py [--repeat N] [--apps mousepad,xterm,...]``
(``--apps ""`` measures the layouts only).
"""

from __future__ import annotations

import os
import sys

from jarvis.desktop.x11 import XDisplay

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests.*

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.realapps import APPS, App, PageServer, app_env
from tests.test_real_apps import CJK, Case
from tests.test_typing_layouts import TEXT as MIXED
from tests.xserver import start_xvfb

ASCII = "".join(chr(32 + i % 95) for i in range(400))
TEXTS = {"ascii": ASCII, "cjk": CJK + CJK}
METHODS = ("xdotool", "clipboard")


def bench_app(name: str, case: Case, inputs: dict[str, Any], repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    written = ""  # what a terminal's cat has written so far
    for method in METHODS:
        for kind, text in TEXTS.items():
            rates, exact = [], True
            for _ in range(repeat):
                if case.terminal():
                    text_run = text + "\n"  # cat's tty passes a line on at its end
                else:
                    case.click_in()
                    case.inp.hotkey("ctrl+a")
                    text_run = text
                started = time.perf_counter()
                typed = inputs[method].type_text(text_run)
                elapsed = time.perf_counter() - started
                expected = written + text_run if case.terminal() else text_run
                got = case.saved(expected)
                exact = exact and got == expected and typed.method == method
                written = got if case.terminal() else written
                rates.append(len(text_run) / elapsed)
            out[f"{method}_{kind}_cps"] = round(statistics.median(rates), 1)
            out[f"{method}_{kind}_exact"] = exact
    return out


def bench_layouts(work: Path, env: dict[str, str], inp: Any, repeat: int) -> dict[str, Any]:
    """Characters per second typing into xterm's cat under us and de, and de/us."""
    app = App.start("xterm", work, env)
    out: dict[str, Any] = {}
    written = ""
    try:
        for layout in ("us", "de"):
            subprocess.run(["setxkbmap", "-layout", layout], env=env, check=True)
            for kind, text in (("ascii", ASCII + "\n"), ("mixed", MIXED)):
                rates, exact = [], True
                for _ in range(repeat):
                    started = time.perf_counter()
                    inp.type_text(text)
                    rates.append(len(text) / (time.perf_counter() - started))
                    written += text
                    deadline = time.monotonic() + 10
                    while (got := app.files["doc"].read_text("utf-8", "replace")) != written:
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.02)
                    exact = exact and got == written
                    written = got
                out[f"{layout}_{kind}_cps"] = round(statistics.median(rates), 1)
                out[f"{layout}_{kind}_exact"] = exact
        subprocess.run(["setxkbmap", "-layout", "us"], env=env, check=True)
    finally:
        app.close()
    for kind in ("ascii", "mixed"):
        out[f"de_over_us_{kind}"] = round(out[f"de_{kind}_cps"] / out[f"us_{kind}_cps"], 2)
    out["target_de_over_us"] = 0.8
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--apps", default=",".join(APPS))
    args = parser.parse_args()
    apps = [a for a in args.apps.split(",") if a]
    load_before = os.getloadavg()
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="jarvis-bench-typing-") as tmp,
        start_xvfb(1920, 1080, set_env=True) as server,
    ):
        from jarvis.desktop.input import Input

        inputs = {
            m: Input(failsafe=False, type_method=m, display=XDisplay.from_env()) for m in METHODS
        }  # type: ignore[arg-type]
        page = PageServer(lines=10)
        work = Path(tmp) / "layouts"
        work.mkdir()
        layouts = bench_layouts(
            work, app_env(work / "home", server.env()), inputs["xdotool"], args.repeat
        )
        try:
            for name in apps:
                work = Path(tmp) / name
                work.mkdir()
                app = App.start(name, work, app_env(work / "home", server.env()), url=page.url)
                try:
                    if name == "chromium":
                        page.wait_value("", timeout=30)
                    served = page if name == "chromium" else None
                    case = Case(app, served, inputs["xdotool"], (1920, 1080))
                    results[name] = bench_app(name, case, inputs, args.repeat)
                finally:
                    app.close()
        finally:
            page.close()
    summary = {
        f"{m}_{k}_cps_median": round(
            statistics.median(r[f"{m}_{k}_cps"] for r in results.values()), 1
        )
        for m in METHODS
        for k in TEXTS
        if results
    }
    print(
        json.dumps(
            {
                "screen": "1920x1080",
                "chars": {k: len(v) for k, v in TEXTS.items()},
                "distinct_cjk": len(set(CJK)),
                "repeat": args.repeat,
                "apps": results,
                "summary": summary,
                "layouts": layouts,
                "all_exact": all(
                    v
                    for r in [*results.values(), layouts]
                    for k, v in r.items()
                    if k.endswith("_exact")
                ),
                "load_before": [round(v, 2) for v in load_before],
                "load_after": [round(v, 2) for v in os.getloadavg()],
            }
        )
    )


if __name__ == "__main__":
    main()
