"""The names the fleet uses in Redis: streams, groups and keys (one place).

Side: both (the coordinator and the workers)."""

from __future__ import annotations

TASKS = "jarvis:tasks"
"""Stream of tasks to run: fields task, text, channels, attempt, and memories (a JSON list
of the lines the coordinator recalled; absent when it keeps no long-term memory)."""
WORKERS_GROUP = "workers"
CARRIED = "jarvis:carried"
"""Hash task id -> the id of the stream entry that carries it (dispatch is idempotent)."""
ENDED = "jarvis:ended"
"""Hash task id -> the token of its outcome that the coordinator has not written to
todos.md yet (dispatch refuses such a task, so an ended task is not sent again meanwhile;
the coordinator takes only the outcome entry that carries this token)."""
EVENTS = "jarvis:events"
"""Stream from workers to the coordinator: events, artefacts and outcomes."""
COORDINATOR_GROUP = "coordinator"
JANITOR = "janitor"
"""The consumer name the janitor claims abandoned entries under."""


def lease_key(task_id: str) -> str:
    """Hash (token, worker, entry) with a PX expiry: who runs ``task_id`` now."""
    return f"jarvis:lease:{task_id}"


def control_key(worker: str) -> str:
    """Stream of control messages for one worker (cancel, approval answers, stop)."""
    return f"jarvis:ctl:{worker}"


def worker_key(worker: str) -> str:
    """The worker's heartbeat (JSON, with a TTL)."""
    return f"jarvis:worker:{worker}"


WORKER_PATTERN = "jarvis:worker:*"


def view_key(session: str, direction: str) -> str:
    """Stream of one live-view session's bytes: ``down`` (the worker's x11vnc to the
    coordinator) or ``up`` (the viewer's input to the worker); short-lived."""
    return f"jarvis:view:{session}:{direction}"


def frame_key(worker: str) -> str:
    """Stream of the latest picture of one worker's display (one entry kept; fields
    ``data`` JPEG, ``at`` epoch seconds, ``monitor``, ``max_side``, or ``error``): sent
    while the coordinator asks (:mod:`jarvis.fleet.frames`)."""
    return f"jarvis:frame:{worker}"
