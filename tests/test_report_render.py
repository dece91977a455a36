"""report.html from a hand-made run folder: hostile text stays text, markers per kind,
a run without a journal still reports."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from PIL import Image

from jarvis.desktop.windows import WindowInfo
from jarvis.runs.report import render
from jarvis.runs.step_file import CallFile, Monitor, StepFile


class Tags(HTMLParser):
    """The element names, attribute names and image URL schemes of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.attributes: set[str] = set()
        self.sources: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        for name, value in attrs:
            self.attributes.add(name)
            if name in ("src", "href") and tag == "img":
                self.sources.add((value or "").split(":", 1)[0])


HOSTILE = '<script>alert(1)</script><img src=x onerror="fetch(`//evil`)">'


def make_run(folder: Path, calls: list[CallFile], thought: str = "ok") -> Path:
    step_dir = folder / "steps" / "0001"
    step_dir.mkdir(parents=True)
    Image.new("RGB", (320, 200), "#ddeeff").save(step_dir / "before.jpg")
    StepFile(
        task_id="t-1",
        step=1,
        started=1_700_000_000.0,
        ended=1_700_000_002.0,
        thought=thought,
        monitor=Monitor(screen=(640, 400), model=(320, 200)),
        scale=(2.0, 2.0),
        calls=calls,
        timings_ms={"capture": 10, "model": 900, "act": 40, "settle": 50},
    ).save(step_dir)
    return folder


def test_hostile_text_is_escaped_and_the_page_can_run_nothing(tmp_path: Path) -> None:
    calls = [
        CallFile(
            id="a",
            name="type",
            arguments={"text": HOSTILE},
            ok=True,
            focus=WindowInfo(id=1, title=HOSTILE, wm_class="X"),
        ),
        CallFile(
            id="b",
            name="click",
            arguments={"x": 1, "y": 2},
            model_points=[(1, 2)],
            screen_points=[(2, 4)],
            ok=False,
            error={"code": -32602, "message": HOSTILE},
        ),
    ]
    folder = make_run(tmp_path / "run", calls, thought=HOSTILE)
    (folder / "run.json").write_text(
        json.dumps({"task_id": "t-1", "task": HOSTILE, "status": "failed"})
    )
    page = render(folder)
    tags = Tags()
    tags.feed(page)
    assert "script" not in tags.names
    assert [a for a in tags.attributes if a.startswith("on")] == []
    assert tags.sources <= {"data"}  # every picture is inline
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "default-src 'none'" in page  # and the CSP would stop a script that slipped through
    assert 'class="step failed"' in page  # the failed click makes the step stand out
    assert page.count('class="marker bubble"') == 1 and page.count('class="marker click') == 1


def test_a_run_without_a_journal_still_reports(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", [])
    page = render(folder)
    assert '<span class="badge unknown" id="status">unknown</span>' in page
    assert "no tool call" in page and "2.0 s" in page


def test_report_for_writes_once_and_again_after_new_records(tmp_path: Path) -> None:
    import os

    from jarvis.runs.report import report_for

    data = tmp_path / "data"
    folder = make_run(data / "runs" / "2026-01-01" / "t-1", [])
    (folder / "run.json").write_text(json.dumps({"task_id": "t-1", "task": "first"}))
    path = report_for(data, "t-1")
    assert "first" in path.read_text()
    os.utime(path, (1, 1))  # older than the records: written again
    (folder / "run.json").write_text(json.dumps({"task_id": "t-1", "task": "second"}))
    assert "second" in report_for(data, "t-1").read_text()
    stamp = path.stat().st_mtime
    assert report_for(data, "t-1").stat().st_mtime == stamp  # up to date: left alone
