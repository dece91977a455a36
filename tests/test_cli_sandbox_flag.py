"""`--sandbox` takes an optional kind (x11, wayland) on `run` and `eval`; with none it is
x11, wherever the task or suite stands (the flag before the task must not eat it)."""

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
