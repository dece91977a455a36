"""The budget stop: pure checks, the run flags, and a scripted task on Xvfb that would spend
past ``max_cost_usd``: told to wrap up near the budget, ended as failed at it."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.cli import build_parser, settings_from
from jarvis.events import BudgetUsed, TaskFinished
from jarvis.safety import budget
from jarvis.safety.settings import SafetySettings
from jarvis.usage import Usage
from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, Reply, call

COST = SafetySettings(max_cost_usd=1.0)
TOKENS = SafetySettings(max_tokens_total=1000, budget_wrap_up_at=0.5)


@pytest.mark.parametrize(
    ("settings", "cost", "tokens", "ends", "wraps_up"),
    [
        (COST, 0.0, 0, False, False),
        (COST, 0.79, 10**6, False, False),  # no token budget: tokens do not count
        (COST, 0.8, 0, False, True),
        (COST, 0.9999, 0, False, True),
        (COST, 1.0, 0, True, False),
        (COST, 3.0, 0, True, False),
        (TOKENS, 100.0, 499, False, False),  # no cost budget: cost does not count
        (TOKENS, 0.0, 500, False, True),
        (TOKENS, 0.0, 1000, True, False),
        (SafetySettings(), 10**6, 10**9, False, False),  # no budget at all
    ],
)
def test_budget_table(
    settings: SafetySettings, cost: float, tokens: int, ends: bool, wraps_up: bool
) -> None:
    used = budget.Spent(cost, tokens)
    assert (budget.exceeded(used, settings) is not None) is ends
    assert (budget.wrap_up_note(used, settings) is not None) is wraps_up


def test_tokens_count_every_kind() -> None:
    usage = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=4, cache_write_tokens=8)
    assert budget.spent(usage, 0.5) == budget.Spent(0.5, 15)


def test_run_flags(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    args = build_parser().parse_args(
        ["run", "x", "--data-dir", data, "--max-cost-usd", "0.25", "--max-tokens-budget", "900"]
    )
    safety = settings_from(args).safety
    assert (safety.max_cost_usd, safety.max_tokens_total) == (0.25, 900)
    plain = settings_from(build_parser().parse_args(["run", "x", "--data-dir", data])).safety
    assert (plain.max_cost_usd, plain.max_tokens_total) == (None, None)
    for bad in (["--max-cost-usd", "0"], ["--max-cost-usd", "-1"], ["--max-tokens-budget", "0"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["run", "x", *bad])


@pytest.mark.usefixtures("xserver", "tkapp")
async def test_task_ends_at_the_cost_budget(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each step costs $0.015 (5000 input tokens of claude-sonnet-4-6 at $3/M); the budget
    is $0.05. After step 3 (90%) the model is told to finish; step 4 crosses the budget and
    the task ends there, without another model call."""
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, model="claude-sonnet-4-6", safety={"max_cost_usd": 0.05}
    )
    fake_model.script(
        *[Reply(tool_calls=[call("wait", ms=ms)], input_tokens=5000, output_tokens=0) for ms in
          (10, 20, 30, 40, 50, 60)]
    )  # fmt: skip
    outcome, recorder = await run_agent(settings, "keep waiting")
    assert outcome.status == "failed"
    assert outcome.summary.startswith("reached the cost budget: $0.0600 of $0.05")
    assert len(fake_model.requests) == 4  # no call past the budget
    notes = ["budget is" in r.all_text() for r in fake_model.requests]
    assert notes == [False, False, False, True]
    assert "90% used" in fake_model.requests[3].all_text()
    used = recorder.of(BudgetUsed)
    assert [round(e.cost_usd, 3) for e in used] == [0.015, 0.03, 0.045, 0.06]
    assert used[-1].max_cost_usd == 0.05 and used[-1].tokens == 20000
    assert recorder.of(TaskFinished)[-1].summary == outcome.summary
