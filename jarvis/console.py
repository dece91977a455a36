"""Live progress of a task in the terminal, drawn with rich from the event bus; every text
shown passes :func:`jarvis.redaction.redact`."""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape

from jarvis.config import Settings
from jarvis.events import (
    AgentWarning,
    Event,
    EventBus,
    ModelRetry,
    ModelTextDelta,
    StepFinished,
    StepStarted,
    TaskStarted,
    ToolCallFinished,
    ToolCallStarted,
    ToolModeFallback,
    VerificationFinished,
)
from jarvis.logfile import console_shows_events
from jarvis.redaction import redact
from jarvis.task_words import shown, status_word

STATUS_STYLE = {
    "completed": "bold green",
    "failed": "bold red",
    "needs_user": "bold yellow",
    "cancelled": "bold magenta",
}


class ConsoleReporter:
    """Subscribes to the bus and prints streamed thought, tool calls, timings, tokens and cost."""

    def __init__(self, bus: EventBus, settings: Settings, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.settings = settings
        self._in_text = False
        self._tokens_in = 0
        self._tokens_out = 0
        bus.subscribe(self.on_event)
        console_shows_events()  # what it draws is no longer logged to stderr too

    def _end_text(self) -> None:
        if self._in_text:
            self.console.print()
            self._in_text = False

    def on_event(self, event: Event) -> None:
        c = self.console
        if isinstance(event, ModelTextDelta):
            if not self._in_text:
                c.print("[dim]thought:[/] ", end="")
                self._in_text = True
            c.print(_shown(event.text), end="", style="italic")
            return
        self._end_text()
        if isinstance(event, TaskStarted):
            model = f"{self.settings.provider}/{self.settings.active_model}"
            c.print(f"[bold]task[/] {_shown(event.task)}  [dim]({event.task_id}, {model})[/]")
        elif isinstance(event, StepStarted):
            c.rule(f"step {event.step}", style="dim")
        elif isinstance(event, ToolCallStarted):
            args = redact(json.dumps(event.arguments, ensure_ascii=False))
            c.print(f"  [cyan]→ {event.tool_name}[/] {_shown(args[:200])}")
        elif isinstance(event, ToolCallFinished):
            if event.ok:
                data = _brief(event.data)
                c.print(
                    f"  [green]✓ {event.tool_name}[/] [dim]{event.latency_ms:.0f} ms[/]"
                    + (f" {_shown(data)}" if data else "")
                )
            else:
                message = _shown(event.error_message or "")
                c.print(f"  [red]✗ {event.tool_name} {event.error_code}[/] {message}")
        elif isinstance(event, StepFinished):
            self._tokens_in += event.input_tokens
            self._tokens_out += event.output_tokens
            times = " ".join(f"{k} {v:.0f}" for k, v in event.timings_ms.items())
            c.print(
                f"  [dim]ms: {times} | tokens in {self._tokens_in} out {self._tokens_out}"
                f" (cache read {event.cache_read_tokens}) | ${event.cost_usd:.4f}[/]"
            )
        elif isinstance(event, VerificationFinished):
            style = "green" if event.done else "yellow"
            verdict = "verified" if event.done else "not verified"
            c.print(f"  [{style}]{verdict}:[/] {_shown(event.reason)}")
        elif isinstance(event, AgentWarning):
            c.print(f"  [yellow]! {_shown(event.message)}[/]")
        elif isinstance(event, ModelRetry):
            c.print(
                f"  [yellow]model retry {event.attempt} in {event.delay_s:.1f}s:[/] "
                f"{_shown(event.reason)}"
            )
        elif isinstance(event, ToolModeFallback):
            c.print(f"  [yellow]tool mode: text for this run ({_shown(event.reason)})[/]")

    def final(self, outcome: object) -> None:
        self._end_text()
        status = getattr(outcome, "status", "failed")
        summary = getattr(outcome, "summary", "")
        steps = getattr(outcome, "steps", 0)
        cost = getattr(outcome, "cost_usd", 0.0)
        usage = getattr(outcome, "usage", None)
        tokens = (
            f", tokens in {usage.input_tokens} out {usage.output_tokens}"
            if usage is not None
            else ""
        )
        style, word = STATUS_STYLE.get(status_word(status), "bold"), shown(status)
        self.console.print(
            f"[{style}]{word}[/] after {steps} step(s){tokens}, ${cost:.4f}: {_shown(summary)}",
            soft_wrap=True,  # one line, however long: the terminal wraps it, not us
        )


def _shown(text: str) -> str:
    """Text for the terminal: secrets redacted, rich markup escaped."""
    return escape(redact(text))


def _brief(data: object, limit: int = 120) -> str:
    """A tool's result data on one short line ("" for none)."""
    if data is None or data == {}:
        return ""
    text = json.dumps(data, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
