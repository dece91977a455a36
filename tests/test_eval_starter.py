"""jarvis eval on real applications: the starter suite with its oracle gets 100 %, and a
suite with deliberately wrong oracles gets the expected lower rate, each failure explained."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jarvis.eval.suite import SHIPPED
from tests.fake_model import FakeModel, Reply, call

pytestmark = pytest.mark.slow


def run_eval(
    suite: str | Path, data_dir: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")} | (env or {})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jarvis",
            "eval",
            str(suite),
            "--data-dir",
            str(data_dir),
            *(extra or ("--provider", "oracle")),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, (done.stdout, done.stderr)  # one JSON summary, nothing else
    return done.returncode, json.loads(lines[0])


def test_starter_suite_with_the_oracle_passes_every_task(tmp_path: Path) -> None:
    code, summary = run_eval("starter", tmp_path / "data")
    failures = [(r["task"], r["reason"]) for r in summary["runs"] if not r["success"]]
    assert failures == []
    assert code == 0
    total = summary["total"]
    assert total["runs"] == total["successes"] >= 10 and total["success_rate"] == 1.0
    assert total["steps"] == sum(t["steps"] for t in summary["tasks"]) >= 20
    assert all(t["wall_s"] > 0 for t in summary["tasks"])
    page = Path(summary["html"]).read_text()
    for run in summary["runs"]:
        report = Path(run["report"])
        assert report.is_file() and os.path.relpath(report, Path(summary["html"]).parent) in page
        info = json.loads((report.parent / "run.json").read_text())
        assert info["channel"] == "eval" and info["model"] == "oracle"
        assert info["status"] == "completed"
        assert (report.parent / "steps" / "0001" / "before.jpg").is_file()


def wrong_suite(folder: Path) -> Path:
    """Three starter tasks; two with an oracle that does the wrong thing."""
    folder.mkdir()
    shutil.copy(SHIPPED / "starter" / "form_app.py", folder)
    for name in ("01-xterm-echo", "05-mousepad-note", "10-tk-form"):
        data = yaml.safe_load((SHIPPED / "starter" / f"{name}.yaml").read_text())
        if name == "05-mousepad-note":  # a typo
            data["oracle"][0][1] = {"type": {"text": "Dear dairy"}}
        if name == "10-tk-form":  # forgets to tick Subscribe
            del data["oracle"][0][2]
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(data))
    return folder


def test_a_wrong_oracle_gets_the_lower_rate_and_each_failure_is_explained(
    tmp_path: Path,
) -> None:
    code, summary = run_eval(wrong_suite(tmp_path / "wrong"), tmp_path / "data")
    assert code == 1
    assert summary["total"]["success_rate"] == round(1 / 3, 4)
    why = {t["id"]: [f["reason"] for f in t["failures"]] for t in summary["tasks"]}
    assert why == {
        "01-xterm-echo": [],
        "05-mousepad-note": ["note.txt holds 'Dear dairy', expected 'Dear diary'"],
        "10-tk-form": [
            "form.txt holds 'name=Ada Lovelace;subscribe=0\\n', "
            "expected 'name=Ada Lovelace;subscribe=1'"
        ],
    }
    page = Path(summary["html"]).read_text()
    assert page.count('class="fail run"') == 2 and "Dear dairy" in page


def test_eval_with_a_real_provider_counts_its_tokens_and_cost(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    suite = tmp_path / "one"
    suite.mkdir()
    task = yaml.safe_load((SHIPPED / "starter" / "01-xterm-echo.yaml").read_text())
    (suite / "echo.yaml").write_text(yaml.safe_dump(task))
    replies = []
    for step in task["oracle"]:
        calls = [call(name, **args) for entry in step for name, args in entry.items()]
        replies.append(
            Reply(text="Thought: step.", tool_calls=calls, input_tokens=1000, output_tokens=50)
        )
    fake_model.script(
        *replies,
        Reply(text='{"done": true, "reason": "written"}', input_tokens=500, output_tokens=10),
    )
    env = {
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "ANTHROPIC_API_KEY": "sk-eval-test-key-123456",
    }
    code, summary = run_eval(
        suite,
        tmp_path / "data",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-6",
        env=env,
    )
    assert code == 0, summary["runs"][0]["reason"]
    assert summary["provider"] == "anthropic" and summary["model"] == "claude-sonnet-4-6"
    total = summary["total"]
    assert total["tokens"] == {"input": 2500, "output": 110, "cache_read": 0}
    assert total["cost_usd"] > 0
    assert len(fake_model.requests) == 3
    report = Path(summary["runs"][0]["report"]).read_text()
    assert "sk-eval-test-key-123456" not in report
