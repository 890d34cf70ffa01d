"""The one escaping function for terminal text, and the width helpers built on it."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_agui.debug.text import WIDTH, clip, display_width, escape_terminal, wrap

# Characters that must never reach a terminal unescaped, with the escape each becomes.
DANGEROUS = {
    "\x00": "\\x00",
    "\x07": "\\x07",  # BEL
    "\x08": "\\x08",  # backspace
    "\x0b": "\\x0b",
    "\x0c": "\\x0c",
    "\x1b": "\\x1b",  # ESC: starts every CSI / OSC sequence
    "\x7f": "\\x7f",  # DEL
    "\x85": "\\x85",  # NEL (C1)
    "\x9b": "\\x9b",  # CSI (C1)
    "\u061c": "\\u061c",  # ARABIC LETTER MARK
    "\u200b": "\\u200b",  # zero-width space
    "\u200e": "\\u200e",
    "\u200f": "\\u200f",
    "\u202a": "\\u202a",
    "\u202b": "\\u202b",
    "\u202c": "\\u202c",
    "\u202d": "\\u202d",
    "\u202e": "\\u202e",  # RIGHT-TO-LEFT OVERRIDE
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
    "\u2060": "\\u2060",  # word joiner
    "\u2066": "\\u2066",
    "\u2067": "\\u2067",
    "\u2068": "\\u2068",
    "\u2069": "\\u2069",
    "\ufeff": "\\ufeff",  # BOM
    "\u00ad": "\\xad",  # soft hyphen
    chr(0xD800): "\\ud800",  # lone surrogates (chr(): ruff reads surrogate literals as one key)
    chr(0xDFFF): "\\udfff",
    "\U000e0041": "\\U000e0041",  # tag character: invisible text
}


def _unsafe(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category in ("Cc", "Cs", "Zl", "Zp") or (category == "Cf" and ch not in "\u200c\u200d")


@pytest.mark.parametrize(("ch", "shown"), sorted(DANGEROUS.items()))
def test_each_dangerous_character_is_shown_as_a_visible_escape(ch: str, shown: str) -> None:
    assert escape_terminal(f"a{ch}b") == f"a{shown}b"
    assert escape_terminal(f"a{ch}b", multiline=True) == f"a{shown}b"


def test_line_breaks_and_tabs_are_escaped_where_one_line_is_required() -> None:
    assert escape_terminal("key\x1b[2J\nfake: line 2\r\tend") == "key\\x1b[2J\\nfake: line 2\\r\\tend"


def test_multiline_text_keeps_line_feeds_turns_crlf_into_lf_and_tabs_into_spaces() -> None:
    assert escape_terminal("one\r\ntwo\nthree\rover\tx", multiline=True) == "one\ntwo\nthree\\rover    x"


def test_printable_text_joiners_and_private_use_pass_through_unchanged() -> None:
    text = "héllo 漢字 👨\u200d👩\u200d👧 \u200cمرحبا \ue000 e\u0301 C:\\path\\x1b"
    assert escape_terminal(text) == text
    plain = "just ascii"
    assert escape_terminal(plain) is plain


def test_escape_terminal_refuses_anything_but_a_str() -> None:
    with pytest.raises(TypeError):
        escape_terminal(b"\x1b")  # type: ignore[arg-type]


@given(st.text())
def test_escaped_text_holds_no_unsafe_character_and_encodes_as_utf8(text: str) -> None:
    one_line = escape_terminal(text)
    assert not any(_unsafe(ch) for ch in one_line)
    one_line.encode("utf-8")
    several = escape_terminal(text, multiline=True)
    assert not any(_unsafe(ch) for ch in several if ch != "\n")
    several.encode("utf-8")


@given(st.text(), st.booleans())
def test_escaping_is_idempotent(text: str, multiline: bool) -> None:
    once = escape_terminal(text, multiline=multiline)
    assert escape_terminal(once, multiline=multiline) == once


def test_display_width_counts_wide_characters_two_and_combining_marks_none() -> None:
    assert display_width("abc") == 3
    assert display_width("漢字") == 4
    assert display_width("e\u0301") == 1
    assert display_width("ｆｕｌｌ") == 8
    assert WIDTH == 100


def test_clip_cuts_with_dots_and_never_splits_an_escape() -> None:
    assert clip("short", 10) == "short"
    assert clip("abcdefghij", 8) == "abcde..."
    assert clip("abc\x1bdefgh", 8) == "abc..."  # "\x1b" takes four columns: it does not fit, and is not cut
    assert clip("漢字漢字漢字", 7) == "漢字..."
    assert clip("line one\nline two", 100) == "line one\\nline two"
    assert clip("anything", 2) == ".."


@given(st.text(), st.integers(min_value=0, max_value=120))
def test_clip_gives_one_safe_line_that_fits(text: str, width: int) -> None:
    out = clip(text, width)
    assert "\n" not in out
    assert display_width(out) <= width
    assert not any(_unsafe(ch) for ch in out)
    if display_width(escape_terminal(text)) <= width:
        assert out == escape_terminal(text)


def test_wrap_breaks_at_spaces_keeps_line_feeds_and_cuts_long_words() -> None:
    assert wrap("hello world again", 11) == ["hello world", "again"]
    assert wrap("one\n\ntwo", 20, "  ") == ["  one", "  ", "  two"]  # an empty line keeps its indent
    assert wrap("x" * 25, 10, "> ", "  ") == ["> xxxxxxxx", "  xxxxxxxx", "  xxxxxxxx", "  x"]
    assert wrap("a\x1b[2J\nfake", 40) == ["a\\x1b[2J", "fake"]


@given(st.text(), st.integers(min_value=10, max_value=120))
def test_wrapped_lines_fit_the_width_and_carry_only_safe_characters(text: str, width: int) -> None:
    lines = wrap(text, width, "  ", "    ")
    assert lines
    for line in lines:
        assert display_width(line) <= width
        assert "\n" not in line
        assert not any(_unsafe(ch) for ch in line)
        assert line == line.rstrip() or line in ("  ", "    ")
