"""``jarvis eval SUITE --fleet URL``: the suite's runs go through the fleet's queue.

This process is the coordinator of its runs, with the fleet's own parts: each run is
dispatched once onto ``jarvis:tasks`` (:class:`~jarvis.fleet.redis_queue.RedisQueue`,
channel ``eval``, the task in the entry: :mod:`jarvis.eval.remote`), a
``jarvis worker --eval`` claims it under a lease and sets it up, runs it and checks it on
its own desktop; what it sends back (events, step records, screenshots) comes in through
the :class:`~jarvis.fleet.receiver.Receiver` into this data dir's journal, so every run
has its report here; the janitor gives a run whose worker died to another worker. The
outcome's summary is the run's result; results are gathered in the serial order.

It reads ``jarvis:events`` as the coordinator does, so it needs a Redis (or a database
number, ``redis://HOST:PORT/N``) that no ``jarvis serve --fleet`` reads at the same time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from jarvis.eval.remote import EVAL_CHANNEL, result_from, spec
from jarvis.eval.runner import RunResult, add_report, eval_model, jobs
from jarvis.eval.suite import EvalTask

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.fleet.receiver import Outcome

REACH_S = 5.0


class FleetEvalError(Exception):
    """The fleet cannot take the eval (one line for the user)."""


def run_on_fleet(
    tasks: list[EvalTask],
    suite_dir: Path,
    settings: Settings,
    url: str,
    *,
    provider: str,
    model: str | None,
    repeat: int = 1,
    stamp: str,
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    from jarvis.fleet.connection import FleetUrlError, check_url

    try:
        url = check_url(url)
    except FleetUrlError as exc:
        raise FleetEvalError(str(exc)) from None
    planned = jobs(tasks, repeat, stamp)
    return asyncio.run(
        _run(planned, suite_dir, settings, url, provider, model, settings.fleet.lease_s, on_result)
    )


async def _run(
    planned: list[tuple[EvalTask, int, str]],
    suite_dir: Path,
    settings: Settings,
    url: str,
    provider: str,
    model: str | None,
    lease_s: float,
    on_result: Callable[[RunResult], None] | None,
) -> list[RunResult]:
    from redis.exceptions import RedisError

    from jarvis.events import EventBus
    from jarvis.fleet.connection import client, reason, shown
    from jarvis.fleet.receiver import Receiver
    from jarvis.fleet.redis_queue import Janitor, RedisQueue
    from jarvis.fleet.registry import workers
    from jarvis.redaction import known_secrets
    from jarvis.runs.journal import JournalWriter, settings_digest

    data_dir = settings.data_dir
    by_id = {run_id: (task, n) for task, n, run_id in planned}
    results: dict[str, RunResult] = {}

    async def record(outcome: Outcome) -> None:
        if outcome.task_id not in by_id or outcome.task_id in results:
            return  # another eval's run, or one already counted
        task, n = by_id[outcome.task_id]
        result = result_from(task.id, n, outcome.task_id, outcome.summary)
        await asyncio.to_thread(add_report, result, data_dir)
        results[outcome.task_id] = result
        await queue.recorded(outcome.task_id)
        if on_result is not None:
            on_result(result)

    redis = client(url)
    bus = EventBus()
    journal = JournalWriter(
        data_dir,
        bus,
        channel="eval",
        provider=provider,
        model=eval_model(settings, provider, model),
        settings_hash=settings_digest(settings),
        secrets=known_secrets(settings),
    )
    lease_ms = int(lease_s * 1000)
    queue = RedisQueue(redis, "eval", lease_ms=lease_ms)
    janitor = Janitor(redis, lease_ms=lease_ms)
    receiver = Receiver(redis, data_dir, bus, record, consumer="eval")
    try:
        try:
            await asyncio.wait_for(redis.ping(), REACH_S)
            if not await workers(redis):
                raise FleetEvalError(f"no workers on {shown(url)} (start `jarvis worker --eval`)")
            await queue.setup()
            await receiver.setup()
            for task, _n, run_id in planned:
                body = spec(task, suite_dir, provider, model)
                await queue.dispatch(run_id, body, (EVAL_CHANNEL,), force=True)
            while len(results) < len(planned):
                await receiver.read_once(1.0)
                await janitor.sweep()
        except (RedisError, OSError, TimeoutError) as exc:
            raise FleetEvalError(f"the fleet at {shown(url)} failed: {reason(exc)}") from None
    finally:
        journal.close()
        with contextlib.suppress(Exception):
            await redis.aclose()
    return [results[run_id] for _task, _n, run_id in planned]
