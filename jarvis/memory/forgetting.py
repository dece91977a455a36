"""The forgetting curve: how much of a memory is retained after some time unused.

Ebbinghaus-style exponential decay::

    retention = exp(-age_days / S)
    S = base_days * (1 + importance / 2) * (1 + ln(1 + access_count))

``age_days`` counts from the memory's last use (its ``updated`` time, which every
retrieval moves forward), so recalling a memory resets its clock. The strength
``S`` (in days) grows linearly with importance (0..10: an importance-10 memory
decays six times slower than an importance-0 one) and logarithmically with the
number of times it was recalled (one recall: x1.69, ten: x3.40, a hundred: x5.62),
so frequent use helps with diminishing returns.

A memory is worth keeping while ``retention * importance`` stays at or above a
threshold; with the defaults (base 7 days, threshold 0.5) an unused importance-3
memory goes after about a month and an importance-10 one recalled five times
after about a year. Importance 0 is never worth keeping.
"""

from __future__ import annotations

import math
from datetime import datetime

SECONDS_PER_DAY = 86_400.0
DEFAULT_BASE_DAYS = 7.0
DEFAULT_THRESHOLD = 0.5


def strength_days(
    importance: float, access_count: int, base_days: float = DEFAULT_BASE_DAYS
) -> float:
    """The decay constant S in days: larger means slower forgetting."""
    if base_days <= 0:
        raise ValueError("base_days must be positive")
    importance = min(max(importance, 0.0), 10.0)
    return base_days * (1.0 + importance / 2.0) * (1.0 + math.log1p(max(access_count, 0)))


def retention(
    age_days: float, importance: float, access_count: int, base_days: float = DEFAULT_BASE_DAYS
) -> float:
    """Fraction retained after ``age_days`` without use, in (0, 1]; a negative age counts as 0."""
    return math.exp(-max(age_days, 0.0) / strength_days(importance, access_count, base_days))


def keep_score(
    age_days: float, importance: float, access_count: int, base_days: float = DEFAULT_BASE_DAYS
) -> float:
    """``retention * importance``: what the compressor compares with its threshold."""
    return retention(age_days, importance, access_count, base_days) * importance


def should_forget(
    age_days: float,
    importance: float,
    access_count: int,
    threshold: float = DEFAULT_THRESHOLD,
    base_days: float = DEFAULT_BASE_DAYS,
) -> bool:
    return keep_score(age_days, importance, access_count, base_days) < threshold


def age_in_days(last_used: datetime, now: datetime) -> float:
    """Days from ``last_used`` to ``now`` (both timezone-aware); negative if clocks disagree."""
    return (now - last_used).total_seconds() / SECONDS_PER_DAY


def forget_after_days(
    importance: float,
    access_count: int,
    threshold: float = DEFAULT_THRESHOLD,
    base_days: float = DEFAULT_BASE_DAYS,
) -> float:
    """How many idle days until ``should_forget`` turns true (0 if it already is, inf if never)."""
    if threshold <= 0:
        return math.inf
    if importance <= threshold:
        return 0.0
    return strength_days(importance, access_count, base_days) * math.log(importance / threshold)
