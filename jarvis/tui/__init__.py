"""``jarvis tui``: the terminal cockpit, a client of the control API (DESIGN.md section 5)."""
