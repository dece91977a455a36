"""Rough USD cost of a response, and a model of what a request costs under each
provider's prompt-cache rules (:class:`PromptCache`; used by bench/context_cost.py).

Prices are US dollars per million tokens as published by the vendors; a model is
matched by the longest known name its id starts with, so dated ids
("claude-sonnet-4-5-20250929") and provider prefixes ("openai/gpt-4.1") work.
Unknown models cost 0.0.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from jarvis.usage import Usage


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


# --- the cost of a request under each provider's caching rules ---------------------------

ANTHROPIC_WRITE = 1.25  # 5-minute cache writes, times the input price
ANTHROPIC_READ = 0.10
ANTHROPIC_MIN_PREFIX = 1024  # tokens: shorter prefixes are not cached (Sonnet, Opus)
ANTHROPIC_LOOKBACK = 20  # blocks before a breakpoint that are checked for a hit
OPENAI_MIN_PREFIX = 1024  # prompt caching starts at 1024 tokens ...
OPENAI_STEP = 128  # ... and grows in 128-token increments


@dataclass(frozen=True)
class Block:
    """One content block of a request in cache order: its identity, size and whether a
    cache breakpoint (Anthropic's ``cache_control``) ends on it."""

    key: str
    tokens: int
    breakpoint: bool = False


@dataclass(frozen=True)
class RequestCost:
    """Prompt tokens of one request by how they were billed, and the effective input cost
    in input-token equivalents (input + write x write price + read x read price)."""

    input: int
    cache_write: int
    cache_read: int
    effective: float


@dataclass
class PromptCache:
    """What a provider has cached from earlier requests: prefix digests."""

    rules: Literal["anthropic", "openai"]
    read_price: float = ANTHROPIC_READ
    write_price: float = ANTHROPIC_WRITE
    _prefixes: dict[str, int] = field(default_factory=dict)
    _writes: dict[str, int] = field(default_factory=dict)
    """Anthropic: the tokens each billed cache write added, by the prefix it ends on,
    until a later request reads that prefix."""

    @classmethod
    def for_model(cls, model: str, rules: Literal["anthropic", "openai"]) -> PromptCache:
        price = price_of(model)
        if rules == "openai":
            read = price.cache_read / price.input if price else 0.5
            return cls("openai", read_price=read, write_price=1.0)
        return cls("anthropic")

    def cost(self, blocks: list[Block]) -> RequestCost:
        """Bill one request and remember what it caches."""
        digests, ends = _chain(blocks)
        if self.rules == "openai":
            return self._openai(digests, ends)
        return self._anthropic(blocks, digests, ends)

    def _anthropic(self, blocks: list[Block], digests: list[str], ends: list[int]) -> RequestCost:
        marks = [i for i, b in enumerate(blocks) if b.breakpoint]
        hit = -1
        for mark in marks:
            for j in range(mark, max(-1, mark - ANTHROPIC_LOOKBACK - 1), -1):
                if digests[j] in self._prefixes:
                    hit = max(hit, j)
                    break
        read = ends[hit] if hit >= 0 else 0
        if hit >= 0:
            self._writes.pop(digests[hit], None)
        last = marks[-1] if marks else -1
        written = 0
        if last > hit and ends[last] >= ANTHROPIC_MIN_PREFIX:
            written = ends[last] - read
            self._writes[digests[last]] = written
        for mark in marks:
            if ends[mark] >= ANTHROPIC_MIN_PREFIX:
                self._prefixes[digests[mark]] = ends[mark]
        total = ends[-1] if ends else 0
        plain = total - read - written
        effective = plain + written * self.write_price + read * self.read_price
        return RequestCost(plain, written, read, effective)

    def unread_writes(self) -> list[int]:
        """The tokens of each cache write so far that no later request has read."""
        return list(self._writes.values())

    def _openai(self, digests: list[str], ends: list[int]) -> RequestCost:
        matched = max((ends[i] for i, d in enumerate(digests) if d in self._prefixes), default=0)
        read = 0
        if matched >= OPENAI_MIN_PREFIX:
            read = OPENAI_MIN_PREFIX + (matched - OPENAI_MIN_PREFIX) // OPENAI_STEP * OPENAI_STEP
        for digest, end in zip(digests, ends, strict=True):
            self._prefixes[digest] = end
        total = ends[-1] if ends else 0
        return RequestCost(total - read, 0, read, (total - read) + read * self.read_price)


def _chain(blocks: list[Block]) -> tuple[list[str], list[int]]:
    """Prefix digests and cumulative token counts, block by block."""
    digests: list[str] = []
    ends: list[int] = []
    digest, total = hashlib.sha256(), 0
    for block in blocks:
        digest.update(block.key.encode())
        digest.update(b"\0")
        total += block.tokens
        digests.append(digest.copy().hexdigest())
        ends.append(total)
    return digests, ends
