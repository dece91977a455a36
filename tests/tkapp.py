"""A real Tk window that records what input reaches it, for tests and benchmarks.

Run: ``python tests/tkapp.py [--events FILE]`` with DISPLAY set. The window has no
decorations (``overrideredirect``; bare Xvfb has no window manager) and fills the
screen at +0+0, so its root coordinates are screen coordinates. Widgets:

- ``pad``: a canvas under everything, with a grid and labels so the screen is not blank;
- ``box``: an Entry at the top left; ``ok``: a Button next to it that records the box text;
- ``notes``: a multi-line Text below (newlines and tabs arrive as Return and Tab).

Carets do not blink (a still screen stays still). Events are JSON lines on stdout (or
FILE), flushed at once; every event has ``kind`` and ``t`` (monotonic seconds):

- ``ready``: the window is mapped and drawn: ``screen`` [w, h], ``widgets`` {name: [x, y, w, h]}
- ``click``: every press of buttons 1-3: ``button``, ``x``, ``y`` (root), ``count``
  (1, 2, 3 ... for presses of the same button within 500 ms and 4 px), ``widget``,
  ``state`` (the modifier mask: 1 is Shift held)
- ``double``: Tk's own double-click (``<Double-ButtonPress>``) for buttons 1-3
- ``release``: ``button``, ``x``, ``y``
- ``motion``: ``x``, ``y``, ``state``; ``drag``: on release of button 1 after it was held
  while the pointer moved: ``start`` [x, y], ``end`` [x, y], ``motions`` (moves to a new
  position with the button held; a click's zero-distance motion does not count)
- ``scroll``: ``direction`` (up, down, left, right), ``x``, ``y``. Tk 8.6 reports X buttons
  6/7 (horizontal wheel) as buttons 4/5 with Shift held, so 4/5+Shift are left/right.
- ``key``: ``keysym``, ``keysym_num``, ``state``, ``mods`` (ctrl, shift, alt, super),
  ``char``, ``modifier`` (true for a modifier key itself), ``widget``
- ``text``: ``widget`` (box or notes) and its full ``text`` after every change
- ``ok``: ``text`` (the box text when OK was pressed)
- ``animate_started`` / ``animate_done``: around an animation (first/last frame drawn)
- ``ack``: ``id``, ``cmd`` for every command; ``state`` replies carry the state too.

Tk 8.6 keeps characters outside the BMP (emoji) as UTF-16 surrogate pairs; texts are
joined back into real code points before they are written, so emoji compare exactly.

Commands, one per line on stdin, ``ID COMMAND [ARGS]``: ``focus NAME``, ``reset``
(process pending X events, clear texts, stop animation, focus pad, move the pointer to
the middle of the screen), ``sync``
(process pending X events, then ack), ``animate MS``, ``state``, ``quit``. EOF on
stdin closes the app.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tkinter as tk
from typing import IO, Any

MODS = {0x4: "ctrl", 0x1: "shift", 0x8: "alt", 0x40: "super"}
MODIFIER_KEYSYMS = {
    f"{k}_{s}" for k in ("Shift", "Control", "Alt", "Super", "Meta", "Hyper") for s in "LR"
} | {"Caps_Lock", "Num_Lock", "ISO_Level3_Shift"}
MULTI_CLICK_MS = 500
MULTI_CLICK_PX = 4


def real_text(text: str) -> str:
    """Join the UTF-16 surrogate pairs Tk 8.6 returns for non-BMP characters."""
    try:
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        return text  # a lone surrogate: keep it, the comparison will show it


class App:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.root = tk.Tk()
        self.root.overrideredirect(True)
        w, h = self.root.winfo_screenwidth(), self.root.winfo_screenheight()
        self.size = (w, h)
        self.root.geometry(f"{w}x{h}+0+0")
        self.pad = tk.Canvas(self.root, highlightthickness=0, background="#dfe6ee")
        self.pad.place(x=0, y=0, relwidth=1, relheight=1)
        self._draw_background(w, h)
        self.box_var = tk.StringVar(self.root)
        self.box = tk.Entry(self.root, textvariable=self.box_var, insertofftime=0)
        self.box.place(x=40, y=40, width=360, height=28)
        self.ok = tk.Button(self.root, text="OK", command=self._on_ok)
        self.ok.place(x=410, y=40, width=80, height=28)
        self.notes = tk.Text(self.root, insertofftime=0, undo=False)
        self.notes.place(x=40, y=80, width=450, height=110)
        self.widgets: dict[str, tk.Misc] = {
            "root": self.root,
            "pad": self.pad,
            "box": self.box,
            "ok": self.ok,
            "notes": self.notes,
        }
        self.names = {str(wd): name for name, wd in self.widgets.items()}
        self.pending = b""  # stdin bytes not yet a full command line
        self.closed = False
        self.last_press: dict[int, tuple[int, int, int, int]] = {}  # button -> time, x, y, n
        self.drag: dict[str, Any] | None = None
        self.anim_job: str | None = None
        self.anim_rect = self.pad.create_rectangle(0, 0, 0, 0, fill="#c0392b", outline="")
        self.ok_text: str | None = None
        self._bind()

    # -- setup

    def _draw_background(self, w: int, h: int) -> None:
        for x in range(0, w, 100):
            self.pad.create_line(x, 0, x, h, fill="#b8c4d0")
        for y in range(0, h, 100):
            self.pad.create_line(0, y, w, y, fill="#b8c4d0")
        for x in range(0, w, 200):
            for y in range(200, h, 200):
                self.pad.create_text(x + 50, y + 50, text=f"{x},{y}", fill="#34495e")

    def _bind(self) -> None:
        for widget in self.widgets.values():
            widget.bindtags(("rec", "recdbl", *widget.bindtags()))
        self.root.bind_class("rec", "<ButtonPress>", self._on_press)
        self.root.bind_class("rec", "<ButtonRelease>", self._on_release)
        self.root.bind_class("rec", "<Motion>", self._on_motion)
        self.root.bind_class("rec", "<MouseWheel>", self._on_wheel)
        self.root.bind_class("rec", "<KeyPress>", self._on_key)
        self.root.bind_class("recdbl", "<Double-ButtonPress>", self._on_double)
        self.box_var.trace_add("write", lambda *_: self._emit_text("box"))
        self.notes.bind("<<Modified>>", self._on_notes_modified)

    # -- output

    def emit(self, kind: str, **fields: Any) -> None:
        self.out.write(json.dumps({"kind": kind, "t": time.monotonic(), **fields}) + "\n")
        self.out.flush()

    def _name(self, widget: Any) -> str:
        return self.names.get(str(widget), str(widget))

    def _emit_text(self, name: str) -> None:
        text = self.box.get() if name == "box" else self.notes.get("1.0", "end-1c")
        self.emit("text", widget=name, text=real_text(text))

    # -- event handlers

    def _on_press(self, e: tk.Event) -> None:
        num = int(e.num)
        if num in (4, 5):
            shift = bool(int(e.state) & 0x1)
            direction = {(4, False): "up", (5, False): "down", (4, True): "left"}.get(
                (num, shift), "right"
            )
            self.emit("scroll", direction=direction, x=e.x_root, y=e.y_root)
            return
        prev = self.last_press.get(num)
        count = 1
        if prev is not None:
            t, px, py, n = prev
            close = abs(e.x_root - px) <= MULTI_CLICK_PX and abs(e.y_root - py) <= MULTI_CLICK_PX
            if close and 0 <= int(e.time) - t <= MULTI_CLICK_MS:
                count = n + 1
        self.last_press[num] = (int(e.time), e.x_root, e.y_root, count)
        self.emit(
            "click",
            button=num,
            x=e.x_root,
            y=e.y_root,
            count=count,
            widget=self._name(e.widget),
            state=int(e.state),
        )
        if num == 1:
            self.drag = {"start": [e.x_root, e.y_root], "last": [e.x_root, e.y_root], "motions": 0}

    def _on_release(self, e: tk.Event) -> None:
        num = int(e.num)
        if num not in (1, 2, 3):
            return
        self.emit("release", button=num, x=e.x_root, y=e.y_root)
        if num == 1 and self.drag is not None:
            if self.drag["motions"]:
                self.emit(
                    "drag",
                    start=self.drag["start"],
                    end=[e.x_root, e.y_root],
                    motions=self.drag["motions"],
                )
            self.drag = None

    def _on_motion(self, e: tk.Event) -> None:
        state = int(e.state)
        if self.drag is not None and state & 0x100 and [e.x_root, e.y_root] != self.drag["last"]:
            self.drag["motions"] += 1  # only real movement: a click moves 0 px with B1 held
            self.drag["last"] = [e.x_root, e.y_root]
        self.emit("motion", x=e.x_root, y=e.y_root, state=state)

    def _on_wheel(self, e: tk.Event) -> None:
        delta = int(e.delta)
        shift = bool(int(e.state) & 0x1)
        direction = ("left" if delta > 0 else "right") if shift else "up" if delta > 0 else "down"
        self.emit("scroll", direction=direction, x=e.x_root, y=e.y_root)

    def _on_double(self, e: tk.Event) -> None:
        if int(e.num) in (1, 2, 3):
            self.emit("double", button=int(e.num), x=e.x_root, y=e.y_root)

    def _on_key(self, e: tk.Event) -> None:
        state = int(e.state)
        self.emit(
            "key",
            keysym=e.keysym,
            keysym_num=int(e.keysym_num),
            state=state,
            mods=[name for bit, name in MODS.items() if state & bit],
            char=real_text(e.char),
            modifier=e.keysym in MODIFIER_KEYSYMS,
            widget=self._name(e.widget),
        )

    def _on_notes_modified(self, _e: tk.Event) -> None:
        if self.notes.edit_modified():
            self._emit_text("notes")
            self.notes.edit_modified(False)

    def _on_ok(self) -> None:
        self.ok_text = real_text(self.box.get())
        self.emit("ok", text=self.ok_text)

    # -- commands

    def _on_stdin(self, fd: int, _mask: int) -> None:
        """Tk calls this as soon as stdin is readable (no polling delay)."""
        chunk = os.read(fd, 65536)
        if not chunk:
            self._quit()
            return
        self.pending += chunk
        while b"\n" in self.pending and not self.closed:
            line, _, self.pending = self.pending.partition(b"\n")
            if line.strip():
                self._run(line.decode("utf-8").strip())

    def _quit(self) -> None:
        self.closed = True
        self.root.tk.deletefilehandler(sys.stdin.fileno())
        self.root.destroy()

    def _flush_x_events(self) -> None:
        self.root.winfo_pointerxy()  # a round trip: every earlier event is now queued
        self.root.update()

    def _run(self, line: str) -> None:
        ident, _, rest = line.partition(" ")
        cmd, _, arg = rest.partition(" ")
        if cmd == "focus":
            widget = self.widgets[arg]
            widget.focus_force()
            self._flush_x_events()
        elif cmd == "reset":
            self._flush_x_events()
            # another button's press ends any click sequence, so a test's first click on the
            # spot the last test clicked is not taken for a double click (Tk's own rule)
            for widget in self.widgets.values():
                widget.event_generate("<ButtonPress-3>", x=1, y=1)
                widget.event_generate("<ButtonRelease-3>", x=1, y=1)
            self._stop_animation()
            self.box_var.set("")
            self.notes.delete("1.0", "end")
            self.notes.edit_modified(False)
            self.ok_text = None
            self.drag = None
            self.last_press.clear()
            self.pad.focus_force()
            w, h = self.size  # park the pointer in the middle (never in a fail-safe corner)
            self.root.event_generate("<Motion>", warp=True, x=w // 2, y=h // 2)
            self._flush_x_events()
        elif cmd == "sync":
            self._flush_x_events()
        elif cmd == "animate":
            self._start_animation(int(arg))
        elif cmd == "state":
            focus = self.root.focus_get()
            self.emit(
                "state",
                id=ident,
                box=real_text(self.box.get()),
                notes=real_text(self.notes.get("1.0", "end-1c")),
                ok=self.ok_text,
                focus=self._name(focus) if focus is not None else None,
            )
        elif cmd == "quit":
            self.emit("ack", id=ident, cmd=cmd)
            self._quit()
            return
        self.emit("ack", id=ident, cmd=cmd)

    # -- animation: a square moves across the middle of the screen for ``ms``

    def _start_animation(self, ms: int) -> None:
        self._stop_animation()
        w, h = self.size
        start, first = time.monotonic(), True

        def frame() -> None:
            nonlocal first
            done = min(1.0, (time.monotonic() - start) * 1000 / max(1, ms))
            x = int(w * 0.2 + done * w * 0.6)
            self.pad.coords(self.anim_rect, x, h // 2, x + 80, h // 2 + 80)
            self.root.update_idletasks()
            if first:
                first = False
                self.emit("animate_started", ms=ms)
            if done >= 1.0:
                self.anim_job = None
                self.emit("animate_done", ms=ms)
                return
            self.anim_job = self.root.after(10, frame)

        frame()

    def _stop_animation(self) -> None:
        if self.anim_job is not None:
            self.root.after_cancel(self.anim_job)
        self.anim_job = None
        self.pad.coords(self.anim_rect, 0, 0, 0, 0)

    # -- run

    def run(self) -> None:
        self.root.wait_visibility(self.root)  # before any update(): it waits for the event
        self.pad.focus_force()
        self._flush_x_events()
        rects = {
            name: [wd.winfo_rootx(), wd.winfo_rooty(), wd.winfo_width(), wd.winfo_height()]
            for name, wd in self.widgets.items()
        }
        self.emit("ready", screen=list(self.size), widgets=rects)
        self.root.tk.createfilehandler(sys.stdin.fileno(), tk.READABLE, self._on_stdin)
        self.root.mainloop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", help="write events to this file instead of stdout")
    args = parser.parse_args(argv)
    out: IO[str] = (
        open(args.events, "a", encoding="utf-8") if args.events else sys.stdout  # noqa: SIM115
    )
    App(out).run()


if __name__ == "__main__":
    main()
