"""Eval suites without a display: loading (hostile files too), checkers, the oracle, the
summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.eval.checks import CheckContext, file_contains, file_equals, files_exist, run_check
from jarvis.eval.oracle import OracleProvider
from jarvis.eval.runner import RunResult
from jarvis.eval.suite import Check, SuiteError, load_suite, resolve_suite
from jarvis.eval.summary import summarize, write_html
from jarvis.llm.base import complete
from jarvis.llm.types import LLMRequest, Message, ToolSpec
from jarvis.usage import Usage

GOOD = """
task: do it
check: {command: "true"}
oracle:
  - - {click: {x: 1, y: 2}}
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_the_starter_suite_loads_with_an_oracle_for_every_task() -> None:
    tasks = load_suite(resolve_suite("starter"))
    assert len(tasks) >= 10
    assert all(t.oracle for t in tasks)
    assert all(t.oracle[-1] == [{"finished": t.oracle[-1][0]["finished"]}] for t in tasks)
    apps = " ".join(s.run for t in tasks for s in t.setup)
    for app in ("xterm", "xfce4-terminal", "mousepad", "featherpad", "chromium", "form_app.py"):
        assert app in apps


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("- a list\n", "the top level must be a mapping"),
        ("task: x\n", "check: Field required"),
        ("task: x\ncheck: {}\n", "either a command or a python function"),
        ('task: x\ncheck: {command: "true", python: "a:b"}\n', "exactly one"),
        ('task: x\ncheck: {python: "no_colon"}\n', "module:function"),
        ('task: x\ncheck: {command: "true"}\nfiles: {"../escape.txt": ""}\n', "inside the work"),
        ('task: x\ncheck: {command: "true"}\nfiles: {"/etc/passwd": ""}\n', "inside the work"),
        ('task: x\ncheck: {command: "true"}\nid: "../x"\n', "id '../x'"),
        ('task: x\ncheck: {command: "true"}\nsurprise: 1\n', "surprise: Extra inputs"),
        ('task: x\ncheck: {command: "true"}\noracle: [[{a: {}, b: {}}]]\n', "one tool name"),
        ("task: [unclosed\n", "cannot read it"),
    ],
)
def test_bad_task_files_are_refused_with_the_file_and_the_reason(
    tmp_path: Path, text: str, error: str
) -> None:
    path = write(tmp_path / "suite", "bad.yaml", text)
    with pytest.raises(SuiteError) as info:
        load_suite(tmp_path / "suite")
    assert str(path) in str(info.value) and error in str(info.value)


def test_suite_errors(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="no suite"):
        resolve_suite(str(tmp_path / "missing"))
    with pytest.raises(SuiteError, match="no task files"):
        load_suite(tmp_path)
    write(tmp_path / "s", "a.yaml", "id: same\n" + GOOD)
    write(tmp_path / "s", "b.yaml", "id: same\n" + GOOD)
    with pytest.raises(SuiteError, match="two tasks have the id 'same'"):
        load_suite(tmp_path / "s")
    write(tmp_path / "t", "a.yaml", GOOD)
    with pytest.raises(SuiteError, match="no task nope"):
        load_suite(tmp_path / "t", ["nope"])
    assert [t.id for t in load_suite(tmp_path / "t", ["a"])] == ["a"]


def test_checkers_explain_what_is_wrong(tmp_path: Path) -> None:
    ctx = CheckContext(work=tmp_path)
    (tmp_path / "note.txt").write_text("Dear dairy\n")
    assert file_equals(ctx, "note.txt", "Dear dairy") == (True, "note.txt holds 'Dear dairy'")
    ok, why = file_equals(ctx, "note.txt", "Dear diary")
    assert not ok and why == "note.txt holds 'Dear dairy\\n', expected 'Dear diary'"
    assert file_equals(ctx, "gone.txt", "x") == (False, "gone.txt does not exist")
    assert not file_contains(ctx, "note.txt", "diary")[0]
    ok, why = files_exist(ctx, present=["note.txt", "a/b"], absent=["note.txt"])
    assert not ok and why == "missing: a/b; should be gone: note.txt"
    # a check may not look outside the work folder
    ok, why = run_check(
        Check(python="jarvis.eval.checks:file_equals", args={"path": "../x", "text": ""}), ctx
    )
    assert not ok and "outside the work folder" in why
    ok, why = run_check(Check(command="echo the number was 6; exit 3"), ctx)
    assert (ok, why) == (False, "the number was 6")
    ok, why = run_check(Check(python="jarvis.eval.checks:nothing_here"), ctx)
    assert not ok and "has no function nothing_here" in why


def test_a_check_waits_for_state_that_lags(tmp_path: Path) -> None:
    import threading

    ctx = CheckContext(work=tmp_path)
    timer = threading.Timer(0.3, lambda: (tmp_path / "late.txt").write_text("here"))
    timer.start()
    check = Check(
        python="jarvis.eval.checks:file_equals", args={"path": "late.txt", "text": "here"}
    )
    try:
        assert run_check(check.model_copy(update={"wait_s": 5}), ctx)[0]
    finally:
        timer.cancel()
    assert not run_check(check.model_copy(update={"args": {"path": "never", "text": ""}}), ctx)[0]


async def test_the_oracle_plays_its_steps_then_finishes_and_never_judges() -> None:
    oracle = OracleProvider([[{"click": {"x": 3, "y": 4}}, {"type": {"text": "hi"}}]])
    tools = [ToolSpec(name="click", description="", parameters={})]
    decide = LLMRequest(system="s", messages=[Message.user("go")], tools=tools)
    first = await complete(oracle, decide)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("click", {"x": 3, "y": 4}),
        ("type", {"text": "hi"}),
    ]
    assert first.usage.input_tokens == 0
    second = await complete(oracle, decide)
    assert [c.name for c in second.tool_calls] == ["finished"]
    verify = await complete(oracle, LLMRequest(system="v", messages=[Message.user("done?")]))
    assert verify.tool_calls == [] and json.loads(verify.text)["done"] is True


def test_summary_counts_and_the_page_links_reports(tmp_path: Path) -> None:
    report = tmp_path / "runs" / "r1" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<html></html>")
    results = [
        RunResult(
            task="a",
            repeat=1,
            run_id="r1",
            success=True,
            steps=2,
            wall_s=1.5,
            tokens=Usage(input_tokens=10, output_tokens=2),
            cost_usd=0.01,
            report=str(report),
        ),
        RunResult(task="a", repeat=2, run_id="r2", success=False, reason="wrong text", steps=3),
        RunResult(task="b", repeat=1, run_id="r3", success=True, steps=1, wall_s=0.5),
    ]
    summary = summarize(results, suite="s", provider="oracle", model="oracle", repeat=2)
    assert summary["total"]["success_rate"] == round(2 / 3, 4)
    assert summary["total"]["steps"] == 6 and summary["total"]["tokens"]["input"] == 10
    first = summary["tasks"][0]
    assert first["id"] == "a" and first["success_rate"] == 0.5
    assert first["failures"] == [{"repeat": 2, "run_id": "r2", "reason": "wrong text"}]
    page = write_html(summary, results, tmp_path / "eval" / "summary.html").read_text()
    assert 'href="../runs/r1/report.html"' in page and "wrong text" in page
    assert json.loads((tmp_path / "eval" / "summary.json").read_text())["suite"] == "s"


def test_a_run_counts_tokens_as_usage_and_writes_the_summary_shape() -> None:
    """Inside, a run's tokens are the one Usage everything else uses; the JSON keeps the
    eval summary's input/output/cache_read shape (a converter at the output)."""
    result = RunResult(
        task="a", repeat=1, run_id="r1", tokens=Usage(input_tokens=7, cache_read_tokens=3)
    )
    assert isinstance(result.tokens + Usage(output_tokens=1), Usage)
    assert result.model_dump()["tokens"] == {"input": 7, "output": 0, "cache_read": 3}
