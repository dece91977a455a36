"""`--sandbox` takes an optional kind (x11, wayland) on `run`, `eval`, `serve` and `worker`;
with none it is x11, wherever the task or suite stands (the flag before the task must not
eat it)."""

from __future__ import annotations

import pytest

from jarvis.cli import bare_sandbox, build_parser


@pytest.mark.parametrize(
    ("argv", "kind", "task"),
    [
        (["run", "--sandbox", "open the notes"], "x11", "open the notes"),
        (["run", "open the notes", "--sandbox"], "x11", "open the notes"),
        (["run", "--sandbox", "wayland", "open the notes"], "wayland", "open the notes"),
        (["run", "open the notes", "--sandbox", "x11"], "x11", "open the notes"),
        (["--data-dir", "d", "run", "--sandbox", "go"], "x11", "go"),
    ],
)
def test_run_sandbox_kind(argv: list[str], kind: str, task: str) -> None:
    args = build_parser().parse_args(bare_sandbox(argv))
    assert (args.sandbox, args.task) == (kind, task)


def test_eval_and_serve() -> None:
    assert build_parser().parse_args(bare_sandbox(["eval", "--sandbox", "s.yaml"])).sandbox == "x11"
    assert build_parser().parse_args(bare_sandbox(["serve", "--sandbox"])).sandbox == "x11"
    assert bare_sandbox(["run", "--", "--sandbox"]) == ["run", "--", "--sandbox"]


def test_serve_and_worker_take_a_kind() -> None:
    parse = build_parser().parse_args
    assert parse(bare_sandbox(["serve", "--sandbox", "wayland"])).sandbox == "wayland"
    assert parse(bare_sandbox(["serve", "--sandbox", "--http", "off"])).sandbox == "x11"
    assert parse(["serve"]).sandbox is None
    assert parse(bare_sandbox(["worker", "--sandbox", "--name", "w"])).sandbox == "x11"
    assert parse(bare_sandbox(["worker", "--sandbox", "wayland"])).sandbox == "wayland"
    assert parse(["worker"]).sandbox is None
    with pytest.raises(SystemExit):
        parse(["serve", "--sandbox", "mir"])
