"""Key names, chords and typed text, checked against the real Tk app on Xvfb.

Emoji: Tk 8.6 does receive them. It keeps characters outside the BMP as UTF-16
surrogate pairs, which ``tests/tkapp.py`` joins back into code points before it
reports a text (a lost or wrong half would not join into the same character), so
the Tk Entry and Text widgets themselves are the receivers for the whole corpus.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator

import pytest
from Xlib import XK

from jarvis.desktop import x11
from jarvis.desktop.clipboard import utf8_chunks
from jarvis.desktop.input import (
    Input,
    InputError,
    UnknownKeyError,
    normalize_key,
    parse_chord,
    split_for_keymap,
)
from jarvis.desktop.text_entry import choose_method
from jarvis.desktop.x11 import XDisplay
from tests.tkdriver import TkApp

# ------------------------------------------------------------------ key names


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        *[(n, "super") for n in ("cmd", "Command", "SUPER", "win", "Windows", "meta")],
        *[(n, "ctrl") for n in ("ctrl", "Control", "CTRL")],
        *[(n, "alt") for n in ("alt", "Option", "opt")],
        ("Shift", "shift"),
        *[(n, "enter") for n in ("enter", "Return", "\n")],
        *[(n, "esc") for n in ("esc", "Escape", "ESC")],
        *[(n, "pageup") for n in ("page up", "PgUp", "pageup", "Page_Up", "page-up")],
        *[(n, "pagedown") for n in ("page down", "pgdn", "PageDown")],
        *[(n, "delete") for n in ("del", "Delete")],
        ("Backspace", "backspace"),
        *[(n, "tab") for n in ("tab", "\t")],
        *[(n, "space") for n in ("space", " ", "Spacebar")],
        *[(n, "up") for n in ("up", "ArrowUp", "arrow_up", "up arrow")],
        ("arrowdown", "down"),
        ("ArrowLeft", "left"),
        ("RIGHT", "right"),
        ("Home", "home"),
        ("end", "end"),
        ("Insert", "insert"),
        ("F1", "f1"),
        ("f12", "f12"),
        ("F24", "f24"),
        ("a", "a"),
        ("A", "a"),
        ("5", "5"),
        ("<", "<"),
        ("~", "~"),
        ("plus", "+"),
        ("é", "é"),
        ("É", "é"),
    ],
)
def test_normalize_key(name: str, canonical: str) -> None:
    assert normalize_key(name) == canonical


@pytest.mark.parametrize("bad", ["foo", "f25", "f0", "hyper", "ctrl+", "", "  ", "\x07", "enterr"])
def test_unknown_keys_raise_naming_the_key(bad: str) -> None:
    with pytest.raises(UnknownKeyError) as info:
        normalize_key(bad)
    assert repr(bad) in str(info.value)
    assert info.value.key == bad
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("chord", "keys"),
    [
        ("ctrl+shift+s", ["ctrl", "shift", "s"]),
        ("Ctrl+Shift+S", ["ctrl", "shift", "s"]),
        ("cmd+c", ["super", "c"]),
        ("ctrl + a", ["ctrl", "a"]),
        ("ctrl++", ["ctrl", "+"]),
        ("ctrl+plus", ["ctrl", "+"]),
        ("+", ["+"]),
        ("alt+F4", ["alt", "f4"]),
        ("control+alt+del", ["ctrl", "alt", "delete"]),
        ("shift+ArrowUp", ["shift", "up"]),
        ("page up", ["pageup"]),
        ("ctrl+ctrl+a", ["ctrl", "a"]),
    ],
)
def test_parse_chord(chord: str, keys: list[str]) -> None:
    assert parse_chord(chord) == keys


@pytest.mark.parametrize(
    ("chord", "named"),
    [("ctrl+", "ends with '+'"), ("ctrl+foo", "'foo'"), ("", "empty"), ("ctrl+f99", "'f99'")],
)
def test_bad_chords(chord: str, named: str) -> None:
    with pytest.raises(UnknownKeyError, match=re.escape(named)):
        parse_chord(chord)


@pytest.mark.parametrize(
    ("key", "keysym"),
    [
        ("ctrl", "Control_L"),
        ("super", "Super_L"),
        ("enter", "Return"),
        ("pageup", "Page_Up"),
        ("f13", "F13"),
        ("+", "plus"),
        ("<", "less"),
        ("a", "a"),
        ("é", "U00E9"),
    ],
)
def test_x11_keysym_names(key: str, keysym: str) -> None:
    assert x11.keysym_name(key) == keysym


def test_split_for_keymap_bounds_off_keymap_characters_per_piece() -> None:
    on = set("abc ")
    pieces = split_for_keymap("ab é ü ö c 中文字", on, limit=2, size=100)
    assert "".join(pieces) == "ab é ü ö c 中文字"
    for piece in pieces:
        assert len({c for c in piece if c not in on}) <= 2
    assert split_for_keymap("abcabc", on, limit=1, size=4) == ["abca", "bc"]


def test_utf8_chunks_split_on_character_boundaries() -> None:
    text = "aé中😀" * 50
    chunks = utf8_chunks(text, limit=20)
    assert "".join(chunks) == text
    assert all(len(c.encode()) <= 20 for c in chunks)


# ------------------------------------------------------------ keys on the app


def _first_key(app: TkApp, mark: int) -> dict:
    app.sync()
    keys = [e for e in app.events("key", since=mark) if not e["modifier"]]
    assert keys, f"no key arrived; events: {app.events(since=mark)[-10:]}"
    return keys[0]


@pytest.mark.parametrize(
    ("chord", "mods", "keysym"),
    [
        ("ctrl+a", {"ctrl"}, "a"),
        ("ctrl+shift+s", {"ctrl", "shift"}, "s"),
        ("super+x", {"super"}, "x"),
        ("alt+f4", {"alt"}, "f4"),
        ("Control+Alt+Page Down", {"ctrl", "alt"}, "next"),  # Tk calls Page_Down "Next"
    ],
)
def test_hotkeys_arrive_as_chords(tkapp: TkApp, chord: str, mods: set[str], keysym: str) -> None:
    mark = tkapp.mark()
    Input(display=XDisplay.from_env()).hotkey(chord)
    key = _first_key(tkapp, mark)
    assert set(key["mods"]) == mods
    assert key["keysym"].lower() == keysym
    pressed_modifiers = [e["keysym"] for e in tkapp.events("key", since=mark) if e["modifier"]]
    assert len(pressed_modifiers) == len(mods)


@pytest.mark.parametrize(
    "key",
    [
        "enter", "esc", "tab", "space", "backspace", "delete", "insert", "home", "end",
        "pageup", "pagedown", "up", "down", "left", "right", "f1", "f12", "f13", "f24",
        "a", "5", "<", "~", "+", "é",
    ],
)  # fmt: skip
def test_single_keys_arrive(tkapp: TkApp, key: str) -> None:
    mark = tkapp.mark()
    Input(display=XDisplay.from_env()).press_key(key)
    got = _first_key(tkapp, mark)
    expected = x11.char_keysym(key) if len(key) == 1 else XK.string_to_keysym(x11.keysym_name(key))
    assert got["keysym_num"] == expected, got
    assert got["mods"] in ([], ["shift"])  # "<" and "~" need shift on a US layout


def test_keys_beyond_the_keymap_survive_repeated_presses(tkapp: TkApp) -> None:
    """F13-F24 are not on Xvfb's keymap; they must still arrive every time."""
    mark = tkapp.mark()
    inp = Input(display=XDisplay.from_env())
    expected = []
    for name in ["f13", "f24", "f20", "é", "f13"] * 4:
        inp.press_key(name)
        expected.append(x11.keysym_number(name))
    tkapp.sync()
    got = [e["keysym_num"] for e in tkapp.events("key", since=mark) if not e["modifier"]]
    assert got == expected


def test_unknown_key_presses_nothing(tkapp: TkApp) -> None:
    inp = Input(display=XDisplay.from_env())
    mark = tkapp.mark()
    with pytest.raises(UnknownKeyError, match="'hyperdrive'"):
        inp.press_key("hyperdrive")
    with pytest.raises(UnknownKeyError, match="'nosuchkey'"):
        inp.hotkey("ctrl+shift+nosuchkey")  # validated before ctrl goes down
    tkapp.sync()
    assert tkapp.events("key", since=mark) == []


# ---------------------------------------------------------------- typed text

ASCII = "".join(chr(c) for c in range(32, 127))
CORPUS = {
    "ascii": ASCII,
    "ascii-specials": "<>{}|~ `^ \\ \"quoted\" 'single' $HOME %d &amp; #1 @user",
    "accents": "Crème brûlée, façade, naïve, Ångström, Øre, Straße, Œuvre, Łódź, ő, ž, ÿ",
    "cjk": "漢字かなカナ한국어 中文测试 日本語",
    "emoji": "😀🎉👍🏽🚀 👨‍👩‍👧 ❤️ 🇩🇪",
    "mixed": "a<b>{c}|d~e 中 é 😀 end",
}


def _type_into_box(app: TkApp, text: str, method: str) -> None:
    app.focus("box")
    Input(type_method=method, display=XDisplay.from_env()).type_text(text)  # type: ignore[arg-type]
    try:
        app.wait_for(lambda e: e["kind"] == "text" and e["text"] == text, timeout=5)
    except AssertionError:
        got = app.entry_text()
        raise AssertionError(f"typed {text!r}, the box holds {got!r}") from None
    assert app.entry_text() == text


@pytest.mark.parametrize("method", ["auto", "clipboard", "xdotool"])
@pytest.mark.parametrize("name", list(CORPUS))
def test_text_arrives_exactly(tkapp: TkApp, name: str, method: str) -> None:
    before = f"held before typing {name} ✓".encode()
    _xclip_set(before)
    _type_into_box(tkapp, CORPUS[name], method)
    assert _xclip_get() == before  # and the clipboard holds what it held before


@pytest.mark.parametrize("method", ["auto", "clipboard", "xdotool"])
def test_newlines_and_tabs_are_return_and_tab(tkapp: TkApp, method: str) -> None:
    text = "first line\n\tindented é 中\nlast 😀 <>"
    tkapp.focus("notes")
    Input(type_method=method, display=XDisplay.from_env()).type_text(text)  # type: ignore[arg-type]
    tkapp.wait_for(lambda e: e["kind"] == "text" and e["text"] == text, timeout=5)
    assert tkapp.notes_text() == text


def test_long_text_in_many_scripts(tkapp: TkApp) -> None:
    """More distinct off-keymap characters than spare keycodes: keys are typed in
    pieces that reuse keycodes between them; the clipboard pastes it at once."""
    text = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 60)) + " ĀāĂăĄą ΑΒΓΔ Жж"
    _type_into_box(tkapp, text, "auto")
    tkapp.reset()
    _type_into_box(tkapp, text, "clipboard")


def test_control_characters_are_refused(tkapp: TkApp) -> None:
    with pytest.raises(InputError, match="U\\+001B"):
        Input(display=XDisplay.from_env()).type_text("a\x1bb")
    tkapp.sync()
    assert tkapp.events("key") == []


def test_auto_types_keys_whatever_the_text(xserver: object) -> None:
    """auto never depends on an application's paste key: long CJK text is typed too."""
    assert choose_method("auto", True, ASCII) == "xdotool"
    assert choose_method("auto", True, "Grüße aus München") == "xdotool"
    assert choose_method("auto", True, "".join(chr(0x4E00 + i) for i in range(200))) == "xdotool"
    assert choose_method("clipboard", True, "abc") == "clipboard"


# ------------------------------------------------------------------ clipboard


def _xclip_set(data: bytes, target: str = "UTF8_STRING") -> None:
    """Set the clipboard and wait until it reads back (xclip's background process
    takes the selection after the command returns; until then the last owner answers)."""
    subprocess.run(
        ["xclip", "-selection", "clipboard", "-t", target, "-i"],
        input=data,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    deadline = time.monotonic() + 5
    while _xclip_get(target) != data:
        assert time.monotonic() < deadline, "xclip did not take the clipboard"
        time.sleep(0.01)


def _xclip_get(target: str = "UTF8_STRING") -> bytes | None:
    done = subprocess.run(
        ["xclip", "-selection", "clipboard", "-t", target, "-o"],
        capture_output=True,
        timeout=5,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


@pytest.fixture
def empty_clipboard(xserver: object) -> Iterator[None]:
    from Xlib import X
    from Xlib.display import Display
    from Xlib.protocol import request

    display = Display()
    clipboard = display.intern_atom("CLIPBOARD")
    request.SetSelectionOwner(
        display=display.display, window=X.NONE, selection=clipboard, time=X.CurrentTime
    )
    display.sync()
    display.close()
    yield


@pytest.mark.parametrize("method", ["clipboard", "auto"])
def test_clipboard_holds_what_it_held_before(tkapp: TkApp, method: str) -> None:
    before = "before ✓ kept: 中文 😀".encode()
    _xclip_set(before)
    _type_into_box(tkapp, "pasted é 中 😀 " + "".join(chr(0x4E00 + i) for i in range(40)), method)
    assert _xclip_get() == before


def test_non_text_clipboard_is_restored(tkapp: TkApp) -> None:
    png = bytes.fromhex("89504e470d0a1a0a") + bytes(range(256))
    _xclip_set(png, "image/png")
    _type_into_box(tkapp, "über", "clipboard")
    assert _xclip_get("image/png") == png


def test_empty_clipboard_stays_empty(tkapp: TkApp, empty_clipboard: None) -> None:
    assert _xclip_get() is None
    _type_into_box(tkapp, "naïve 中", "clipboard")
    assert _xclip_get() is None


def test_pyautogui_has_no_pause_and_its_own_failsafe_is_ours(tkapp: TkApp) -> None:
    gui = Input(display=XDisplay.from_env()).gui  # imports pyautogui on the test display
    assert gui.PAUSE == 0  # its default adds 100 ms to every call
    assert gui.FAILSAFE is False  # replaced by Input's own corner check (it knows where it left
    # the pointer), which is on by default
    assert Input(display=XDisplay.from_env()).failsafe is True
