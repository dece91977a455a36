"""Brain: perceive the screen, think and decide with the model, verify a claimed finish."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from jarvis import prompts
from jarvis.agent.context import (
    ContextPolicy,
    FrozenHeader,
    Turn,
    build_messages,
    parse_thought,
    parse_verdict,
)
from jarvis.config import Settings
from jarvis.desktop.a11y.view import ElementView
from jarvis.desktop.screen import Observation, Screen
from jarvis.events import EventBus, ModelTextDelta, ToolCallStreaming, VerificationFinished
from jarvis.llm.base import OnEvent, Provider, complete
from jarvis.llm.pricing import cost_usd
from jarvis.llm.profiles.select import active_profile, observation_kind, system_prompt
from jarvis.llm.types import (
    ImagePart,
    LLMRequest,
    LLMResponse,
    Message,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallStart,
    ToolSpec,
    UsageSoFar,
)
from jarvis.llm.wire_tokens import text_tokens
from jarvis.redaction import redact
from jarvis.usage import Usage

log = logging.getLogger(__name__)


@dataclass
class ThinkContext:
    """Everything one decision needs; built by the loop each step."""

    task: str
    task_id: str
    step: int
    max_steps: int
    observation: Observation
    todos: str = "(none)"
    memories: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    max_tokens: int | None = None
    """The output limit for this request (after a cut-off reply); None: the setting."""


@dataclass
class Decision:
    text: str
    reflection: str
    thought: str
    tool_calls: list[ToolCall]
    response: LLMResponse
    prompt: str
    screenshot: ImagePart
    request_bytes: int = 0


@dataclass
class Verdict:
    done: bool
    reason: str
    response: LLMResponse | None = None


def context_policy(settings: Settings) -> ContextPolicy:
    """The context policy of a run: the ``context_policy`` setting, K from
    ``keep_screenshots``, C and the scale of re-sent screenshots from the profile
    (``stable`` only)."""
    if settings.context_policy == "sliding":
        return ContextPolicy("sliding", settings.keep_screenshots)
    profile = active_profile(settings).profile
    return ContextPolicy("stable", settings.keep_screenshots, profile.chunk, profile.resend_scale)


def image_of(observation: Observation) -> ImagePart:
    return ImagePart.from_bytes(observation.data, observation.media_type)


class Brain:
    def __init__(
        self,
        provider: Provider,
        screen: Screen,
        settings: Settings,
        bus: EventBus,
        elements: ElementView | None = None,
    ) -> None:
        self.provider = provider
        self.screen = screen
        self.settings = settings
        self.bus = bus
        self.policy = context_policy(settings)
        self.profile = active_profile(settings).profile
        self.usage_so_far = Usage()
        """What the provider reported for the latest streamed call so far: a call cut short
        by a cancel still counts it."""
        self._frozen: FrozenHeader | None = None
        self.elements = elements if observation_kind(settings) != "screenshot" else None
        """The tree beside the screenshot: only when the setting and the profile ask for it."""
        if elements is not None and self.elements is None:
            log.info(
                "observation %s: profile %s does not take the accessibility tree; "
                "the screenshot alone",
                settings.observation,
                self.profile.name,
            )

    def _observe(
        self, targets: Sequence[tuple[int, int]] = (), still: Future[Observation] | None = None
    ) -> Observation:
        if still is not None and not still.cancelled():
            observation = still.result()  # made by the settle from the screen as it is
        else:
            observation = self.screen.capture()  # masked where a secret was typed
        if self.elements is not None:
            observation = self.elements.look(observation, targets)
            observation.tree = redact(observation.tree)  # a field may show a secret's value
        return observation

    async def perceive(
        self, targets: Sequence[tuple[int, int]] = (), still: Future[Observation] | None = None
    ) -> Observation:
        """A fresh screenshot (with the accessibility tree when the ``observation`` setting
        asks for it), taken in a worker thread. ``targets`` are the last step's pointer
        targets (model space): the tree of a window under one that is not the focused
        window is read too. ``still``: the screenshot the last settle made of the screen
        it saw still (the loop gives it when nothing ran since), used instead of a capture."""
        return await asyncio.to_thread(self._observe, targets, still)

    def system_prompt(self, observation: Observation) -> str:
        size = observation.image_size or observation.model_size
        return system_prompt(self.profile, size, observation.model_size, observation.monitor_note)

    def _header(self, ctx: ThinkContext) -> str:
        memories = "\n".join(f"- {m}" for m in ctx.memories) if ctx.memories else "(nothing)"
        history = "\n".join(ctx.history) if ctx.history else "(none yet)"
        return prompts.render(
            "user", task=ctx.task, todos=ctx.todos, memories=memories, history=history
        )

    def _stable_header(self, ctx: ThinkContext) -> tuple[str, list[str]]:
        """The header and the notes on what changed since it was frozen (a stable context
        re-renders the header only when its first turn changes)."""
        if self.policy.kind == "sliding":
            return self._header(ctx), []
        # the task's text is part of the anchor: a task run again after an update keeps its
        # id but must see its new text
        anchor = (ctx.task_id, ctx.task, ctx.turns[0].step if ctx.turns else None)
        if self._frozen is None or self._frozen.anchor != anchor:
            self._frozen = FrozenHeader(anchor, self._header(ctx), ctx.todos, tuple(ctx.memories))
        return self._frozen.text, self._frozen.changes(ctx.todos, ctx.memories)

    def _messages(self, ctx: ThinkContext, shot: ImagePart) -> tuple[list[Message], str]:
        """The step's messages and its prompt; the tree goes into this step's request only
        (the prompt kept for later turns is without it, so it is paid for once)."""
        header, changed = self._stable_header(ctx)
        prompt = self.step_prompt(ctx, changed)
        sent = f"{ctx.observation.tree}\n\n{prompt}" if ctx.observation.tree else prompt
        messages = build_messages(header, ctx.turns, shot, sent, self.policy.max_images)
        return messages, prompt

    def step_prompt(self, ctx: ThinkContext, changed: list[str] | None = None) -> str:
        notes = "".join(f"\n\n{n}" for n in [*(changed or []), *ctx.notes])
        return prompts.render("step", step=ctx.step, max_steps=ctx.max_steps, notes=notes)

    def _emit_text(self, task_id: str) -> OnEvent:
        self.usage_so_far = Usage()

        def on_event(event: StreamEvent) -> None:
            if isinstance(event, UsageSoFar):
                self.usage_so_far = event.usage
            elif isinstance(event, TextDelta) and event.text:
                self.bus.emit(ModelTextDelta(task_id=task_id, text=event.text))
            elif isinstance(event, ToolCallStart):
                self.bus.emit(
                    ToolCallStreaming(task_id=task_id, call_id=event.id, tool_name=event.name)
                )

        return on_event

    async def think_and_decide(self, ctx: ThinkContext, tools: list[ToolSpec]) -> Decision:
        """One streamed model call; its text is the reflection and thought, its calls the action."""
        shot = image_of(ctx.observation)
        messages, prompt = self._messages(ctx, shot)
        request = self._request(self.system_prompt(ctx.observation), messages, tools)
        # no later request starts with this one: the next step drops turns, or the next
        # call is the wrap-up at the step bound (no tools: its prefix differs from the start)
        last = ctx.step >= ctx.max_steps
        request.cache_tail = not (last or self.policy.last_before_drop(len(ctx.turns)))
        if ctx.max_tokens is not None:
            request.max_tokens = ctx.max_tokens
        response = await complete(self.provider, request, on_event=self._emit_text(ctx.task_id))
        reflection, thought = parse_thought(response.text)
        return Decision(
            text=response.text,
            reflection=reflection,
            thought=thought,
            tool_calls=response.tool_calls,
            response=response,
            prompt=prompt,
            screenshot=shot,
            request_bytes=request_size(request),
        )

    async def wrap_up(self, ctx: ThinkContext, limit: str) -> LLMResponse:
        """The last call at a bound: no tools, the model writes its final answer."""
        ctx.notes = [*ctx.notes, prompts.render("wrap_up", limit=limit)]
        messages, _ = self._messages(ctx, image_of(ctx.observation))
        # the last call of the run
        request = self._request(self.system_prompt(ctx.observation), messages, [], cache=False)
        return await complete(self.provider, request, on_event=self._emit_text(ctx.task_id))

    async def verify(
        self, task: str, summary: str, task_id: str, targets: Sequence[tuple[int, int]] = ()
    ) -> Verdict:
        """Check a claimed finish on a fresh screenshot with prompts/verify.md."""
        observation = await self.perceive(targets)
        text = prompts.render("verify", task=task, summary=summary or "(no summary)")
        if observation.tree:  # values a screenshot cannot show (a field's text, a box's state)
            text = f"{observation.tree}\n\n{text}"
        if observation.monitor_note:  # what the picture leaves out: the other monitors
            text = f"{observation.monitor_note}\n\n{text}"
        request = self._request(
            prompts.render_text("verify_system"),
            [Message.user(image_of(observation), text)],
            [],
            cache=False,  # a one-off: no later request starts with it
        )
        response = await complete(self.provider, request)
        done, reason = parse_verdict(response.text)
        usage = response.usage
        self.bus.emit(
            VerificationFinished(
                task_id=task_id,
                done=done,
                reason=reason,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cost_usd=cost_usd(self.settings.active_model, usage),
                tree_tokens=text_tokens(observation.tree) if observation.tree else 0,
            )
        )
        return Verdict(done=done, reason=reason, response=response)

    async def distill_skill(self, task: str, steps: list[str]) -> LLMResponse:
        """A short procedure of how a verified task was done, written by the model (its
        ``text``; the response carries the usage)."""
        text = prompts.render("skill", task=task, steps="\n".join(steps) or "(no steps)")
        request = self._request(
            prompts.render_text("skill_system"), [Message.user(text)], [], cache=False
        )
        return await complete(self.provider, request)

    def _request(
        self, system: str, messages: list[Message], tools: list[ToolSpec], cache: bool = True
    ) -> LLMRequest:
        """A request with the run's settings; ``cache=False`` for a one-off that no later
        request starts with (a cache write there would never be read)."""
        return LLMRequest(
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            tool_mode=self.settings.tool_mode,
            cache=cache,
        )


def request_size(request: LLMRequest) -> int:
    """Bytes of text plus image data in a request: the measure of context growth."""
    total = len(request.system.encode())
    for message in request.messages:
        for part in message.content:
            if isinstance(part, ImagePart):
                total += len(part.data_b64)
            elif hasattr(part, "text"):
                total += len(part.text.encode())
            else:
                total += len(part.model_dump_json().encode())
        for call in message.tool_calls:
            total += len(call.model_dump_json().encode())
    return total
