# Text that is safe to print on a terminal, and that fits a width.
#
# Everything a Run or a user controls (message text, tool names, JSON keys,
# file names, error messages quoting them) reaches a terminal only through
# ``escape_terminal``. It never trusts a character to be harmless because it
# is printable: it shows as a visible escape every character that can move
# the cursor, start an escape sequence, reorder or hide text, or that cannot
# be encoded at all. The escapes are Python's own spellings (``\n``, ``\r``,
# ``\t``, ``\x1b``, ``\u202e``, ``\U000e0041``), so a reader knows them; a
# backslash in the text is left alone, which makes the function idempotent
# but means ``\x1b`` typed literally and an escaped ESC look the same. That
# is the price of readable code and paths in the views, and it is safe: the
# output holds no control character either way.
#
# The characters escaped are exactly those ``_unsafe`` accepts: every Cc
# (C0, DEL, C1), every Cf (bidi marks, embeddings, overrides and isolates,
# U+061C, zero-width spaces, word joiners, BOM, soft hyphen, tag characters)
# except U+200C/U+200D, which joined emoji and several scripts need and which
# only join visible neighbours; Zl and Zp (U+2028, U+2029); and lone
# surrogates (Cs), which no encoding can print. Private-use and unassigned
# code points pass through: a terminal shows them as boxes, not as actions.
#
# ``display_width`` counts terminal columns the way terminals do for the
# characters that survive escaping: East Asian wide and fullwidth characters
# take two, combining marks and the two joiners none. ``clip`` and ``wrap``
# escape first, then measure, so nothing a caller passes can break the
# width; neither splits an escape such as ``\x1b`` across a cut.

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["WIDTH", "TAB", "escape_terminal", "display_width", "clip", "wrap"]

WIDTH = 100
"""The default width of the text views, in terminal columns."""

TAB = "    "
"""What a tab becomes in multi-line text (a tab's width depends on the column it starts at)."""

_KEPT_FORMAT = frozenset("\u200c\u200d")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


@lru_cache(maxsize=4096)
def _unsafe(ch: str) -> bool:
    category = unicodedata.category(ch)
    if category == "Cf":
        return ch not in _KEPT_FORMAT
    return category in ("Cc", "Cs", "Zl", "Zp")


def _escape_char(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_terminal(text: str, *, multiline: bool = False) -> str:
    """``text`` with every character that could act on a terminal, reorder
    or hide text, or fail to encode shown as a visible escape.

    Escaped: C0 and C1 controls and DEL, every format character (Cf: bidi
    marks, embeddings, overrides and isolates including U+061C, zero-width
    spaces, BOM, tag characters...) except the zero-width joiner and
    non-joiner, the line and paragraph separators U+2028/U+2029 and lone
    surrogates. Forms: ``\\n``, ``\\r``, ``\\t``, else ``\\xNN``,
    ``\\uNNNN`` or ``\\UNNNNNNNN``. With ``multiline=True`` line feeds are
    kept (CR LF becomes LF; a lone CR is still escaped) and a tab becomes
    four spaces; otherwise the result is one line. Backslashes are not
    doubled, so the function is idempotent. Raises TypeError for a
    non-str.
    """
    if not isinstance(text, str):
        raise TypeError(f"escape_terminal() takes a str, not {type(text).__name__}")
    if text.isascii() and text.isprintable():
        return text
    if multiline:
        text = text.replace("\r\n", "\n")
        if "\t" in text:
            text = text.replace("\t", TAB)
    out: list[str] = []
    for ch in text:
        if ch == "\n" and multiline:
            out.append(ch)
        elif _unsafe(ch):
            out.append(_escape_char(ch))
        else:
            out.append(ch)
    return "".join(out)


@lru_cache(maxsize=4096)
def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The terminal columns one line of escaped ``text`` takes: East Asian
    wide and fullwidth characters count two, combining marks and format
    characters none, everything else one. Raises nothing for a str."""
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


# An escape written by escape_terminal, or one character: the units that a cut never splits.
_UNIT = re.compile(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[nrt])|.", re.S)
_TOKENS = re.compile(r"\s+|\S+")


def clip(text: str, width: int) -> str:
    """``text`` escaped to one line and cut to at most ``width`` columns,
    ending with "..." when it was cut. Raises ValueError for a negative
    ``width``; a width below 4 leaves room for dots only."""
    if width < 0:
        raise ValueError(f"width must not be negative, got {width}")
    text = escape_terminal(text)
    if display_width(text) <= width:
        return text
    if width < 4:
        return "." * width
    out, used, room = [], 0, width - 3
    for unit in _UNIT.findall(text):
        w = display_width(unit)
        if used + w > room:
            break
        out.append(unit)
        used += w
    return "".join(out) + "..."


def wrap(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """``text`` escaped (line feeds kept) and wrapped into lines of at most
    ``width`` columns. The first line starts with ``first``, the others with
    ``rest`` (default: ``first``); the prefixes are the caller's own text
    and are not escaped. Each line feed in ``text`` starts a new line, words
    longer than a line are cut, and text never ends a line in spaces (an
    empty line keeps its prefix, so an indented block stays one block). A
    line can be wider than ``width`` only when its prefix leaves no room for
    one character. Raises nothing for a str and an int."""
    rest = first if rest is None else rest
    lines: list[str] = []
    prefix = first
    for paragraph in escape_terminal(text, multiline=True).split("\n"):
        room = max(1, width - display_width(prefix))
        line: list[str] = []
        used = 0

        def flush() -> None:
            nonlocal prefix, room, line, used
            lines.append(prefix + "".join(line).rstrip())
            prefix, line, used = rest, [], 0
            room = max(1, width - display_width(prefix))

        for token in _TOKENS.findall(paragraph):
            w = display_width(token)
            if used + w <= room:
                line.append(token)
                used += w
            elif token.isspace():
                if used:
                    flush()
            else:
                if used:
                    flush()
                for unit in _UNIT.findall(token):
                    uw = display_width(unit)
                    if used + uw > room and used:
                        flush()
                    line.append(unit)
                    used += uw
        flush()
    return lines
