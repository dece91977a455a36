"""A real window that a person (or Jarvis) moves by dragging its title bar, for tests.

Run: ``python tests/moveapp.py X Y`` with DISPLAY set. The window is 400x300 with no
decorations (``overrideredirect``: no window manager is needed), placed at root X, Y;
its top 40 pixels are a dark title bar reading "Drag me". Pressing button 1 on the bar
and moving moves the window with the pointer, as a window manager would.

JSON lines on stdout, flushed at once: ``ready`` with ``box`` [x, y, w, h] (root
coordinates, once mapped), then ``moved`` with ``box`` on every release after a drag.
EOF on stdin closes the app.
"""

from __future__ import annotations

import json
import sys
import tkinter as tk

WIDTH, HEIGHT, BAR = 400, 300, 40


class MoveApp:
    def __init__(self, x: int, y: int) -> None:
        self.root = tk.Tk()
        self.root.overrideredirect(True)
        self.root.geometry(f"{WIDTH}x{HEIGHT}+{x}+{y}")
        self.bar = tk.Label(
            self.root, text="Drag me", background="#203040", foreground="white", anchor="w"
        )
        self.bar.place(x=0, y=0, width=WIDTH, height=BAR)
        body = tk.Frame(self.root, background="#f0c020")
        body.place(x=0, y=BAR, width=WIDTH, height=HEIGHT - BAR)
        self.grip: tuple[int, int] | None = None
        self.bar.bind("<ButtonPress-1>", self._press)
        self.bar.bind("<B1-Motion>", self._motion)
        self.bar.bind("<ButtonRelease-1>", self._release)
        self.root.tk.createfilehandler(sys.stdin, tk.READABLE, self._stdin)
        self.root.wait_visibility()  # mapped and shown
        self._emit("ready")

    def _emit(self, kind: str) -> None:
        self.root.update_idletasks()
        box = [self.root.winfo_rootx(), self.root.winfo_rooty(), WIDTH, HEIGHT]
        print(json.dumps({"kind": kind, "box": box}), flush=True)

    def _press(self, e: tk.Event) -> None:
        self.grip = (e.x_root - self.root.winfo_rootx(), e.y_root - self.root.winfo_rooty())

    def _motion(self, e: tk.Event) -> None:
        if self.grip is not None:
            x, y = e.x_root - self.grip[0], e.y_root - self.grip[1]
            self.root.geometry(f"+{x}+{y}")

    def _release(self, e: tk.Event) -> None:
        if self.grip is not None:
            self._motion(e)
            self.grip = None
            self._emit("moved")

    def _stdin(self, _fd: int, _mask: int) -> None:
        if not sys.stdin.readline():
            self.root.destroy()


def main() -> None:
    MoveApp(int(sys.argv[1]), int(sys.argv[2])).root.mainloop()


if __name__ == "__main__":
    main()
