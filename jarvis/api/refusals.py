"""The HTTP status the API answers for a refusal of the layers below: the one place where
a takeover's or a worker screen's ``why`` becomes a status code."""

from __future__ import annotations

from jarvis.fleet.screens import Unreachable
from jarvis.safety.takeover import TakeoverRefused

STATUS = {
    "not_allowed": 403,  # the channel may not take over
    "held": 409,  # someone holds the screen already
    "not_held": 409,  # nobody holds it
    "unreachable": 503,  # the worker cannot be told
    "no_worker": 404,  # no such worker sends heartbeats
    "not_reachable": 409,  # its display cannot be served from here
    "down": 503,  # Redis does not answer, or the daemon stops
    "no_agent": 503,  # no agent runs here: nothing to take over from
}


def http_status(refusal: TakeoverRefused | Unreachable) -> int:
    return STATUS[refusal.why]
