"""``jarvis eval SUITE --fleet URL``: the suite's runs go through the fleet's queue.

This process is the coordinator of its runs, with the fleet's own parts: each run is
dispatched once onto ``jarvis:tasks`` (:class:`~jarvis.fleet.redis_queue.RedisQueue`,
an ``eval`` kind's entry with the task in it: :mod:`jarvis.eval.remote`), a
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
from typing import TYPE_CHECKING

from jarvis.eval.remote import EVAL_CHANNEL, result_from, spec
from jarvis.eval.runner import Job, Plan, add_report, eval_model
from jarvis.eval.workspace import RunResult

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.events import EventBus
    from jarvis.fleet.receiver import Outcome
    from jarvis.runs.journal import JournalWriter

REACH_S = 5.0


class FleetEvalError(Exception):
    """The fleet cannot take the eval (one line for the user)."""


class Fleet:
    """The executor of ``--fleet URL``: the runs go to the fleet's ``jarvis worker --eval``
    processes; results in serial order. Raises :class:`FleetEvalError`."""

    def __init__(self, url: str, settings: Settings) -> None:
        self.url = url
        self.settings = settings

    def __call__(
        self, planned: list[Job], plan: Plan, done: Callable[[RunResult], None]
    ) -> list[RunResult]:
        from jarvis.fleet.connection import FleetUrlError, check_url

        try:
            url = check_url(self.url)
        except FleetUrlError as exc:
            raise FleetEvalError(str(exc)) from None
        return asyncio.run(_run(planned, plan, self.settings, url, done))


async def _run(
    planned: list[Job],
    plan: Plan,
    settings: Settings,
    url: str,
    done: Callable[[RunResult], None],
) -> list[RunResult]:
    from redis.exceptions import RedisError

    from jarvis.events import EventBus
    from jarvis.fleet.connection import client, reason, shown
    from jarvis.fleet.receiver import Receiver
    from jarvis.fleet.redis_queue import Janitor, RedisQueue
    from jarvis.fleet.registry import workers

    data_dir, provider, model = plan.data_dir, plan.provider, plan.model
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
        done(result)

    redis = client(url)
    bus = EventBus()
    journal = _journal(plan, settings, bus)
    lease_ms = int(settings.fleet.lease_s * 1000)
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
                body = spec(task, plan.suite_dir, provider, model)
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


def _journal(plan: Plan, settings: Settings, bus: EventBus) -> JournalWriter:
    """The journal the runs' events (as the workers send them) are written to, here."""
    from jarvis.redaction import known_secrets
    from jarvis.runs.journal import JournalWriter, settings_digest

    provider, model = plan.provider, plan.model
    return JournalWriter(
        plan.data_dir,
        bus,
        channel="eval",
        provider=provider,
        model=eval_model(settings, provider, model),
        settings_hash=settings_digest(settings),
        secrets=known_secrets(settings),
    )
