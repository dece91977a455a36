"""Typed tools, their generated schemas, and the one place tool calls are executed.

A tool is a function ``fn(args, context)`` (sync or async) with a pydantic
arguments model (``extra="forbid"``); its JSON schema is generated from that
model. A tool that comes with a JSON schema of its own (an MCP server's) is
registered with :meth:`ToolRegistry.register_schema`: its arguments are checked
with jsonschema and handed over as a dict. :meth:`ToolRegistry.execute`
validates a call, applies the policy, rate limits and timeout, runs the tool
(blocking functions in a worker thread), writes the audit line, emits events
and returns a :class:`ToolResult`. It never raises into the agent loop, except
``CancelledError`` so that cancelling a task stops the call.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from jarvis.config import Settings
from jarvis.events import ToolCallFinished, ToolCallStarted
from jarvis.llm.types import ToolCall, ToolSpec
from jarvis.redaction import known_secrets, redact, redact_value
from jarvis.tools.audit import AuditLog, AuditRecord, summarize_arguments
from jarvis.tools.policy import Clock, Policy, RateLimiter, TaskLocks
from jarvis.tools.policy_settings import ToolPolicy
from jarvis.tools.results import (
    INTERNAL,
    INVALID_PARAMS,
    NOT_ALLOWED,
    RATE_LIMITED,
    TIMEOUT,
    UNKNOWN_TOOL,
    ToolError,
    ToolFailure,
    ToolResult,
    scrubbed,
)
from jarvis.tools.tool import Tool, ToolFn, model_tool, schema_tool

if TYPE_CHECKING:
    from jarvis.safety.approvals import ApprovalGate
    from jarvis.tools.context import ToolContext

__all__ = [  # the result types and codes live in results.py; callers may import them here
    "INTERNAL",
    "INVALID_PARAMS",
    "NOT_ALLOWED",
    "RATE_LIMITED",
    "TIMEOUT",
    "UNKNOWN_TOOL",
    "Tool",
    "ToolError",
    "ToolFailure",
    "ToolRegistry",
    "ToolResult",
    "current_call_id",
]

log = logging.getLogger(__name__)

STOP_GRACE_S = 2.0
"""How long a timed-out blocking tool gets to notice the stop before the next call runs."""

# The id of the call being executed, for nested calls (preset steps).
current_call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jarvis_tool_call_id", default=None
)


class ToolRegistry:
    """The tools one agent may call, with policy, limits, audit and events."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        clock: Clock = time.monotonic,
        approvals: ApprovalGate | None = None,
    ) -> None:
        tools_policy = settings.tools if settings is not None else ToolPolicy()
        self.settings = settings
        self.policy = Policy(tools_policy, settings.channels if settings is not None else None)
        self.limiter = RateLimiter(tools_policy.limits, clock)
        self.audit = AuditLog(settings)
        self._tools: dict[str, Tool] = {}
        self._locks = TaskLocks()
        self.approvals = approvals
        """Holds risky calls until a person answers (jarvis/safety/approvals.py)."""

    # --- registration ------------------------------------------------------
    def register(
        self,
        name: str,
        fn: ToolFn,
        args_model: type[BaseModel],
        description: str | None = None,
        *,
        timeout_s: float | None = None,
        requires: Sequence[str] = (),
        audit_fields: Sequence[str] = (),
        origin: str = "builtin",
        moves_input: bool = False,
        settles: bool | None = None,
        control: bool = False,
    ) -> Tool:
        """Add a tool; its description defaults to the function's docstring.

        ``moves_input``: it sends mouse or keyboard input; ``settles``: the screen must
        settle after it (by default, when it moves input); ``control``: it ends the step
        (``finished``, ``call_user``). See :class:`~jarvis.tools.tool.Tool`."""
        self._free(name)
        tool = model_tool(
            name,
            fn,
            args_model,
            description,
            timeout_s=timeout_s,
            requires=requires,
            audit_fields=audit_fields,
            origin=origin,
            moves_input=moves_input,
            settles=settles,
            control=control,
        )
        self._tools[name] = tool
        return tool

    def register_schema(
        self,
        name: str,
        fn: ToolFn,
        schema: dict[str, Any],
        description: str,
        *,
        timeout_s: float | None = None,
        origin: str,
    ) -> Tool:
        """Add a tool whose arguments are described by a JSON schema (checked with jsonschema;
        the function gets the arguments as a dict). An invalid schema raises ValueError."""
        self._free(name)
        tool = schema_tool(name, fn, schema, description, timeout_s=timeout_s, origin=origin)
        self._tools[name] = tool
        return tool

    def _free(self, name: str) -> None:
        if name in self._tools:
            raise ValueError(f"tool '{name}' is already registered")

    def unregister(self, name: str) -> bool:
        """Remove a tool (an MCP server dropped it, a skill file changed); True if it was there."""
        return self._tools.pop(name, None) is not None

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._tools

    # --- specs -------------------------------------------------------------
    def _provider(self, provider: str | None) -> str | None:
        if provider is not None:
            return provider
        return self.settings.provider if self.settings is not None else None

    def specs(self, provider: str | None = None, channels: Sequence[str] = ()) -> list[ToolSpec]:
        """Specs of the tools the policy offers to ``provider`` (default: the settings') for
        a task from ``channels``."""
        who = self._provider(provider)
        return [
            t.spec()
            for t in list(self._tools.values())
            if self.policy.allowed(t.name, who, t.requires, channels)
        ]

    def offered(self, provider: str | None = None, channels: Sequence[str] = ()) -> list[str]:
        """Names of the tools the policy offers to ``provider`` for a task from ``channels``."""
        who = self._provider(provider)
        return [
            t.name
            for t in list(self._tools.values())
            if self.policy.allowed(t.name, who, t.requires, channels)
        ]

    def anthropic_tools(self, provider: str | None = None) -> list[dict[str, Any]]:
        return [s.to_anthropic() for s in self.specs(provider or "anthropic")]

    def openai_tools(self, provider: str | None = None) -> list[dict[str, Any]]:
        return [s.to_openai() for s in self.specs(provider or "openai")]

    def timeout_for(self, tool: Tool) -> float:
        """Settings for this tool, else the tool's own, else the global ceiling."""
        configured = self.policy.timeout_for(tool.name)
        if configured is not None:
            return configured
        return tool.timeout_s if tool.timeout_s is not None else self.policy.timeout_s

    # --- execution ---------------------------------------------------------
    async def execute_call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        """Execute a parsed model tool call (a broken-JSON call is an invalid-params result);
        the call's ``note`` (a point moved onto the screen's edge) goes with its result."""
        result = await self.execute(
            call.name, call.arguments, context, call_id=call.id, parse_error=call.parse_error
        )
        return result.with_note(call.note) if call.note else result

    async def execute(
        self,
        name: str,
        arguments: Any,
        context: ToolContext,
        call_id: str | None = None,
        *,
        parse_error: str | None = None,
    ) -> ToolResult:
        """Run one tool call and return its result; never raises except on cancellation."""
        if not isinstance(name, str):  # not even a name: unknown, said in the model's terms
            name = json.dumps(name, default=repr)
        call_id = call_id or f"call-{uuid.uuid4().hex[:12]}"
        parent = current_call_id.get()
        secrets = known_secrets(self.settings)
        started = time.perf_counter()
        result: ToolResult | None = None
        async with self._locks.hold(context.task_id):
            context.bus.emit(
                ToolCallStarted(
                    task_id=context.task_id,
                    call_id=call_id,
                    tool_name=redact(name, secrets),
                    arguments=_event_arguments(arguments, secrets),
                )
            )
            token = current_call_id.set(call_id)
            try:
                result = await self._run(name, arguments, context, parse_error)
            finally:  # also on cancellation: the line and the event say "not ok, no code"
                current_call_id.reset(token)
                if result is not None:
                    result = scrubbed(result, secrets)
                self._finish(name, arguments, context, call_id, parent, started, result, secrets)
        return result

    async def _run(
        self, name: str, arguments: Any, context: ToolContext, parse_error: str | None
    ) -> ToolResult:
        tool = self._tools.get(name)
        provider = context.provider_name
        if tool is None and parse_error is not None:  # unreadable: the reason, not the name
            return ToolResult.failure(INVALID_PARAMS, f"the call could not be read: {parse_error}")
        if tool is None:
            offered = ", ".join(self.offered(provider, context.channels)) or "none"
            return ToolResult.failure(
                UNKNOWN_TOOL, f"unknown tool '{name}'; available tools: {offered}"
            )
        reason = self.policy.deny_reason(name, provider, tool.requires, context.channels)
        if reason is not None:
            return ToolResult.failure(NOT_ALLOWED, reason)
        if parse_error is not None:
            return ToolResult.failure(
                INVALID_PARAMS, f"the arguments were not valid JSON: {parse_error}"
            )
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return ToolResult.failure(
                INVALID_PARAMS,
                f"arguments must be a JSON object, got {type(arguments).__name__}",
            )
        try:
            args = tool.validate(arguments, context)
        except ValueError as exc:
            return ToolResult.failure(INVALID_PARAMS, str(exc))
        if self.approvals is not None:
            refusal = await self.approvals.check(name, arguments, context, current_call_id.get())
            if refusal is not None:
                return ToolResult.not_run(refusal)
        decision = self.limiter.acquire(name)
        if decision is not None:
            return ToolResult.failure(RATE_LIMITED, decision.message)
        return await self._invoke(tool, args, context)

    async def _invoke(self, tool: Tool, args: BaseModel, context: ToolContext) -> ToolResult:
        """The one boundary where any failure of a tool becomes a result."""
        timeout = self.timeout_for(tool)
        work: asyncio.Future[Any] | None = None
        try:
            async with asyncio.timeout(timeout) as scope:
                if tool.is_async:
                    data = await tool.fn(args, context)
                else:  # shielded: on a timeout the thread is told to stop, then awaited
                    work = asyncio.ensure_future(asyncio.to_thread(tool.fn, args, context))
                    data = await asyncio.shield(work)
        except ToolFailure as exc:
            if exc.code == TIMEOUT:  # a tool's own time limit: it may have happened all the same
                return ToolResult.timed_out(exc.message)
            return ToolResult.failure(exc.code, exc.message)
        except TimeoutError:
            if not scope.expired():
                log.exception("tool %s raised TimeoutError (task %s)", tool.name, context.task_id)
                return ToolResult.failure(INTERNAL, f"'{tool.name}' failed: timed out internally")
            log.warning("tool %s timed out after %.1fs", tool.name, timeout)
            if work is not None:
                await _stop_thread(work, context, tool.name)
            return ToolResult.timed_out(
                f"'{tool.name}' did not finish within {timeout:g}s and was abandoned"
            )
        except Exception as exc:  # the boundary: a tool's bug becomes a result, logged
            log.exception("tool %s failed (task %s)", tool.name, context.task_id)
            return ToolResult.failure(
                INTERNAL, f"'{tool.name}' failed: {type(exc).__name__}: {exc}"
            )
        if isinstance(data, ToolResult):
            return data
        return ToolResult.success(data)

    def _finish(
        self,
        name: str,
        arguments: Any,
        context: ToolContext,
        call_id: str,
        parent: str | None,
        started: float,
        result: ToolResult | None,
        secrets: set[str],
    ) -> None:
        latency_ms = (time.perf_counter() - started) * 1000
        ok = result is not None and result.ok
        error = result.error if result is not None else None
        tool = self._tools.get(name)
        self.audit.write(
            context.data_dir,
            AuditRecord(
                trace_id=context.trace_id,
                task_id=context.task_id,
                call_id=call_id,
                parent_call_id=parent,
                tool_name=name,
                ok=ok,
                error_code=error.code if error else None,
                latency_ms=round(latency_ms, 2),
                provider=context.provider_name,
                channel=context.channel,
                args=_summary(arguments, tool),
            ),
        )
        context.bus.emit(
            ToolCallFinished(
                task_id=context.task_id,
                call_id=call_id,
                tool_name=redact(name, secrets),
                ok=ok,
                error_code=error.code if error else None,
                error_message=error.message if error else None,
                latency_ms=latency_ms,
                data=result.data if result is not None else None,
                cancelled=result is None,
            )
        )


def _summary(arguments: Any, tool: Tool | None) -> dict[str, Any] | str:
    return summarize_arguments(arguments, tool.audit_fields if tool else ())


def _event_arguments(arguments: Any, secrets: set[str]) -> dict[str, Any]:
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        return {"_raw": redact(repr(arguments)[:200], secrets)}
    clean = redact_value(arguments, secrets)
    return clean if isinstance(clean, dict) else {}


async def _stop_thread(work: asyncio.Future[Any], context: ToolContext, name: str) -> None:
    """Stop a timed-out blocking tool before the task's next call runs: raise the
    context's stop (input checks it between pieces) and wait a moment for the thread."""
    if context.stop is None or context.stop.is_set():  # no way to stop it, or cancelling
        return
    context.stop.set()
    await asyncio.wait({work}, timeout=STOP_GRACE_S)  # a cancel here leaves the stop raised
    context.stop.clear()
    if not work.done():
        log.warning("tool %s is still running after its timeout; it could not be stopped", name)
    elif not work.cancelled() and work.exception() is not None:  # read, so never "unretrieved"
        log.info("tool %s ended after its timeout: %s", name, work.exception())
