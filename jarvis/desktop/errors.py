"""The errors desktop input raises: what went wrong is in the message.

They live apart from :mod:`jarvis.desktop.input` so that key-name parsing
(:mod:`jarvis.desktop.keys`) can raise an :class:`InputError` without importing
the input machinery. Callers import them from ``jarvis.desktop.input``.
"""

from __future__ import annotations


class InputError(Exception):
    """An input action could not be performed; the message says why."""


class FailSafeError(InputError):
    """The fail-safe tripped: a person moved the pointer into a screen corner."""


class InputInterrupted(InputError):
    """The task was cancelled while an input action ran; the rest of it was not done."""
