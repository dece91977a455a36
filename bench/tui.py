"""Keypress-to-screen delay of `jarvis tui` while 200 model tokens a second stream in.

The cockpit runs in a child process on a real pseudo-terminal (120x36). Its lines come
from a replay backend that emits a task, then ``model_text_delta`` lines at 200 tokens/s
(a paragraph break every 40 tokens, a new step every 400, as a model writes). The parent
types accented letters (never in the streamed text, nor in escape sequences) at random
gaps of 40-120 ms and times each from the write to the pty until the terminal output
carries that letter.

    .venv/bin/python bench/tui.py [--keys 120] [--rate 200]

Prints one JSON object: p50/p95/max in ms, the count, the rate; target p95 <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import random
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from jarvis.tui.settings import TuiSettings

WORDS = [
    "the",
    "model",
    "looks",
    "at",
    "the",
    "screen",
    "and",
    "decides",
    "where",
    "to",
    "click",
    "next",
    "with",
    "care",
]
LETTERS = "éèàùçøßåæœñüöäëïîâêô"  # never in escape sequences, nor in the stream
TARGET_P95_MS = 50.0


def run_app(rate: float, refresh_ms: int) -> None:
    """The child: the cockpit fed by a stream of ``rate`` tokens a second."""
    from jarvis.tui.app import JarvisApp
    from jarvis.tui.backend import ReplayBackend
    from jarvis.tui.settings import TuiSettings

    class Streaming(ReplayBackend):
        async def events(self, after: int) -> AsyncIterator[dict[str, Any]]:
            yield {"kind": "connected"}
            seq, start = 1, time.monotonic()
            yield {"seq": seq, "kind": "task_started", "task_id": "T001", "task": "bench"}
            sent = 0
            while True:
                due = int((time.monotonic() - start) * rate)
                while sent < due:
                    sent += 1
                    seq += 1
                    if sent % 400 == 1:
                        yield {"seq": seq, "kind": "step_started", "task_id": "T001", "step": sent}
                        seq += 1
                    text = WORDS[sent % len(WORDS)] + ("\n\n" if sent % 40 == 0 else " ")
                    yield {"seq": seq, "kind": "model_text_delta", "task_id": "T001", "text": text}
                await asyncio.sleep(0.005)

    settings = TuiSettings(thumbnail="halfblocks", stream_refresh_ms=refresh_ms)
    JarvisApp(Streaming(label="bench"), settings).run()


class Output:
    """Everything the child writes to the terminal, read by a thread."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.data = bytearray()
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self.changed:
                self.data += chunk
                self.changed.notify_all()

    def wait_for(self, needle: bytes, start: int, timeout: float) -> int:
        """Position of ``needle`` at or after ``start``; raises after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = self.data.find(needle, start)
                if found >= 0:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(needle)
                self.changed.wait(left)

    def end(self) -> int:
        with self.lock:
            return len(self.data)


def measure(keys: int, rate: float, refresh_ms: int) -> dict[str, Any]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "36"}
    child = subprocess.Popen(
        [sys.executable, __file__, "--app", "--rate", str(rate), "--refresh-ms", str(refresh_ms)],
        stdin=slave,
        stdout=slave,
        stderr=slave,  # Textual draws on stderr
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    out = Output(master)
    delays: list[float] = []
    try:
        out.wait_for(b"running T001", 0, 60)  # the stream is flowing
        time.sleep(2.0)
        rng = random.Random(7)
        for n in range(keys):
            letter = LETTERS[n % len(LETTERS)].encode()  # UTF-8
            start_at = out.end()
            t0 = time.perf_counter()
            os.write(master, letter)
            out.wait_for(letter, start_at, 10)
            delays.append((time.perf_counter() - t0) * 1000)
            time.sleep(rng.uniform(0.04, 0.12))
            if n % 20 == 19:
                os.write(master, b"\x15")  # ctrl+u clears the prompt now and then
                time.sleep(0.1)
    finally:
        os.write(master, b"\x11")  # ctrl+q
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        os.close(master)
    delays.sort()

    def pct(p: float) -> float:
        return round(delays[min(len(delays) - 1, int(p * len(delays)))], 2)

    return {
        "bench": "tui_keypress_to_screen",
        "tokens_per_s": rate,
        "stream_refresh_ms": refresh_ms,
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "keys": len(delays),
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "max_ms": round(delays[-1], 2),
        "target_p95_ms": TARGET_P95_MS,
        "ok": pct(0.95) <= TARGET_P95_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--app", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--keys", type=int, default=120)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--refresh-ms", type=int, default=TuiSettings().stream_refresh_ms)
    args = parser.parse_args()
    if args.app:
        run_app(args.rate, args.refresh_ms)
        return
    print(json.dumps(measure(args.keys, args.rate, args.refresh_ms)))


if __name__ == "__main__":
    main()
