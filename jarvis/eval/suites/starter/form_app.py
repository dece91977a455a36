"""A small Tk form for the starter suite: a name, a checkbox and Save.

Run: ``python3 form_app.py OUT`` with DISPLAY set. The window (title "Jarvis form") sits
at +0+0, 400x200; Save writes ``name=NAME;subscribe=0|1`` to OUT.
"""

import sys
import tkinter as tk


def main() -> None:
    out = sys.argv[1]
    root = tk.Tk()
    root.title("Jarvis form")
    root.geometry("400x200+0+0")
    name = tk.StringVar(root)
    subscribe = tk.IntVar(root)
    tk.Label(root, text="Name").place(x=20, y=24)
    tk.Entry(root, textvariable=name, insertofftime=0).place(x=90, y=20, width=280, height=30)
    tk.Checkbutton(root, text="Subscribe", variable=subscribe).place(x=86, y=70)

    def save() -> None:
        with open(out, "w", encoding="utf-8") as f:
            f.write(f"name={name.get()};subscribe={subscribe.get()}\n")
        root.title("Jarvis form (saved)")

    tk.Button(root, text="Save", command=save).place(x=90, y=130, width=100, height=34)
    root.mainloop()


if __name__ == "__main__":
    main()
