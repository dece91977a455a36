"""Long-term memory for the daemon: opened once, shared by the router (similar tasks), the
runner (recall and ``remember``) and the compressor, run when idle every
``compress_every_s``."""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from jarvis.config import Settings
from jarvis.gateway.runner import GatewayReport
from jarvis.safety.approvals import ApprovalGate

if TYPE_CHECKING:
    from jarvis.memory.long_term import LongTermMemory
    from jarvis.memory.recall import MemoryBridge
    from jarvis.tools.registry import ToolRegistry

log = logging.getLogger(__name__)


class DaemonMemory:
    """The daemon's long-term memory, when settings turn it on (see the module doc)."""

    def __init__(self, report: GatewayReport, compress_every_s: float | None) -> None:
        self.report = report
        self.every = compress_every_s
        self.bridge: MemoryBridge | None = None
        self.memory: LongTermMemory | None = None
        self._next = time.monotonic()

    async def open(
        self, settings: Settings, stack: AsyncExitStack, gate: ApprovalGate
    ) -> tuple[Settings, ToolRegistry | None]:
        """Open it on ``stack``; the settings to go on with (memory off when its model
        cannot load: said once, tasks run without it) and the tools it brought."""
        if not settings.long_term_memory:
            return settings, None
        from jarvis.agent.factory import open_long_term
        from jarvis.tools.computer import build_registry

        registry = build_registry(settings, approvals=gate)
        self.bridge = await open_long_term(settings, stack, registry)
        if self.bridge is None:
            return settings.model_copy(update={"long_term_memory": False}), registry
        self.memory = self.bridge.memory
        return settings, registry

    def start_clock(self) -> None:
        """The first compression is due now (the daemon starts serving)."""
        self._next = time.monotonic()

    async def compress_if_due(self, settings: Settings) -> None:
        every = self.every
        if self.memory is None or not every or time.monotonic() < self._next:
            return
        self._next = time.monotonic() + every
        from jarvis.memory.maintenance import upkeep
        from jarvis.runs.index import recent_runs

        runs = recent_runs(settings.data_dir)
        try:
            await asyncio.to_thread(upkeep, settings, self.memory, recent_runs=runs)
        except Exception:  # the boundary: upkeep must not stop the daemon
            log.exception("long-term memory compression failed; trying again in %gs", every)
            return
        self.report.compressions += 1
