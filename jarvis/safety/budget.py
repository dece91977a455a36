"""The budget stop: a task ends when its cost or its tokens reach the budget.

``safety.max_cost_usd`` (USD, from :mod:`jarvis.llm.pricing`) and
``safety.max_tokens_total`` (input + output + cache tokens of every model call of the
task) are checked before each step. From ``budget_wrap_up_at`` of either (default 80%)
the model is told to finish with what it has; at the budget the task ends as failed
with the reason, without another model call (which would spend past the budget).
Pure functions over the usage so far.
"""

from __future__ import annotations

from dataclasses import dataclass

from jarvis.safety.settings import SafetySettings
from jarvis.usage import Usage


@dataclass(frozen=True)
class Spent:
    cost_usd: float
    tokens: int


def spent(usage: Usage, cost_usd: float) -> Spent:
    tokens = (
        usage.input_tokens
        + usage.output_tokens
        + usage.cache_read_tokens
        + usage.cache_write_tokens
    )
    return Spent(round(cost_usd, 6), tokens)


def has_budget(settings: SafetySettings) -> bool:
    return settings.max_cost_usd is not None or settings.max_tokens_total is not None


def exceeded(used: Spent, settings: SafetySettings) -> str | None:
    """Why the task must end now, or None while it is within its budget."""
    if settings.max_cost_usd is not None and used.cost_usd >= settings.max_cost_usd:
        return (
            f"reached the cost budget: ${used.cost_usd:.4f} of ${settings.max_cost_usd:g} "
            f"spent ({used.tokens} tokens)"
        )
    if settings.max_tokens_total is not None and used.tokens >= settings.max_tokens_total:
        return (
            f"reached the token budget: {used.tokens} of {settings.max_tokens_total} tokens "
            f"used (${used.cost_usd:.4f})"
        )
    return None


def share(used: Spent, settings: SafetySettings) -> float:
    """The largest share of a budget used (0 when there is no budget)."""
    shares = [0.0]
    if settings.max_cost_usd is not None:
        shares.append(used.cost_usd / settings.max_cost_usd)
    if settings.max_tokens_total is not None:
        shares.append(used.tokens / settings.max_tokens_total)
    return max(shares)


def wrap_up_note(used: Spent, settings: SafetySettings) -> str | None:
    """Near the budget: tell the model to finish now."""
    used_share = share(used, settings)
    if used_share < settings.budget_wrap_up_at or exceeded(used, settings) is not None:
        return None
    return (
        f"The task's budget is {used_share:.0%} used; it ends when the budget is reached. "
        "Finish now: call `finished` with what is done, or `call_user`, in this step."
    )
