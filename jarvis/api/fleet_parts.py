"""The parts of a fleet's runner the API shows: its workers' screens and holds.

The facade does not ask which runner the daemon has; the routes for a worker's screen do
(they exist only for a fleet, until section 11's screens registry), through these.
"""

from __future__ import annotations

from jarvis.fleet.holds import FleetHolds
from jarvis.fleet.screens import WorkerScreens
from jarvis.fleet.serving import FleetRunner
from jarvis.gateway.service import DaemonService


def fleet_of(service: DaemonService) -> FleetRunner | None:
    """The daemon's fleet runner; None when its tasks run in this process."""
    runner = service.runner
    return runner if isinstance(runner, FleetRunner) else None


def is_fleet(service: DaemonService) -> bool:
    """Whether this daemon coordinates a fleet of workers."""
    return fleet_of(service) is not None


def screens_of(service: DaemonService) -> WorkerScreens | None:
    """The live views of the fleet's workers on this machine; None without a fleet."""
    fleet = fleet_of(service)
    return fleet.screens() if fleet is not None else None


def holds_of(service: DaemonService) -> FleetHolds | None:
    """Who holds which worker's screen (a person's takeover); None without a fleet."""
    fleet = fleet_of(service)
    return fleet.holds() if fleet is not None else None


async def worker_of(service: DaemonService, task_id: str) -> str | None:
    """The fleet worker that runs ``task_id`` now, as its lease says (None: none, or no
    fleet)."""
    fleet = fleet_of(service)
    return await fleet.worker_of(task_id) if fleet is not None else None
