"""The README and docs/ hold true against the code: every relative link and anchor
resolves (GitHub's anchor rules), every `jarvis ...` command shown in a code block parses
with the real parser of jarvis.cli (nothing is run), the settings page is what
``python -m jarvis.settings_doc`` writes from the schema, and the README stays a front
door (at most 300 lines). No network: links to other sites are not followed."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
from functools import cache
from pathlib import Path

import pytest

from jarvis import settings_doc
from jarvis.cli import build_parser
from jarvis.config import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^(```+|~~~+)(.*)$")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def split_fences(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The lines outside code fences (fenced ones blanked, so numbers hold) and the
    fenced blocks with their info string."""
    prose: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line in text.split("\n"):
        match = FENCE.match(line.strip())
        if fence is None and match:
            fence, info = match.group(1), match.group(2).strip()
            blocks.append((info, []))
            prose.append("")
        elif (
            fence is not None
            and line.strip().startswith(fence)
            and not line.strip()[len(fence) :].strip("`~")
        ):
            fence = None
            prose.append("")
        elif fence is not None:
            blocks[-1][1].append(line)
            prose.append("")
        else:
            prose.append(line)
    return prose, blocks


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: its text without markup, lowercase, punctuation
    dropped (letters, digits, spaces, '-' and '_' stay), spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for line in prose:
        match = HEADING.match(line)
        if not match:
            continue
        base = github_anchor(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(path: Path) -> list[tuple[int, str]]:
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    found = []
    for number, line in enumerate(prose, 1):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            found.append((number, match.group(1)))
    return found


def broken(path: Path, target: str) -> str | None:
    """Why ``target``, linked from ``path``, does not resolve; None when it does."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
        return None
    file_part, _, fragment = target.partition("#")
    linked = (path.parent / file_part).resolve() if file_part else path
    if not linked.exists():
        return f"no file {file_part}"
    if not linked.is_relative_to(ROOT):
        return f"{file_part} is outside the repository"
    if fragment and linked.suffix == ".md" and fragment not in anchors(linked):
        return f"no heading with the anchor #{fragment} in {linked.relative_to(ROOT)}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_anchor_resolves(page: Path) -> None:
    problems = [
        f"{page.relative_to(ROOT)}:{number}: ({target}) {why}"
        for number, target in links(page)
        if (why := broken(page, target)) is not None
    ]
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- commands in code blocks

SHELL_BLOCKS = {"", "sh", "bash", "shell", "console", "ini"}
OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1", "2>"}
WRAPPERS = {"xvfb-run", "sudo", "exec", "env", "nohup"}


def logical_lines(lines: list[str]) -> list[str]:
    """Lines joined where a backslash continues them or a quote is still open."""
    out: list[str] = []
    pending = ""
    for line in lines:
        text = f"{pending}\n{line}" if pending else line
        if text.endswith("\\"):
            pending = text[:-1]
            continue
        try:
            shlex.split(text, comments=True)
        except ValueError:  # an open quote: the command goes on on the next line
            pending = text
            continue
        pending = ""
        out.append(text)
    return out


def jarvis_argv(line: str) -> list[str] | None:
    """The arguments after ``jarvis`` when the line runs it, else None."""
    text = line.strip().removeprefix("$ ")
    if text.startswith("ExecStart="):  # a systemd unit: systemd expands %H and %i first
        text = text.removeprefix("ExecStart=").replace("%H", "host").replace("%i", "1")
    words = shlex.split(text, comments=True)
    start = 0
    while start < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[start]):
        start += 1  # VAR=value before the command
    for i in range(start, len(words)):
        word = words[i]
        first = i == start
        after_wrapper = words[start] in WRAPPERS or (i > 0 and words[i - 1] == "--")
        if (word == "jarvis" or word.endswith("/bin/jarvis")) and (first or after_wrapper):
            argv = []
            for arg in words[i + 1 :]:
                if arg in OPERATORS:
                    break
                argv.append(arg)
            return argv
    return None


def shown_commands() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        _, blocks = split_fences(page.read_text(encoding="utf-8"))
        for info, lines in blocks:
            if info.split(" ")[0] not in SHELL_BLOCKS:
                continue
            for line in logical_lines(lines):
                argv = jarvis_argv(line)
                if argv is not None:
                    found.append((f"{page.relative_to(ROOT)}: {line.strip()[:70]}", argv))
    return found


COMMANDS = shown_commands()


def test_the_docs_show_commands() -> None:
    """The walk finds what the pages show (a broken walk would check nothing)."""
    shown = {argv[0] for _, argv in COMMANDS if argv}
    assert {"run", "serve", "inbox", "tui", "mcp", "worker", "report", "eval"} <= shown
    assert ["run", "Open the calculator and compute 12*7"] in [argv for _, argv in COMMANDS]
    assert len(COMMANDS) >= 40


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_every_command_shown_parses(
    parser: argparse.ArgumentParser, where: str, argv: list[str]
) -> None:
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            args = parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{where}\n  jarvis {shlex.join(argv)}\n  {errors.getvalue().strip()}")
    assert getattr(args, "handler", None) is not None, f"{where}: names no command"


def test_a_wrong_command_is_caught(parser: argparse.ArgumentParser) -> None:
    """The check itself: a flag no command has, or no command, fails it."""
    for argv in (["run", "x", "--no-such-flag"], ["memory", "frobnicate"]):
        with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
            parser.parse_args(argv)
    assert jarvis_argv("docker logs jarvis | grep login") is None
    assert jarvis_argv("JARVIS_MAX_STEPS=10 jarvis run '...' | tee x") == ["run", "..."]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {
        name: child
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, child in action.choices.items()
    }


def unknown_command(parser: argparse.ArgumentParser, words: list[str]) -> str | None:
    """The first word of ``jarvis WORDS`` that names no command where one is expected."""
    for word in words:
        children = subcommands(parser)
        if not children or not re.fullmatch(r"[a-z][a-z-]*", word):
            return None  # a command's own arguments, a flag or a placeholder
        if word not in children:
            return word
        parser = children[word]
    return None


def test_every_command_named_in_the_text_exists(parser: argparse.ArgumentParser) -> None:
    """`jarvis runs show` in a sentence names commands that exist (its arguments are often
    left out there, so only the command words are checked)."""
    problems = []
    for page in PAGES:
        prose, _ = split_fences(page.read_text(encoding="utf-8"))
        for match in re.finditer(r"`jarvis ([^`]+)`", "\n".join(prose)):
            words = match.group(1).split()
            while words and words[0].startswith("-"):  # jarvis --data-dir D inbox add
                words = words[2:] if words[0] == "--data-dir" else words[1:]
            if (word := unknown_command(parser, words)) is not None:
                problems.append(f"{page.relative_to(ROOT)}: `jarvis {match.group(1)}`: {word}")
    assert not problems, "\n".join(problems)
    assert unknown_command(parser, ["runs", "shwo"]) == "shwo"
    assert unknown_command(parser, ["frobnicate"]) == "frobnicate"


# ---------------------------------------------------------------- JSON shown


def json_blocks() -> list[tuple[str, str]]:
    return [
        (str(page.relative_to(ROOT)), "\n".join(lines))
        for page in PAGES
        for info, lines in split_fences(page.read_text(encoding="utf-8"))[1]
        if info.split(" ")[0] == "json"
    ]


def test_every_json_block_is_json_and_every_settings_example_loads(tmp_path: Path) -> None:
    """A block with a settings key is a settings.json a reader may paste: it loads the
    way settings.json is checked at start. An MCP config that starts jarvis names a
    command that parses."""
    examples = 0
    for where, text in json_blocks():
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            pytest.fail(f"{where}: a json block that is not JSON: {exc}\n{text}")
        if isinstance(data, dict) and set(data) & set(Settings.model_fields):
            try:
                Settings.model_validate(data | {"data_dir": tmp_path}, strict=False)
            except ValueError as exc:
                pytest.fail(f"{where}: a settings example that does not load: {exc}\n{text}")
            examples += 1
        for server in (data.get("mcpServers") or {}).values() if isinstance(data, dict) else ():
            if Path(server.get("command", "")).name == "jarvis":
                with contextlib.redirect_stderr(io.StringIO()):
                    build_parser().parse_args(server["args"])
    assert examples >= 6


# ---------------------------------------------------------------- the settings page


def test_settings_page_matches_the_schema() -> None:
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    assert page == settings_doc.render(), (
        "docs/settings.md is out of date: run python -m jarvis.settings_doc > docs/settings.md"
    )


def test_settings_page_lists_every_field() -> None:
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    for section in settings_doc.sections(Settings):
        for name in section.model.model_fields:
            key = f"{section.path}.{name}" if section.path else name
            assert f"| `{key}` |" in page, key


def test_every_added_description_names_a_setting() -> None:
    keys = {
        f"{s.path}.{name}" if s.path else name
        for s in settings_doc.sections(Settings)
        for name in s.model.model_fields
    }
    assert set(settings_doc.MORE) <= keys, set(settings_doc.MORE) - keys


def test_settings_check_command(tmp_path: Path) -> None:
    good = tmp_path / "settings.md"
    good.write_text(settings_doc.render(), encoding="utf-8")
    assert settings_doc.main(["--check", str(good)]) == 0
    good.write_text(settings_doc.render().replace("| `max_steps` |", "| `steps` |"))
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert settings_doc.main(["--check", str(good)]) == 1
    assert "does not match" in err.getvalue()


# ---------------------------------------------------------------- the front door


def test_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    quick = text.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert quick.splitlines()[1:] == ["make test"]
    assert quick.splitlines()[0].endswith(
        'make run TASK="In the terminal, write the date into ~/today.txt"'
    )
    for page in DOCS.glob("*.md"):
        assert f"docs/{page.name}" in text, f"the README's docs table misses {page.name}"
        first = page.read_text(encoding="utf-8").split("\n", 1)[0]
        assert first.startswith("# "), f"{page.name} does not start with its title"


def test_anchor_rule() -> None:
    assert github_anchor("Fleet: many desktops, one queue") == "fleet-many-desktops-one-queue"
    assert github_anchor("`safety.approve`") == "safetyapprove"
    assert github_anchor("1. In a container: it cannot touch your desktop") == (
        "1-in-a-container-it-cannot-touch-your-desktop"
    )
    assert github_anchor("Wayland (sway and other wlroots desktops): in progress") == (
        "wayland-sway-and-other-wlroots-desktops-in-progress"
    )
