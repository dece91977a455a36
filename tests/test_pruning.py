"""Pure context arithmetic: image pruning, the cost estimate and the retry schedule."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jarvis.llm.pricing import cost_usd, price_of
from jarvis.llm.pruning import IMAGE_PLACEHOLDER, count_images, prune_images
from jarvis.llm.retry import RetryPolicy, is_retryable_status, parse_retry_after, rejects_tools
from jarvis.llm.types import ImagePart, Message, ToolResultPart
from jarvis.usage import Usage


def img(tag: str) -> ImagePart:
    return ImagePart(media_type="image/jpeg", data_b64=tag)


def layout(messages: list[Message]) -> list[list[str]]:
    """Each message as a list of part labels: image tags, or the text."""
    return [
        [p.data_b64 if isinstance(p, ImagePart) else getattr(p, "text", p.type) for p in m.content]
        for m in messages
    ]


CONVERSATION = [
    Message.user("task", img("s1")),
    Message.assistant("a1"),
    Message(
        role="user",
        content=[ToolResultPart(call_id="c", name="click", ok=True, content="ok"), img("s2")],
    ),
    Message.assistant("a2"),
    Message.user(img("s3"), img("s4"), "now"),
]
P = IMAGE_PLACEHOLDER


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        (
            4,
            [["task", "s1"], ["a1"], ["tool_result", "s2"], ["a2"], ["s3", "s4", "now"]],
        ),
        (
            9,
            [["task", "s1"], ["a1"], ["tool_result", "s2"], ["a2"], ["s3", "s4", "now"]],
        ),
        (
            3,
            [["task", P], ["a1"], ["tool_result", "s2"], ["a2"], ["s3", "s4", "now"]],
        ),
        (
            1,
            [["task", P], ["a1"], ["tool_result", P], ["a2"], [P, "s4", "now"]],
        ),
        (
            0,
            [["task", P], ["a1"], ["tool_result", P], ["a2"], [P, P, "now"]],
        ),
    ],
)
def test_prune_images_keeps_the_most_recent(keep: int, expected: list[list[str]]) -> None:
    before = [m.model_copy(deep=True) for m in CONVERSATION]
    pruned = prune_images(CONVERSATION, keep)
    assert layout(pruned) == expected
    assert count_images(pruned) == min(keep, 4)
    assert [m.role for m in pruned] == [m.role for m in CONVERSATION]  # shape is stable
    assert before == CONVERSATION  # the input is not modified


def test_prune_images_reuses_untouched_messages_and_rejects_negative() -> None:
    pruned = prune_images(CONVERSATION, 2)
    assert pruned[1] is CONVERSATION[1] and pruned[4] is CONVERSATION[4]
    assert prune_images([], 3) == []
    assert layout(prune_images([Message.user("x", img("a"))], 0, placeholder="[gone]")) == [
        ["x", "[gone]"]
    ]
    with pytest.raises(ValueError):
        prune_images(CONVERSATION, -1)


def test_prune_is_stable_across_steps() -> None:
    """A new step changes only which older screenshots became the placeholder."""
    step = [*CONVERSATION, Message.assistant("a3"), Message.user(img("s5"), "next")]
    old, new = layout(prune_images(CONVERSATION, 3)), layout(prune_images(step, 3))
    assert len(new) == len(old) + 2
    changed = [
        (a, b) for o, n in zip(old, new, strict=False) for a, b in zip(o, n, strict=True) if a != b
    ]
    assert changed == [("s2", P)]
    assert new[-1] == ["s5", "next"]


# --- cost ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "usage", "usd"),
    [
        ("claude-sonnet-4-5", Usage(input_tokens=1_000_000), 3.0),
        ("claude-sonnet-4-5-20250929", Usage(output_tokens=1_000_000), 15.0),
        ("claude-sonnet-4-6", Usage(cache_read_tokens=1_000_000), 0.3),
        ("claude-sonnet-4-5", Usage(cache_write_tokens=1_000_000), 3.75),
        ("claude-opus-4-1-20250805", Usage(input_tokens=1_000_000), 15.0),
        ("claude-opus-4-5", Usage(input_tokens=1_000_000, output_tokens=1_000_000), 30.0),
        ("claude-opus-4-20250514", Usage(input_tokens=1_000_000), 15.0),
        ("claude-opus-4-6", Usage(input_tokens=1_000_000), 5.0),
        ("claude-haiku-4-5", Usage(input_tokens=2_000_000), 2.0),
        ("gpt-4.1", Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000), 2.5),
        ("gpt-4.1-mini", Usage(output_tokens=1_000_000), 1.6),
        ("openai/gpt-4o", Usage(input_tokens=1_000_000), 2.5),
        ("gpt-4o-mini-2024-07-18", Usage(input_tokens=1_000_000), 0.15),
        ("llama3.2-vision", Usage(input_tokens=1_000_000), 0.0),
        ("claude-sonnet-4-5", Usage(), 0.0),
    ],
)
def test_cost_table(model: str, usage: Usage, usd: float) -> None:
    assert cost_usd(model, usage) == pytest.approx(usd)


def test_longest_prefix_wins() -> None:
    mini, full = price_of("gpt-4.1-mini-2025-04-14"), price_of("gpt-4.1-2025-04-14")
    assert mini is not None and full is not None and mini.input < full.input
    assert price_of("unknown-model") is None


# --- retry schedule -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempt", "rand", "expected"),
    [(0, 0.0, 0.5), (0, 1.0, 1.0), (1, 0.0, 1.0), (2, 0.5, 3.0), (10, 1.0, 30.0), (10, 0.0, 15.0)],
)
def test_backoff_doubles_with_jitter_and_cap(attempt: int, rand: float, expected: float) -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=30.0)
    assert policy.delay(attempt, rand=lambda: rand) == pytest.approx(expected)


def test_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_retry_after_s=10.0)
    assert policy.delay(0, retry_after=4.0) == 4.0
    assert policy.delay(3, retry_after=120.0) == 10.0


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], seconds: float | None) -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert parse_retry_after(headers, now=now) == seconds


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (429, True),
        (529, True),
        (500, True),
        (503, True),
        (408, True),
        (400, False),
        (401, False),
        (404, False),
    ],
)
def test_retryable_status(status: int, retryable: bool) -> None:
    assert is_retryable_status(status) is retryable


@pytest.mark.parametrize(
    ("status", "message", "rejects"),
    [
        (400, "this model does not support tools", True),
        (400, "registry.ollama.ai/library/llava does not support tools", True),
        (400, "tool use is not supported for this model", True),
        (422, "Extra inputs are not permitted: tools", True),
        (400, "messages: roles must alternate", False),
        (500, "tools are not supported", False),
        (400, "tool_use ids were found without tool_result blocks immediately after", False),
    ],
)
def test_rejects_tools(status: int, message: str, rejects: bool) -> None:
    assert rejects_tools(status, message) is rejects
