"""The context policy (which turns stay) and the cost model of the provider caches (pure)."""

from __future__ import annotations

import pytest

from jarvis.agent.context import ContextPolicy, FrozenHeader, Turn
from jarvis.llm.pricing import Block, PromptCache


def turns(n: int) -> list[Turn]:
    return [Turn(step=i, screenshot=None, prompt=f"p{i}", text="t") for i in range(1, n + 1)]


@pytest.mark.parametrize(
    ("kind", "keep", "chunk", "have", "kept"),
    [
        ("sliding", 3, 0, 3, [2, 3]),  # K - 1 turns + the current screenshot = K
        ("sliding", 1, 0, 2, []),
        ("stable", 3, 5, 7, [1, 2, 3, 4, 5, 6, 7]),  # 7 turns + current = K + C: keep all
        ("stable", 3, 5, 8, [7, 8]),  # one more would exceed K + C: drop C at once
        ("stable", 3, 5, 2, [1, 2]),
    ],
)
def test_policy_trim(kind, keep: int, chunk: int, have: int, kept: list[int]) -> None:
    policy = ContextPolicy(kind, keep, chunk)
    assert [t.step for t in policy.trim(turns(have))] == kept
    assert policy.max_images == keep + (chunk if kind == "stable" else 0)


def test_stable_window_sees_at_least_k_and_at_most_k_plus_c() -> None:
    policy = ContextPolicy("stable", 3, 5)
    window: list[Turn] = []
    seen = []
    for step in range(1, 60):
        seen.append(len(window) + 1)  # the turns plus the current screenshot
        window = policy.trim([*window, Turn(step=step, screenshot=None, prompt="", text="")])
    assert min(seen[2:]) == 3 and max(seen) == 8
    firsts = {s for s in seen}
    assert firsts == {1, 2, 3, 4, 5, 6, 7, 8}
    with pytest.raises(ValueError, match="keep must be"):
        ContextPolicy("stable", 0, 2)


def test_frozen_header_reports_what_changed_since() -> None:
    frozen = FrozenHeader(("t", "task", 1), "HEADER", "(none)", ("likes tea",))
    assert frozen.changes("(none)", ["likes tea"]) == []
    notes = frozen.changes("- [ ] call Bob", ["likes coffee"])
    assert notes[0].startswith("Open todos now (updated):") and "call Bob" in notes[0]
    assert "likes coffee" in notes[1]


def req(*spec: tuple[str, int, bool]) -> list[Block]:
    return [Block(key, tokens, mark) for key, tokens, mark in spec]


def test_anthropic_cache_writes_then_reads_the_stable_prefix() -> None:
    cache = PromptCache("anthropic")
    first = cache.cost(req(("tools", 1500, True), ("m1", 2000, True), ("m2", 300, False)))
    assert (first.input, first.cache_write, first.cache_read) == (300, 3500, 0)
    assert first.effective == pytest.approx(300 + 3500 * 1.25)
    # the next step starts with the same blocks: the prefix is read back
    second = cache.cost(
        req(
            ("tools", 1500, True),
            ("m1", 2000, False),
            ("m2", 300, False),
            ("m3", 400, True),
            ("m4", 50, False),
        )
    )
    assert (second.cache_read, second.cache_write, second.input) == (3500, 700, 50)
    assert second.effective == pytest.approx(50 + 700 * 1.25 + 3500 * 0.1)
    # a sliding window changes the first message: only the tools are read
    slid = cache.cost(req(("tools", 1500, True), ("m2", 300, False), ("m3", 400, True)))
    assert (slid.cache_read, slid.cache_write) == (1500, 700)


def test_anthropic_ignores_prefixes_below_the_minimum_and_lookback_is_bounded() -> None:
    cache = PromptCache("anthropic")
    small = cache.cost(req(("a", 500, True), ("b", 10, False)))
    assert small.cache_write == 0 and small.input == 510
    cache.cost(req(("a", 2000, True)))
    far = [("a", 2000, False)] + [(f"x{i}", 1, False) for i in range(25)] + [("end", 1, True)]
    cost = cache.cost(req(*far))
    assert cost.cache_read == 0  # the hit lies more than 20 blocks before the breakpoint


def test_openai_prefix_caching_in_128_token_steps() -> None:
    cache = PromptCache.for_model("gpt-4.1", "openai")
    assert cache.read_price == pytest.approx(0.25)
    cache.cost(req(("sys", 1100, False), ("u1", 300, False)))
    again = cache.cost(req(("sys", 1100, False), ("u1", 300, False), ("u2", 50, False)))
    assert again.cache_read == 1024 + 256  # 1400 matched, rounded down to 128 steps
    assert again.cache_write == 0
    assert again.effective == pytest.approx((1450 - 1280) + 1280 * 0.25)
