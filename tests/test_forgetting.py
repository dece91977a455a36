"""The forgetting curve (pure arithmetic) and the compressor that applies it to a real store."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jarvis.config import load_settings
from jarvis.memory.compressor import (
    compress,
    group_duplicates,
    merge_memories,
    similar_pairs,
)
from jarvis.memory.forgetting import (
    age_in_days,
    forget_after_days,
    keep_score,
    retention,
    should_forget,
    strength_days,
)
from jarvis.memory.long_term import LongTermMemory, Memory

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("importance", "accesses", "expected"),
    [
        (0, 0, 7.0),
        (2, 0, 14.0),
        (10, 0, 42.0),
        (0, 1, 7.0 * (1 + math.log(2))),
        (4, 10, 21.0 * (1 + math.log(11))),
        (10, 100, 42.0 * (1 + math.log(101))),
        (15, -3, 42.0),  # out-of-range inputs are clamped
    ],
)
def test_strength(importance: float, accesses: int, expected: float) -> None:
    assert strength_days(importance, accesses) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("age", "importance", "accesses", "expected"),
    [
        (0, 5, 0, 1.0),
        (-2, 5, 0, 1.0),  # clock skew counts as fresh
        (7, 0, 0, math.exp(-1)),
        (14, 2, 0, math.exp(-1)),
        (42, 10, 0, math.exp(-1)),
        (84, 10, 0, math.exp(-2)),
        (30, 3, 0, math.exp(-30 / 17.5)),
        (30, 3, 5, math.exp(-30 / (17.5 * (1 + math.log(6))))),
        (365, 10, 5, math.exp(-365 / (42 * (1 + math.log(6))))),
    ],
)
def test_retention(age: float, importance: float, accesses: int, expected: float) -> None:
    assert retention(age, importance, accesses) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("age", "importance", "accesses", "forget"),
    [
        (0, 0, 0, True),  # importance 0 is never worth keeping
        (0, 0.4, 50, True),
        (0, 1, 0, False),
        (7, 1, 0, False),  # S = 10.5 days; 1 * e^(-7/10.5) = 0.51
        (8, 1, 0, True),  # 0.47
        (30, 3, 0, False),  # S = 17.5; 3 * e^(-30/17.5) = 0.54
        (32, 3, 0, True),  # 0.48
        (32, 3, 1, False),  # one recall: S = 29.6; 1.02
        (300, 10, 5, False),  # S = 117; 0.77
        (400, 10, 5, True),  # 0.33
    ],
)
def test_should_forget(age: float, importance: float, accesses: int, forget: bool) -> None:
    assert should_forget(age, importance, accesses) is forget


@pytest.mark.parametrize(
    ("importance", "accesses", "days"),
    [
        (0.5, 0, 0.0),
        (0, 3, 0.0),
        (3, 0, 17.5 * math.log(6)),
        (10, 5, 42 * (1 + math.log(6)) * math.log(20)),
    ],
)
def test_forget_after_days(importance: float, accesses: int, days: float) -> None:
    assert forget_after_days(importance, accesses) == pytest.approx(days)
    if days > 0:
        assert not should_forget(days * 0.99, importance, accesses)
        assert should_forget(days * 1.01, importance, accesses)


@given(
    age=st.floats(0, 2000),
    later=st.floats(0.001, 500),
    importance=st.floats(0.01, 10),
    accesses=st.integers(0, 1000),
)
def test_curve_is_monotone(age: float, later: float, importance: float, accesses: int) -> None:
    now = retention(age, importance, accesses)
    assert 0 < now <= 1
    assert retention(age + later, importance, accesses) <= now
    assert retention(age, min(importance + 1, 10), accesses) >= now
    assert retention(age, importance, accesses + 1) >= now
    assert keep_score(age, importance, accesses) == pytest.approx(now * importance)


def test_age_in_days() -> None:
    assert age_in_days(NOW - timedelta(days=2, hours=12), NOW) == pytest.approx(2.5)
    with pytest.raises(ValueError):
        strength_days(5, 0, base_days=0)


# -- near-duplicate grouping (pure) ----------------------------------------------------------


def unit(*rows: list[float]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_similar_pairs_finds_every_close_pair_across_blocks() -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(size=(700, 16)).astype(np.float32)
    vectors = np.concatenate([base, base[[3, 650]] + 0.01])  # rows 700, 701 copy 3 and 650
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = similar_pairs(vectors, 0.95)
    assert {(i, j) for i, j, _ in pairs} == {(3, 700), (650, 701)}
    assert all(c >= 0.95 for *_, c in pairs)


def test_grouping_keeps_the_most_important_and_does_not_chain() -> None:
    ms = [
        Memory(type="skill", content="a", importance=2),
        Memory(type="skill", content="b", importance=8),
        Memory(type="skill", content="c", importance=5),
        Memory(type="skill", content="d", importance=1),
    ]
    # b~a, b~c, c~d: b leads and takes a and c; d is only like c, which is taken
    groups = group_duplicates(ms, [(0, 1, 0.95), (1, 2, 0.94), (2, 3, 0.99)])
    assert groups == [[1, 2, 0]]


def test_merge_sums_counts_once_even_after_an_interrupted_merge() -> None:
    leader = Memory(
        type="preference", content="dark", importance=6, access_count=3, task_ids=["T1"]
    )
    other = Memory(
        type="preference",
        content="dark!",
        importance=9,
        access_count=4,
        task_ids=["T2", "T1"],
        created=NOW - timedelta(days=9),
    )
    merged = merge_memories(leader, [other], NOW)
    assert (merged.id, merged.content) == (leader.id, "dark")
    assert merged.importance == 9
    assert merged.access_count == 7
    assert merged.task_ids == ["T1", "T2"]
    assert merged.created == other.created
    assert merged.merged_from == [other.id]
    # the process died after writing `merged` but before deleting `other`: merge again
    assert merge_memories(merged, [other], NOW).access_count == 7


# -- compress on a real store ----------------------------------------------------------------


@pytest.fixture
def ltm(tmp_path: Path) -> Iterator[LongTermMemory]:
    memory = LongTermMemory.from_settings(load_settings(tmp_path))
    yield memory
    memory.close()


def aged(days: float, **fields: object) -> Memory:
    when = NOW - timedelta(days=days)
    return Memory(created=when, updated=when, **fields)  # type: ignore[arg-type]


def test_compress_forgets_faded_and_merges_near_duplicates(ltm: LongTermMemory) -> None:
    faded = aged(60, type="history", content="Looked up a bus timetable once.", importance=1)
    kept_old = aged(60, type="history", content="Set up the office printer.", importance=9)
    pref_a = aged(
        1,
        type="preference",
        content="The user prefers dark mode in every editor.",
        importance=7,
        access_count=2,
        task_ids=["T1"],
    )
    pref_b = aged(
        2,
        type="preference",
        content="The user prefers dark mode in every editor!",
        importance=4,
        access_count=5,
        task_ids=["T2"],
    )
    same_text_other_type = aged(1, type="skill", content=pref_a.content, importance=5)
    unrelated = aged(1, type="preference", content="Reply to emails in German.", importance=5)
    ltm.store_many([faded, kept_old, pref_a, pref_b, same_text_other_type, unrelated])

    dry = compress(ltm, now=NOW, dry_run=True)
    assert dry.forgotten == [faded.id]
    assert dry.merged == [(pref_a.id, pref_b.id)]
    assert ltm.count() == 6  # a dry run changes nothing

    report = compress(ltm, now=NOW)
    assert report.examined == 6
    assert report.forgotten == [faded.id]
    assert report.merged == [(pref_a.id, pref_b.id)]
    assert {m.id for m in ltm.list()} == {
        kept_old.id,
        pref_a.id,
        same_text_other_type.id,
        unrelated.id,
    }
    merged = ltm.get(pref_a.id)
    assert merged is not None
    assert (merged.importance, merged.access_count) == (7, 7)
    assert merged.task_ids == ["T1", "T2"]
    assert merged.merged_from == [pref_b.id]
    assert ltm.check() == []

    again = compress(ltm, now=NOW)
    assert (again.forgotten, again.merged) == ([], [])


def test_compress_thresholds_are_parameters(ltm: LongTermMemory) -> None:
    a = aged(0, type="skill", content="Open the terminal with ctrl+alt+t.", importance=5)
    b = aged(
        0, type="skill", content="The terminal app can be started from the dock.", importance=5
    )
    ltm.store_many([a, b])
    assert compress(ltm, now=NOW, dry_run=True).merged == []
    loose = compress(ltm, now=NOW, merge_cosine=0.4, dry_run=True)
    assert len(loose.merged) == 1
    strict = compress(ltm, now=NOW + timedelta(days=1), threshold=5.0, dry_run=True)
    assert sorted(strict.forgotten) == sorted([a.id, b.id])
