"""Which tools may be called, how often, and for how long (from ``settings.tools``).

Allow and deny lists: a tool is offered when it is in the effective allow list
(``None`` means every tool) and not in the effective deny list. A provider entry
in ``per_provider`` overrides the global allow list when it sets one, and its
deny list adds to the global one. A task's channels (the ``via:`` of its messages:
tui, email, api, inbox...) narrow that further: each channel's ``channels.NAME.tools``
(formerly ``tools.per_channel.NAME``, still read) may only take tools away (its allow
list is intersected, its deny list added), and a task from several channels gets the
narrowest of them. ``email`` has a default entry (no ``write_file``, no ``web_fetch``
host, read-only workspace) unless settings give it one.

:meth:`Policy.deny_reason` is the one function that decides whether a call may run.
The secret tools (:data:`SECRET_TOOLS`) are neither offered nor run for a task from a
channel whose ``channels.NAME.secrets`` does not allow them (email, a2a and mcp by
default: :func:`jarvis.safety.channel_policy.secrets_refused`).

Rate limits are per tool and per registry (that is, per desktop): at most
``max_calls`` accepted calls in any ``window_s`` seconds, and at least
``cooldown_s`` seconds between two accepted calls. Rejected calls do not count.

Serialisation: the calls of one task run one at a time (:class:`TaskLocks`).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jarvis.safety.channel_policy import secrets_refused
from jarvis.tools.policy_settings import ToolLimit, ToolPolicy
from jarvis.tools.toolbox_settings import ChannelPolicy, default_channels

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.safety.channel_policy import ChannelSettings

Clock = Callable[[], float]
SECRET_TOOLS = frozenset({"type_secret", "type_totp"})
"""Tools that type a stored secret: only for tasks whose channels allow secrets."""

# Task ids whose lock the current asyncio task already holds (a preset running its steps).
_held_locks: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "jarvis_tool_locks", default=frozenset()
)


class Policy:
    """Allow/deny decisions and timeouts for tool names."""

    def __init__(
        self, policy: ToolPolicy, channels: Mapping[str, ChannelSettings] | None = None
    ) -> None:
        self._policy = policy
        self._blocks: Mapping[str, ChannelSettings] = dict(channels or {})
        blocks = {n: b.tools for n, b in (channels or {}).items() if b.tools is not None}
        self._channels: dict[str, ChannelPolicy] = {
            **default_channels(),
            **policy.per_channel,
            **blocks,
        }

    @classmethod
    def for_settings(cls, settings: Settings) -> Policy:
        """The policy of ``settings.tools`` narrowed by each ``channels.NAME.tools``."""
        return cls(settings.tools, settings.channels)

    @property
    def timeout_s(self) -> float:
        return self._policy.timeout_s

    def timeout_for(self, name: str) -> float | None:
        """The configured timeout of one tool, if settings give it one."""
        limit = self._policy.limits.get(name)
        return limit.timeout_s if limit is not None else None

    def channel(self, name: str) -> ChannelPolicy | None:
        """The policy entry of one channel, if there is one."""
        return self._channels.get(name)

    def lists_for(self, provider: str | None) -> tuple[frozenset[str] | None, frozenset[str]]:
        """The effective (allow, deny) lists for ``provider``."""
        allow = self._policy.allow
        deny = set(self._policy.deny)
        override = self._policy.per_provider.get(provider) if provider else None
        if override is not None:
            if override.allow is not None:
                allow = override.allow
            deny.update(override.deny)
        return (frozenset(allow) if allow is not None else None), frozenset(deny)

    def allowed(
        self,
        name: str,
        provider: str | None,
        requires: Iterable[str] = (),
        channels: Iterable[str] = (),
    ) -> bool:
        """Whether ``name`` (and every tool it calls, ``requires``) may be called."""
        return self.deny_reason(name, provider, requires, channels) is None

    def deny_reason(
        self,
        name: str,
        provider: str | None,
        requires: Iterable[str] = (),
        channels: Iterable[str] = (),
    ) -> str | None:
        """``None`` when allowed, else a sentence saying why not: the one policy decision.

        ``provider``'s lists apply first, then each of ``channels``' entries.
        """
        allow, deny = self.lists_for(provider)
        where = f" for provider '{provider}'" if provider else ""
        for tool in (name, *requires):
            reason = _refusal(tool, allow, deny)
            if reason is not None:
                return _sentence(name, tool, reason, where)
        for channel in channels:
            entry = self._channels.get(channel)
            if entry is None:
                continue
            c_allow = frozenset(entry.allow) if entry.allow is not None else None
            for tool in (name, *requires):
                reason = _refusal(tool, c_allow, frozenset(entry.deny))
                if reason is not None:
                    return _sentence(name, tool, reason, f" for tasks from channel '{channel}'")
        if SECRET_TOOLS.intersection((name, *requires)):
            refused = secrets_refused(self._blocks, channels)
            if refused is not None:
                return f"tool '{name}' is not offered: {refused}"
        return None

    def web_hosts(self, channels: Iterable[str]) -> list[str] | None:
        """Hosts ``web_fetch`` may reach for these channels: ``None`` any public host."""
        hosts: set[str] | None = None
        for channel in channels:
            entry = self._channels.get(channel)
            if entry is None or entry.web_hosts is None:
                continue
            named = {h.lower().rstrip(".") for h in entry.web_hosts}
            hosts = named if hosts is None else hosts & named
        return sorted(hosts) if hosts is not None else None

    def workspace_read_only(self, channels: Iterable[str]) -> bool:
        """Whether one of these channels makes the workspace read-only."""
        return any((e := self._channels.get(c)) is not None and e.read_only for c in channels)


def _refusal(tool: str, allow: frozenset[str] | None, deny: frozenset[str]) -> str | None:
    if tool in deny:
        return "denied by policy"
    if allow is not None and tool not in allow:
        return "not in the allow list"
    return None


def _sentence(name: str, tool: str, reason: str, where: str) -> str:
    if tool == name:
        return f"tool '{name}' is {reason}{where}"
    return f"tool '{name}' uses '{tool}', which is {reason}{where}"


@dataclass(frozen=True)
class RateDecision:
    """Why a call was refused and when it may be tried again."""

    retry_after_s: float
    message: str


class RateLimiter:
    """Sliding-window call limits and cooldowns per tool name."""

    def __init__(self, limits: dict[str, ToolLimit], clock: Clock = time.monotonic) -> None:
        self._limits = dict(limits)
        self._clock = clock
        self._calls: dict[str, deque[float]] = {}

    def acquire(self, name: str) -> RateDecision | None:
        """Count one call of ``name`` now, or return why it must wait (and count nothing)."""
        limit = self._limits.get(name)
        if limit is None:
            return None
        now = self._clock()
        calls = self._calls.setdefault(name, deque())
        horizon = max(limit.window_s if limit.max_calls else 0.0, limit.cooldown_s)
        while calls and now - calls[0] >= horizon:
            calls.popleft()
        decision = _check(name, limit, calls, now)
        if decision is None:
            calls.append(now)
        return decision


def _check(name: str, limit: ToolLimit, calls: deque[float], now: float) -> RateDecision | None:
    """Pure decision for one call given the accepted call times still in the horizon."""
    if limit.cooldown_s and calls and now - calls[-1] < limit.cooldown_s:
        wait = calls[-1] + limit.cooldown_s - now
        return RateDecision(
            wait,
            f"rate limited: '{name}' has a cooldown of {limit.cooldown_s:g}s between calls; "
            f"it can be called again in {wait:.1f}s",
        )
    if limit.max_calls is not None:
        recent = [t for t in calls if now - t < limit.window_s]
        if len(recent) >= limit.max_calls:
            wait = recent[-limit.max_calls] + limit.window_s - now
            return RateDecision(
                wait,
                f"rate limited: '{name}' allows {limit.max_calls} call(s) per "
                f"{limit.window_s:g}s; it can be called again in {wait:.1f}s",
            )
    return None


class TaskLocks:
    """One asyncio.Lock per task id (per event loop), dropped when nobody uses it.

    Calls of one task run one at a time. A call made while the current asyncio
    task already holds the lock (a preset running its steps) does not wait for it.
    """

    @dataclass
    class _Entry:
        loop: asyncio.AbstractEventLoop
        lock: asyncio.Lock
        users: int = 0

    def __init__(self) -> None:
        self._entries: dict[str, TaskLocks._Entry] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        if key in _held_locks.get():  # re-entered by a preset's step: already ours
            yield
            return
        loop = asyncio.get_running_loop()
        entry = self._entries.get(key)
        if entry is None or entry.loop is not loop:
            entry = self._entries[key] = self._Entry(loop, asyncio.Lock())
        entry.users += 1
        try:
            async with entry.lock:
                token = _held_locks.set(_held_locks.get() | {key})
                try:
                    yield
                finally:
                    _held_locks.reset(token)
        finally:
            entry.users -= 1
            if entry.users == 0 and self._entries.get(key) is entry:
                del self._entries[key]
