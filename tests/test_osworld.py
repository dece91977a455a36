"""OSWorld tasks without a desktop: reading the task JSON in its three shapes, turning it
into the eval runner's task, the download cache and `jarvis eval fetch` (from a loopback
server), OSWorld's own metrics loaded by name and joined as OSWorld joins them, infeasible
tasks, and the results per domain."""

from __future__ import annotations

import dataclasses
import functools
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest

from jarvis.eval.checks import CheckContext
from jarvis.eval.osworld import convert, judge, metrics, results
from jarvis.eval.osworld.cache import cache_key, cached_file
from jarvis.eval.osworld.tasks import load_tasks, looks_like_osworld
from jarvis.eval.suite import SHIPPED, EvalTask, SuiteError
from jarvis.eval.workspace import RunResult
from tests.osworld_tasks import REAL, needs_real_tasks

STARTER = SHIPPED / "osworld_starter"


def test_the_starter_set_reads_as_osworld_layout_with_its_domains() -> None:
    assert looks_like_osworld(STARTER) and looks_like_osworld(STARTER / "test_all.json")
    assert not looks_like_osworld(SHIPPED / "starter")  # Jarvis's own YAML suite
    tasks = load_tasks(STARTER)
    domains = {t.id: t.domain for t in tasks}
    assert domains == {
        "starter-calc-total": "libreoffice_calc",
        "starter-calc-infeasible": "libreoffice_calc",
        "starter-writer-thanks": "libreoffice_writer",
        "starter-impress-title": "libreoffice_impress",
        "starter-gimp-export": "gimp",
        "starter-os-archive": "os",
        "starter-thunderbird-save": "thunderbird",
    }
    assert [t.id for t in tasks if t.infeasible] == ["starter-calc-infeasible"]
    assert all(t.urls() == [] for t in tasks)  # the starter set downloads nothing
    only = load_tasks(STARTER, ["starter-os-archive"])
    assert [t.id for t in only] == ["starter-os-archive"]
    with pytest.raises(SuiteError, match="no task nope"):
        load_tasks(STARTER, ["nope"])


@needs_real_tasks
def test_a_single_file_and_a_folder_of_domain_folders_read_too() -> None:
    [one] = load_tasks(REAL / "gimp" / "77b8ab4d-994f-43ac-8930-8ca087d7c4b4.json")
    assert one.domain == "gimp" and one.instruction.startswith("Could you assist me")
    every = load_tasks(REAL)
    assert sorted({t.domain for t in every}) == [
        "gimp",
        "libreoffice_calc",
        "libreoffice_impress",
        "libreoffice_writer",
        "os",
        "thunderbird",
    ]


def test_a_file_that_is_not_a_task_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SuiteError, match=r"bad\.json: not readable as JSON"):
        load_tasks(bad)
    (tmp_path / "odd.json").write_text(json.dumps({"instruction": "x", "evaluator": {}}))
    with pytest.raises(SuiteError, match="its evaluator has no func"):
        load_tasks(tmp_path / "odd.json")


@needs_real_tasks
def test_what_this_desktop_does_not_carry_is_named() -> None:
    found = {t.domain: convert.unsupported(t) for t in load_tasks(REAL)}
    assert found == {
        "gimp": [],
        "libreoffice_calc": [],
        "libreoffice_impress": [],
        "libreoffice_writer": [],
        "os": [],
        "thunderbird": [],
    }
    [thunderbird] = load_tasks(REAL / "thunderbird")  # its close_window is a step of its own
    data = convert.to_eval(thunderbird, Path("/cache"), 15)
    assert any('"close_window"' in text for text in data["files"].values())
    chrome = dataclasses.replace(thunderbird, config=[{"type": "chrome_open_tabs"}])
    data = convert.to_eval(chrome, Path("/cache"), 15)
    assert data["setup"][1]["run"] == (
        "echo 'not run: unsupported setup step chrome_open_tabs'; exit 3"
    )


@needs_real_tasks
def test_an_osworld_task_becomes_an_eval_task() -> None:
    [calc] = load_tasks(REAL / "libreoffice_calc")
    data = convert.to_eval(calc, Path("/cache"), 50)
    task = EvalTask.model_validate(data)
    assert task.screen == "1920x1080" and task.window_manager
    assert task.budget.steps == 50
    assert task.task.startswith("Fill all the blank cells") and "call_user" in task.task
    runs = [(s.run, s.background, s.wait_window) for s in task.setup]
    assert runs == [
        ('"$PYTHON" -m jarvis.eval.osworld.profile', False, None),
        ('"$PYTHON" -m jarvis.eval.osworld.steps .osworld/setup-01.json', False, None),
        (
            '"$PYTHON" -m jarvis.eval.osworld.steps .osworld/setup-02.json',
            True,
            "Student_Level_Fill_Blank",
        ),
    ]
    download = json.loads(task.files[".osworld/setup-01.json"])
    assert download["type"] == "download"
    assert download["parameters"]["jarvis_cache"] == "/cache"
    assert task.check.python == "jarvis.eval.osworld.judge:evaluate"
    assert task.check.args["evaluator"] == calc.evaluator  # OSWorld's evaluator, unchanged
    [os_task] = load_tasks(STARTER, ["starter-os-archive"])
    right = convert.to_eval(os_task, Path("/c"), 15)["oracle"]
    wrong = convert.to_eval(os_task, Path("/c"), 15, "wrong")["oracle"]
    assert right != wrong and right[-1] == wrong[-1] == [
        {"finished": {"summary": "the text files are in archive"}}
    ]


@pytest.fixture
def loopback_files(tmp_path: Path) -> Iterator[str]:
    served = tmp_path / "served"
    served.mkdir()
    (served / "sheet.xlsx").write_bytes(b"xlsx bytes")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _download_task(folder: Path, urls: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    files = [{"url": u, "path": f"/home/user/f{i}.xlsx"} for i, u in enumerate(urls)]
    task = {
        "id": "fetch-me",
        "instruction": "nothing",
        "config": [{"type": "download", "parameters": {"files": files}}],
        "evaluator": {"func": "exact_match", "result": {"type": "rule", "rules": {}}},
    }
    path = folder / "fetch-me.json"
    path.write_text(json.dumps(task))
    return path


def test_eval_fetch_fills_the_cache_by_url_and_names_what_failed(
    tmp_path: Path, loopback_files: str
) -> None:
    good, missing = f"{loopback_files}/sheet.xlsx", f"{loopback_files}/gone.xlsx"
    task = _download_task(tmp_path / "tasks", [good, missing])
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "jarvis", "eval", "fetch", str(task), "--cache", str(cache)]
    command += ["--data-dir", str(tmp_path / "data")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    said = json.loads(done.stdout)
    assert (said["urls"], said["fetched"], said["failed"]) == (2, 1, [missing])
    assert cached_file(cache, good) == cache / cache_key(good)
    assert (cache / cache_key(good)).read_bytes() == b"xlsx bytes"
    assert cached_file(cache, missing) is None
    assert list(cache.glob("*.part")) == []
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert json.loads(again.stdout)["fetched"] == 0  # already there: not fetched again


def test_metrics_are_found_by_name_and_loaded_one_module_at_a_time() -> None:
    assert metrics.index()["compare_table"] == "table"
    assert metrics.index()["check_file_exists"] == "gimp"  # the later one, as OSWorld's
    assert not metrics.known("compare_mp3_tags")
    with pytest.raises(metrics.MetricError, match="no OSWorld metric 'nope'"):
        metrics.metric("nope")
    probe = (
        "import sys; from jarvis.eval.osworld.metrics import metric; metric('exact_match'); "
        "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules "
        "if m.startswith('jarvis.eval.osworld.vendor.metrics.')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "['general', 'utils']", done.stderr
    assert "torch" not in done.stdout


def _context(tmp_path: Path, outcome: dict | None = None) -> CheckContext:
    work = tmp_path / "work"
    (work / ".home" / "Desktop").mkdir(parents=True)
    return CheckContext(work=work, env=dict(os.environ), outcome=outcome)


def _book(path: Path, values: list[int]) -> None:
    book = openpyxl.Workbook()
    for row, value in enumerate(values, 1):
        book.active.cell(row, 1, value)
    book.save(path)


def test_the_judge_scores_files_of_the_home_with_osworlds_table_metric(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    home = ctx.work / ".home"
    _book(home / "Desktop" / "a.xlsx", [1, 2, 3])
    _book(home / "gold.xlsx", [1, 2, 3])
    evaluator = {
        "func": "compare_table",
        "result": {"type": "vm_file", "path": "/home/user/Desktop/a.xlsx", "dest": "a.xlsx"},
        "expected": {"type": "vm_file", "path": "/home/user/gold.xlsx", "dest": "g.xlsx"},
        "options": {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]},
    }
    assert judge.evaluate(ctx, evaluator) == (True, "score 1 (compare_table)")
    assert ctx.score == 1.0
    _book(home / "gold.xlsx", [1, 2, 4])
    ok, said = judge.evaluate(ctx, evaluator)
    assert (ok, said, ctx.score) == (False, "score 0 (compare_table)", 0.0)
    (home / "Desktop" / "a.xlsx").unlink()  # no result file: 0, as OSWorld
    assert judge.evaluate(ctx, evaluator)[0] is False and ctx.score == 0.0


def _echo(text: str) -> dict:
    return {"type": "vm_command_line", "command": f"printf {text}", "shell": True}


def test_fractional_scores_and_conj_as_osworld(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    fuzzy = {
        "func": "fuzzy_match",
        "result": _echo("abcd"),
        "expected": {"type": "rule", "rules": {"expected": "abce"}},
    }
    ok, said = judge.evaluate(ctx, fuzzy)
    assert (ok, ctx.score) == (False, 0.75) and said == "score 0.75 (fuzzy_match)"
    pair = {
        "func": ["exact_match", "fuzzy_match"],
        "result": [_echo("x"), _echo("abcd")],
        "expected": [
            {"type": "rule", "rules": {"expected": "x"}},
            {"type": "rule", "rules": {"expected": "abce"}},
        ],
    }
    judge.evaluate(ctx, {**pair, "conj": "and"})
    assert ctx.score == pytest.approx((1.0 + 0.75) / 2)  # and: the mean, 0 if one is 0
    judge.evaluate(ctx, {**pair, "conj": "or"})
    assert ctx.score == 1.0
    pair["expected"][0]["rules"]["expected"] = "y"
    judge.evaluate(ctx, {**pair, "conj": "and"})
    assert ctx.score == 0.0


def test_a_getter_this_desktop_lacks_makes_the_task_not_run(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    evaluator = {"func": "exact_match", "result": {"type": "vlc_playing_info"}}
    assert judge.evaluate(ctx, evaluator) == (
        False,
        "not run: unsupported getter vlc_playing_info",
    )
    assert ctx.score is None


@pytest.mark.parametrize(
    ("outcome", "said"),
    [
        ({"status": "needs_user", "summary": "I cannot find that"}, True),
        (
            {"status": "finished", "summary": "This task is infeasible: there is no such button"},
            True,
        ),
        ({"status": "finished", "summary": "FAIL"}, True),
        ({"status": "finished", "summary": "wrote the summary into C1"}, False),
        ({"status": "failed", "summary": "impossible"}, False),
        (None, False),
    ],
)
def test_an_infeasible_task_scores_by_what_the_agent_declared(
    tmp_path: Path, outcome: dict | None, said: bool
) -> None:
    ctx = _context(tmp_path, outcome)
    ok, _ = judge.evaluate(ctx, {"func": "infeasible"})
    assert ok is said and ctx.score == float(said)
    if said:  # giving up on a feasible task scores 0, as in OSWorld
        feasible = {
            "func": "exact_match",
            "result": _echo("x"),
            "expected": {"type": "rule", "rules": {"expected": "x"}},
        }
        assert judge.evaluate(ctx, feasible)[0] is False and ctx.score == 0.0


def _run(
    task: str, repeat: int, score: float | None, reason: str = "", ok: bool = False
) -> RunResult:
    r = RunResult(task=task, repeat=repeat, run_id=f"e-{task}-{repeat}", success=ok, reason=reason)
    r.score, r.steps, r.cost_usd, r.wall_s = score, 3, 0.01, 2.0
    return r


def test_the_summary_per_domain_over_scored_and_over_all_with_pass_at_k() -> None:
    missing = "could not set the task up: setup '...' exited 3: not run: missing file https://x/a"
    runs = [
        _run("calc-a", 1, 1.0, "score 1", True),
        _run("calc-a", 2, 0.0, "score 0"),
        _run("calc-b", 1, 0.5, "score 0.5"),
        _run("calc-b", 2, 0.0, "score 0"),
        _run("gimp-a", 1, None, missing),
        _run("gimp-a", 2, None, "could not set the task up: no window 'pic' appeared"),
    ]
    domains = {"calc-a": "libreoffice_calc", "calc-b": "libreoffice_calc", "gimp-a": "gimp"}
    summary = results.summarize(runs, domains, repeat=2, max_steps=15)
    calc, gimp = summary["domains"]["libreoffice_calc"], summary["domains"]["gimp"]
    assert (calc["scored"], calc["score_sum"], calc["success_rate_scored"]) == (4, 1.5, 0.375)
    assert calc["pass_at_k"] == 0.5  # calc-a passed once in 2, calc-b never scored 1
    assert (gimp["scored"], gimp["not_run"], gimp["success_rate_all"]) == (0, 2, 0.0)
    total = summary["total"]
    assert (total["runs"], total["success_rate_scored"], total["success_rate_all"]) == (
        6,
        0.375,
        0.25,
    )
    rows = summary["rows"]
    assert [(r["example_id"], r["domain"], r["score"], r["status"]) for r in rows[:3]] == [
        ("calc-a", "libreoffice_calc", 1.0, "scored"),
        ("calc-a", "libreoffice_calc", 0.0, "scored"),
        ("calc-b", "libreoffice_calc", 0.5, "scored"),
    ]
    assert rows[4]["not_run"] == "missing file https://x/a" and rows[4]["score"] is None
    assert rows[5]["not_run"] == "setup failed: no window 'pic' appeared"


def test_an_osworld_task_travels_to_a_fleet_worker_and_its_score_comes_back() -> None:
    from jarvis.eval.remote import result_from, result_text, spec

    [calc] = load_tasks(STARTER, ["starter-calc-total"])
    task = EvalTask.model_validate(convert.to_eval(calc, Path("/cache"), 15))
    sent = json.loads(spec(task, STARTER, "oracle", None))
    assert EvalTask.model_validate(sent["task"]) == task.model_copy(update={"source": ""})
    ran = _run("starter-calc-total", 1, 0.5, "score 0.5")
    back = result_from("starter-calc-total", 1, "e-1", result_text(ran))
    assert (back.score, back.reason, back.steps) == (0.5, "score 0.5", 3)


def test_the_osworld_home_has_the_images_folders_and_libreoffice_without_first_run(
    tmp_path: Path,
) -> None:
    import xml.etree.ElementTree as ET

    from jarvis.eval.osworld.profile import lay_out

    lay_out(tmp_path)
    assert {"Desktop", "Documents", "Downloads", "Pictures"} <= {p.name for p in tmp_path.iterdir()}
    xcu = tmp_path / ".config/libreoffice/4/user/registrymodifications.xcu"
    props = {
        prop.get("{http://openoffice.org/2001/registry}name"): prop.findtext("value")
        for prop in ET.parse(xcu).getroot().iter("prop")
    }
    assert props["FirstRun"] == "false" and props["ShowTipOfTheDay"] == "false"
    assert props["ooSetupLastVersion"] == "7.4"
    assert "WarnAlienFormat" not in props  # the keep-format question stays, as in the image
