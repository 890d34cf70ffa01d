# History checks: the order of a Run's history, enforced on any iterable.
#
# ``check_prefix`` and ``check_tail`` wrap whatever a Host reads its retained
# history from (a database cursor, a file, a message bus replay) and pass the
# items through unchanged, running each through ``core.history.advance``
# before it is handed on (the one policy: the item belongs to the Run being
# read, carries exactly the next sequence, and nothing follows the terminal
# result); at the end of a prefix they check that it reached the handoff
# cursor the Host asked for. The first fault raises a ``HistoryError``
# subclass and the item at fault is never yielded, so ``resume()`` fed
# through these checks fails before it commits anything and the observer
# stays fresh.
#
# The cursor starts bound to ``run_id`` at the Run's first sequence (0
# unless the Host says otherwise), so a history that starts late is a gap
# too: a retention hole at the front is still a hole. A tail's cursor starts
# right after the handoff cursor, which is what makes the cutover from
# replay to live free of gaps and overlaps.
#
# Once the item at the cursor has been yielded, a prefix stops pulling, and a
# tail stops after the terminal result: a Host may pass a live subscription,
# and the check neither waits on it for an item nobody asked for nor closes
# it, so the Host can keep reading the same subscription for the tail. (A
# prefix whose cursor lies beyond the terminal result does read on, to report
# whatever comes after the terminal result.)

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable

from ..core._aio import as_async_iterable
from ..core.errors import IncompletePrefixError
from ..core.history import HistoryCursor, advance
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent

__all__ = ["Cursor", "check_prefix", "check_tail"]

Cursor = int | None
"""A handoff cursor: the sequence of the last item a prefix holds, or None
for "before the Run's first item"."""


def check_prefix(
    history: AsyncIterable[HarnessStreamEvent] | Iterable[HarnessStreamEvent],
    *,
    run_id: str,
    through: Cursor,
    first_sequence: int = 0,
) -> AsyncIterator[HarnessStreamEvent]:
    """Pass a Run's retained prefix through, checking the Harness contract.

    ``history`` is an async or plain iterable of one Run's items in source
    order from its first item (which carries ``first_sequence``), each
    checked by ``core.history.advance`` (contiguous sequences, one Thread,
    nothing after the terminal result). The prefix
    must end exactly with the item at the handoff cursor ``through``; nothing
    more is pulled from ``history`` once that item has been yielded, and
    ``through=None`` is the empty prefix (nothing is pulled at all).

    Returns an async iterator, meant to be passed to ``resume()``. Instead of
    yielding an item at fault it raises ``ForeignRunError`` (an item of
    another Run, or of another Thread than the first item),
    ``SequenceOrderError`` (a repeated or decreasing sequence),
    ``SequenceGapError`` (skipped sequences, including a late first item),
    ``AfterTerminalError`` (any item after the terminal result) or, when the
    iterable ends before ``through``, ``IncompletePrefixError``. All are
    ``HistoryError``s, hence ``AguiObservationError``s, naming the run id and
    sequence; a value that is not a source item raises TypeError; errors
    raised by ``history`` itself propagate unchanged. Bad arguments (blank
    run id, negative ``first_sequence``, non-int cursor, a cursor before the
    first sequence) raise at once, from this call. ``history`` is never
    closed: it belongs to the caller.
    """
    _check_args(run_id, through, first_sequence)
    return _checked(as_async_iterable(history, "history"), run_id, first_sequence, through, prefix=True)


def check_tail(
    history: AsyncIterable[HarnessStreamEvent] | Iterable[HarnessStreamEvent],
    *,
    run_id: str,
    after: Cursor,
    first_sequence: int = 0,
) -> AsyncIterator[HarnessStreamEvent]:
    """Pass the rest of a Run after the handoff cursor ``after`` through, checked.

    The first item must carry the sequence right after ``after`` (the Run's
    ``first_sequence`` when ``after`` is None), so the tail has neither gap
    nor overlap with the prefix that ended at ``after``. The iterable may end
    anywhere; the iterator ends with the terminal result and pulls nothing
    after it, so a live subscription can be followed to the end of the Run.

    Returns an async iterator and raises exactly as ``check_prefix`` does,
    except ``IncompletePrefixError`` and ``AfterTerminalError`` (nothing is
    read after the terminal result).
    """
    _check_args(run_id, after, first_sequence)
    start = first_sequence if after is None else after + 1
    return _checked(as_async_iterable(history, "history"), run_id, start, None, prefix=False)


def _check_args(run_id: str, cursor: Cursor, first_sequence: int) -> None:
    if not isinstance(run_id, str) or not run_id.strip():
        raise ValueError(f"run_id must be a non-blank str, not {run_id!r}")
    if cursor is not None and (not isinstance(cursor, int) or isinstance(cursor, bool)):
        raise TypeError(f"a cursor is an int sequence or None, not {type(cursor).__name__}")
    if not isinstance(first_sequence, int) or isinstance(first_sequence, bool) or first_sequence < 0:
        raise ValueError(f"first_sequence must be an int >= 0, not {first_sequence!r}")
    if cursor is not None and cursor < first_sequence:
        raise ValueError(f"cursor {cursor} lies before the Run's first sequence {first_sequence}")


async def _checked(source: AsyncIterable[HarnessStreamEvent], run_id: str, first: int, through: Cursor, *,
                   prefix: bool) -> AsyncIterator[HarnessStreamEvent]:
    if prefix and through is None:
        return
    cursor = HistoryCursor(run_id, next_sequence=first)
    iterator = aiter(source)
    while True:
        try:
            item = await anext(iterator)
        except StopAsyncIteration:
            break
        if not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
            raise TypeError(f"history of run {run_id!r} yielded {type(item).__name__}, not a source item")
        cursor = advance(cursor, item)
        yield item
        if cursor.finished and not prefix:
            return
        if through is not None and item.sequence == through:
            return
    if prefix:
        last = cursor.last_sequence
        ended = "the history was empty" if last is None else f"the history ended at sequence {last}"
        if cursor.finished:
            ended += " with the terminal result"
        raise IncompletePrefixError(f"{ended}, before the handoff cursor {through}", run_id=run_id,
                                    sequence=last, expected=through)
