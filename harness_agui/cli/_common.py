# What every command of the command line shares: its exit statuses, the one-line error that ends a command
# (``_Fail``, reported by ``main``), the one line said on stderr, and how text reaches standard output (exact
# for a pipe or a file, escaped for a terminal).

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

EXIT_OK = 0
EXIT_BAD_INPUT = 1
"""The input is bad (undecodable or over-long line, broken order, a run the
projection refuses), or ``check`` found a problem."""
EXIT_USAGE = 2
"""Bad arguments, a file that cannot be read, a closed standard stream, or
no single run to replay."""
EXIT_BROKEN_PIPE = 141
"""The reader of the output went away (128 + SIGPIPE, what a shell reports
for ``cat`` in ``cat big | head -1``)."""

PROG = "harness-agui"


class _Fail(Exception):
    """Ends a command with a one-line message and an exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def say(err: TextIO | None, message: str, status: int) -> int:
    """Print ``harness-agui: message`` on stderr, escaped to one line, if
    stderr is open and writable; return ``status`` either way."""
    from ..debug.text import escape_terminal

    if err is not None:
        try:
            err.write(f"{PROG}: {escape_terminal(message)}\n")
            err.flush()
        except (OSError, ValueError):
            pass
    return status


def isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def output_text(out: TextIO) -> Callable[[str], str]:
    """How text reaches ``out``: exact bytes for a pipe or a file, which
    programs read; escaped for a terminal, which a run's text must not
    drive."""
    if isatty(out):
        from ..debug.text import escape_terminal

        return lambda text: escape_terminal(text, multiline=True)
    return lambda text: text

