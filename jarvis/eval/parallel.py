"""``jarvis eval SUITE --workers N``: N runs at once, each on its own private display.

Every run is :func:`jarvis.eval.runner.run_one`, as in a serial eval: its own Xvfb (a
:class:`~jarvis.safety.sandbox.Sandbox` with its own cookie), its setup and its check with
that display's ``DISPLAY``/``XAUTHORITY`` in their environment only, the agent in its own
process with a Desktop on that display. This process's ``DISPLAY`` is never touched.

Threads, not processes: a run's thread only starts processes (Xvfb, the setup's apps, the
agent's process) and waits on them, so the GIL is no bottleneck, and results, progress and
Ctrl+C stay in one process. The results come back in the serial order (task by task,
repeat by repeat), so the summary is the one a serial run writes. Ctrl+C (or any failure
here) tells every run to stop; each run's ``finally`` stops its display and its apps
before the interrupt goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from jarvis.eval.runner import Job, Plan
from jarvis.eval.workspace import RunResult


def parse_workers(text: str) -> int:
    """``--workers``: a whole number of at least 1 (argparse shows the message)."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"--workers must be a whole number, not {text!r}") from None
    if value < 1:
        raise ValueError(f"--workers must be at least 1, not {value}")
    return value


@dataclass(frozen=True)
class Threads:
    """The executor of ``--workers N``: ``workers`` runs at a time; results in serial order."""

    workers: int

    def __call__(
        self, planned: list[Job], plan: Plan, done: Callable[[RunResult], None]
    ) -> list[RunResult]:
        results: list[RunResult | None] = [None] * len(planned)
        stop = threading.Event()

        def one(index: int) -> None:
            if not stop.is_set():
                results[index] = plan.run(planned[index], stop)

        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="eval")
        try:
            pending: dict[Future[None], int] = {pool.submit(one, i): i for i in range(len(planned))}
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    index = pending.pop(future)
                    future.result()  # a bug in the runner itself stops the eval
                    result = results[index]
                    if result is not None:
                        done(result)
        except BaseException:
            stop.set()  # the running runs end their agent and stop their display
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return [r for r in results if r is not None]
