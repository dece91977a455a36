"""The garbage collector off while a command starts, and on again once what lives until
the exit is made (issue 40: `jarvis run`'s first model request).

Importing a model's SDK makes thousands of classes (anthropic: 1,479 pydantic models), and
every one of them lives until the exit. With the collector on, each few hundred new
objects start a collection, and the older generations are walked again and again as they
grow: a sixth of ``import anthropic``'s CPU time here (3.4 s with it, 2.9 s without).
Start-up makes next to no garbage cycles, so nothing piles up meanwhile.

:func:`pause` is ``python -m jarvis``'s first line and :func:`jarvis.cli.entry`'s (the
installed command); :func:`resume` is called by `jarvis run` once its agent is built and
by every other command before it starts. It sets what exists then aside (``gc.freeze``):
later collections, in the agent's steps too, need not walk start-up's objects again.
"""

from __future__ import annotations

import gc


def pause() -> None:
    """No garbage collection until :func:`resume`."""
    gc.disable()


def resume() -> None:
    """Garbage collection on again, past what exists now; nothing when it was not paused
    (a test calling the command's main in its own process)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
