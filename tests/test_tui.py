"""The cockpit with Textual's pilot, driven by a journal recorded from real runs
(tests/data/tui_journal.jsonl, made by tests/tui_record.py): history, streaming, every
key, the palette, needs-user, copying, following the live task, reconnecting."""

from __future__ import annotations

import time
from typing import Any

import pytest
from textual.command import CommandPalette
from textual.widgets import Input, Markdown
from textual.widgets._help_panel import HelpPanel

from jarvis.tui.backend import BackendError, ReplayBackend
from jarvis.tui.bindings import UnknownBinding
from jarvis.tui.cards import NeedsUser, TaskView, ToolCard
from jarvis.tui.dialogs import ConfirmQuit
from jarvis.tui.side import marked_thumbnail
from tests.tui_fixtures import SCREEN, journal, relabel, replay_app, task_lines, until

SIZE = (120, 40)


def view(app: Any, task_id: str) -> TaskView:
    found = app.conversation.view_of(task_id)
    assert found is not None, f"no view of {task_id}"
    return found


async def started(app: Any, pilot: Any) -> None:
    await app.history_loaded.wait()
    await until(lambda: app.connection == "live", pilot)
    await pilot.pause()


async def test_opens_on_recent_runs_with_cards_and_endings() -> None:
    app, _ = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        assert [v.run.task_id for v in app.query(TaskView)] == ["T001", "T002", "T003"]
        cards = list(view(app, "T001").query(ToolCard))
        assert [c.call.tool_name for c in cards] == ["click", "click", "type", "finished"]
        error, ok = cards[0], cards[1]
        assert error.has_class("error") and not error.collapsed  # errors open by default
        assert "-32602" in str(error.body.render()) and "5000" in str(error.title)
        assert ok.collapsed and str(ok.title).startswith("✓ click(x=420, y=310)")
        assert "ms" in str(ok.title)
        texts = [str(s.render()) for s in view(app, "T001").query(".verification, .ending")]
        assert texts[0].startswith("✓ verified: The notes field shows hello world.")
        assert texts[1].startswith("✓ completed after 3 step(s): Typed hello world")
        assert view(app, "T003").query(".ending.cancelled")
        status = str(app.status.render())  # the newest task's usage, not a sum of all
        assert status.endswith("idle · T003 tokens 0 in / 0 out · $0.0000"), status


async def test_history_shows_only_the_last_runs_setting() -> None:
    app, _ = replay_app(history_runs=1)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        assert [v.run.task_id for v in app.query(TaskView)] == ["T003"]


async def test_thought_streams_as_markdown_with_coalesced_writes() -> None:
    app, backend = replay_app(history=[])
    lines = task_lines("T003")
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*lines[:-2])  # task started, step 1, 29 text deltas: still running
        expected = "".join(line["text"] for line in lines if "text" in line)

        def shown() -> str:
            found = app.conversation.view_of("T003")
            return "".join(t.source for t in found.thought_views()) if found else ""

        await until(lambda: shown() == expected, pilot)
        [thought] = view(app, "T003").thought_views()
        assert thought.draws < 29  # drawn in a few coalesced writes, not one per delta
        # the source is whole; the Markdown widget paints it on a later refresh
        await until(
            lambda: "Reading&#160;the&#160;screen&#160;slowly" in app.export_screenshot(), pilot
        )
        assert view(app, "T003").has_class("live")
        assert "T003 in progress" in str(app.status.render())


async def test_cards_appear_while_the_model_streams_and_fill_in() -> None:
    app, backend = replay_app(history=[])
    lines = relabel(task_lines("T001"), "T010", 100)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*lines[:5])  # ... up to tool_call_streaming of the first click
        await until(lambda: app.conversation.view_of("T010") and app.query(ToolCard), pilot)
        card = app.query_one(ToolCard)
        assert card.has_class("running") and str(card.title).startswith("◌ click(…)")
        backend.push(lines[5])  # started: the arguments
        await until(lambda: "5000" in str(card.title), pilot)
        backend.push(lines[6])  # finished with an error: the card opens
        await until(lambda: card.has_class("error") and not card.collapsed, pilot)
        assert str(card.title).startswith("✗ click(")


async def test_escape_cancels_the_running_task_only() -> None:
    app, backend = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await pilot.press("escape")  # nothing runs: nothing is cancelled
        await pilot.pause()
        assert backend.cancelled == []
        backend.push(*relabel(task_lines("T003")[:5], "T011", 200))
        await until(lambda: app.cockpit.running is not None, pilot)
        await pilot.press("escape")
        await until(lambda: backend.cancelled == ["T011"], pilot)


async def test_enter_sends_shift_enter_breaks_line_and_history_walks() -> None:
    app, backend = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        assert app.focused is app.prompt
        await pilot.press(*"open the calculator")
        await pilot.press("shift+enter", *"then add 2+2")
        assert app.prompt.text == "open the calculator\nthen add 2+2"
        await pilot.press("enter")
        await until(lambda: backend.sent == ["open the calculator\nthen add 2+2"], pilot)
        assert app.prompt.text == ""
        await pilot.press(*"second", "enter")
        await until(lambda: len(backend.sent) == 2, pilot)
        await pilot.press(*"draft")
        await pilot.press("up")
        assert app.prompt.text == "second"
        await pilot.press("up")
        assert app.prompt.text.startswith("open the calculator")
        await pilot.press("down", "down")
        assert app.prompt.text == "draft"  # back to what was being written
        await pilot.press("ctrl+j")
        assert app.prompt.text == "draft\n"
        app.prompt.clear()
        await pilot.press("enter")  # empty: nothing is sent
        await pilot.pause()
        assert len(backend.sent) == 2


async def test_ctrl_q_quits_at_once_when_it_started_nothing() -> None:
    app, backend = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*relabel(task_lines("T003")[:5], "T012", 300))
        await until(lambda: app.cockpit.running is not None, pilot)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app._exit


async def test_ctrl_q_asks_when_its_own_gateway_runs_a_task() -> None:
    app, backend = replay_app(owns_gateway=True)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*relabel(task_lines("T003")[:5], "T013", 300))
        await until(lambda: app.cockpit.running is not None, pilot)
        await pilot.press("ctrl+q")
        await until(lambda: isinstance(app.screen, ConfirmQuit), pilot)
        assert "T013" in str(app.screen.query_one("#confirm Static").render())
        await pilot.press("n")
        await until(lambda: not isinstance(app.screen, ConfirmQuit), pilot)
        assert not app._exit
        await pilot.press("ctrl+q")
        await until(lambda: isinstance(app.screen, ConfirmQuit), pilot)
        await pilot.press("y")
        await until(lambda: app._exit, pilot)


async def test_f1_shows_help_for_the_focused_widget() -> None:
    app, _ = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await pilot.press("f1")
        await until(lambda: app.screen.query(HelpPanel), pilot)
        await pilot.pause(0.1)
        help_md = app.screen.query_one(HelpPanel).query_one(Markdown)
        assert "Shift+Enter" in help_md.source
        app.query_one(ToolCard).query_one("CollapsibleTitle").focus()
        await until(lambda: "tool call" in help_md.source, pilot)
        await pilot.press("f1")
        await until(lambda: not app.screen.query(HelpPanel), pilot)


async def palette_run(app: Any, pilot: Any, words: str) -> None:
    await pilot.press("ctrl+p")
    await until(lambda: isinstance(app.screen, CommandPalette), pilot)
    await pilot.press(*words)
    await pilot.pause(0.3)
    await pilot.press("enter")
    await until(lambda: not isinstance(app.screen, CommandPalette), pilot)


async def test_palette_toggles_the_screen_panel_and_f2_too() -> None:
    app, _ = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        assert app.side.display
        await palette_run(app, pilot, "Toggle the screen panel")
        await until(lambda: not app.side.display, pilot)
        await pilot.press("f2")
        await until(lambda: app.side.display, pilot)


async def test_palette_opens_an_older_runs_journal_in_place() -> None:
    app, _ = replay_app(history_runs=1)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await until(lambda: len(app.known_runs) == 3, pilot)
        await palette_run(app, pilot, "Open run T001")
        await until(lambda: app.conversation.view_of("T001") is not None, pilot)
        order = [v.run.task_id for v in app.query(TaskView)]
        assert order == ["T001", "T003"]  # in journal order, before the newer run
        assert len(view(app, "T001").query(ToolCard)) == 4


async def test_palette_switches_the_theme() -> None:
    app, _ = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        assert app.theme == "textual-dark"
        await pilot.press("ctrl+p")
        await until(lambda: isinstance(app.screen, CommandPalette), pilot)
        await pilot.press(*"Theme")
        await pilot.pause(0.3)
        await pilot.press("enter")  # the "Theme" command opens a palette of themes
        await pilot.pause(0.3)
        await pilot.press(*"nord")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(lambda: app.theme == "nord", pilot)


async def test_copy_card_puts_the_card_text_on_the_clipboard() -> None:
    app, _ = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        first = app.query_one(ToolCard)
        first.query_one("CollapsibleTitle").focus()
        await pilot.press("ctrl+o")
        await until(lambda: app.clipboard.startswith("click [error]"), pilot)
        assert "error -32602" in app.clipboard and '"x": 5000' in app.clipboard


async def test_call_user_card_takes_the_answer_for_its_task() -> None:
    app, backend = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = app.query_one(NeedsUser)
        assert card.run.task_id == "T002"
        assert "Which one-time code should I type?" in str(card.query_one(".question").render())
        await pilot.press("ctrl+r")
        assert isinstance(app.focused, Input) and app.focused.has_class("answer")
        await pilot.press(*"493021", "enter")
        await until(lambda: backend.answers == [("T002", "493021")], pilot)
        await until(lambda: card.has_class("done") and not card.query(Input), pilot)
        assert app.focused is app.prompt
        await pilot.press("ctrl+r")  # no question waits now
        await pilot.pause()
        assert app.focused is app.prompt


async def test_remapped_keys_work_and_the_old_ones_do_not() -> None:
    app, backend = replay_app(keys={"cancel": "ctrl+x", "toggle_screen": "f9"})
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*relabel(task_lines("T003")[:5], "T014", 400))
        await until(lambda: app.cockpit.running is not None, pilot)
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert backend.cancelled == []
        await pilot.press("ctrl+x")
        await until(lambda: backend.cancelled == ["T014"], pilot)
        await pilot.press("f9")
        await until(lambda: not app.side.display, pilot)


def test_an_unknown_binding_id_is_refused() -> None:
    with pytest.raises(UnknownBinding, match="cancle"):
        replay_app(keys={"cancle": "ctrl+x"})


async def test_live_task_follows_at_the_bottom_and_stays_put_when_reading_above() -> None:
    app, backend = replay_app()
    more = relabel(task_lines("T001"), "T020", 500)
    async with app.run_test(size=(100, 24)) as pilot:
        await started(app, pilot)
        conv = app.conversation
        await until(lambda: conv.max_scroll_y > 0 and conv.scroll_y == conv.max_scroll_y, pilot)
        backend.push(*more[:12])
        await until(lambda: app.conversation.view_of("T020") is not None, pilot)
        await pilot.pause(0.2)
        assert conv.scroll_y == conv.max_scroll_y  # followed
        conv.scroll_to(y=0, animate=False)
        await pilot.pause()
        conv.release_anchor()
        await pilot.pause()
        backend.push(*more[12:])
        await until(lambda: app.cockpit.runs["T020"].ending is not None, pilot)
        await pilot.pause(0.2)
        assert conv.scroll_y == 0 and conv.max_scroll_y > 0  # stayed where the user reads
        await pilot.press("ctrl+end")  # follow again
        await until(lambda: conv.scroll_y == conv.max_scroll_y, pilot)


async def test_side_panel_shows_the_screen_with_the_click_and_the_todos() -> None:
    app, _ = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await until(lambda: app.side.thumb.image is not None, pilot)
        assert "last click at 420,310" in str(app.side.caption.render())
        todos = str(app.side.todos.render())
        assert "✓ T001" in todos and "? T002" in todos and "○ T004" in todos


def test_thumbnail_marks_the_click_in_red() -> None:
    png = SCREEN.read_bytes()
    plain, marked = marked_thumbnail(png, None), marked_thumbnail(png, (420, 310))
    scale = plain.width / 1280
    centre = (round(420 * scale), round(310 * scale))
    assert marked.getpixel(centre) == (255, 40, 40)
    assert plain.getpixel(centre) != (255, 40, 40)
    far = (round(1100 * scale), round(100 * scale))
    assert marked.getpixel(far) == plain.getpixel(far)


class FlakyBackend(ReplayBackend):
    """The stream breaks once after a few lines; the reconnect resumes after the last seq."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        super().__init__([])
        self.lines = lines
        self.opened: list[int] = []

    async def events(self, after: int) -> Any:
        self.opened.append(after)
        yield {"kind": "connected"}
        for line in self.lines:
            if line["seq"] > after:
                yield line
            if len(self.opened) == 1 and line["seq"] == 10:
                raise BackendError("cut")
        while True:
            yield await self._live.get()


async def test_reconnects_after_a_cut_and_resumes_after_the_last_seq() -> None:
    from jarvis.tui.app import JarvisApp
    from jarvis.tui.settings import TuiSettings

    backend = FlakyBackend(task_lines("T001"))
    app = JarvisApp(backend, TuiSettings(thumbnail="halfblocks"))
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: app.cockpit.runs.get("T001") and app.cockpit.runs["T001"].ending, pilot)
        assert backend.opened == [0, 10]
        assert app.connection == "live"
        assert len(view(app, "T001").query(ToolCard)) == 4  # nothing twice, nothing lost


def test_the_fixture_is_a_real_journal() -> None:
    lines = journal()
    seqs = [line["seq"] for line in lines]
    assert seqs == sorted(set(seqs))
    kinds = {line["kind"] for line in lines}
    assert {"task_started", "tool_call_streaming", "verification_finished"} <= kinds
    assert {line["status"] for line in lines if line["kind"] == "task_finished"} == {
        "finished",
        "needs_user",
        "cancelled",
    }


async def test_streamed_text_waits_while_the_user_types_then_is_drawn() -> None:
    app, backend = replay_app(history=[])
    lines = task_lines("T003")
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        backend.push(*lines[:3])  # task started, step 1, the first delta
        await until(lambda: view_text(app) == lines[2]["text"], pilot)
        await pilot.press("x")  # typing now; keep the key fresh and the last draw recent
        assert app.prompt.last_key_at > 0
        app.prompt.last_key_at = app._drawn_at = time.monotonic() + 3600
        backend.push(*lines[3:10])
        await until(
            lambda: app.cockpit.runs["T003"].items[0].text.endswith(lines[9]["text"]), pilot
        )
        await pilot.pause(0.3)
        assert view_text(app) == lines[2]["text"]  # held back while the user types
        app.prompt.last_key_at = 0.0  # the user stopped typing
        await until(lambda: view_text(app).endswith(lines[9]["text"]), pilot, 5)


def view_text(app: Any) -> str:
    found = app.conversation.view_of("T003")
    return "".join(t.source for t in found.thought_views()) if found else ""
