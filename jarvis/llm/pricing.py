"""Rough USD cost of a response, for the running cost display (not for billing).

Prices are US dollars per million tokens as published by the vendors; a model is
matched by the longest known name its id starts with, so dated ids
("claude-sonnet-4-5-20250929") and provider prefixes ("openai/gpt-4.1") work.
Unknown models cost 0.0.
"""

from __future__ import annotations

from typing import NamedTuple

from jarvis.llm.types import Usage


class Price(NamedTuple):
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


def _claude(inp: float, out: float) -> Price:
    # Anthropic: cache reads cost 0.1x input, 5-minute cache writes 1.25x input
    return Price(inp, out, inp * 0.1, inp * 1.25)


def _gpt(inp: float, out: float, cached: float) -> Price:
    # OpenAI caches automatically; there is no write surcharge
    return Price(inp, out, cached, inp)


PRICES: dict[str, Price] = {
    "claude-opus-4": _claude(5.0, 25.0),  # Opus 4.5 and later
    "claude-opus-4-0": _claude(15.0, 75.0),
    "claude-opus-4-1": _claude(15.0, 75.0),
    "claude-opus-4-2025": _claude(15.0, 75.0),  # dated Opus 4.0 ids
    "claude-3-opus": _claude(15.0, 75.0),
    "claude-sonnet-4": _claude(3.0, 15.0),
    "claude-3-7-sonnet": _claude(3.0, 15.0),
    "claude-3-5-sonnet": _claude(3.0, 15.0),
    "claude-haiku-4-5": _claude(1.0, 5.0),
    "claude-3-5-haiku": _claude(0.8, 4.0),
    "claude-3-haiku": _claude(0.25, 1.25),
    "gpt-4.1": _gpt(2.0, 8.0, 0.5),
    "gpt-4.1-mini": _gpt(0.4, 1.6, 0.1),
    "gpt-4.1-nano": _gpt(0.1, 0.4, 0.025),
    "gpt-4o": _gpt(2.5, 10.0, 1.25),
    "gpt-4o-mini": _gpt(0.15, 0.6, 0.075),
}


def price_of(model: str) -> Price | None:
    """The price entry for ``model``, or None when it is not known."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    best = max((k for k in PRICES if name.startswith(k)), key=len, default=None)
    return PRICES[best] if best is not None else None


def cost_usd(model: str, usage: Usage) -> float:
    """Estimated cost of ``usage`` on ``model`` in USD; 0.0 for an unknown model."""
    price = price_of(model)
    if price is None:
        return 0.0
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    )
    return total / 1_000_000
