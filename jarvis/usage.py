"""Token counts: a value every layer shares (providers report it, runs, eval, the budget and
memory add it up), so it sits in the ground layer rather than in ``jarvis.llm``."""

from __future__ import annotations

from pydantic import BaseModel


class Usage(BaseModel):
    """Token counts of one response.

    ``input_tokens`` counts prompt tokens that were neither read from nor written to the
    cache (Anthropic's convention; the OpenAI adapter subtracts cached tokens), so the
    whole prompt is ``input_tokens + cache_read_tokens + cache_write_tokens``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )
