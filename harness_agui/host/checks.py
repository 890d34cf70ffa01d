# History checks: the order of a Run's history, enforced on any iterable.
#
# ``check_prefix`` and ``check_tail`` wrap whatever a Host reads its retained
# history from (a database cursor, a file, a message bus replay) and pass the
# items through unchanged, running each through ``core.history.advance_stream``
# before it is handed on. What they check is the stream of one root Run: its
# own items and, interleaved, those of the child Runs it delegated to, each
# Run in its own sequence domain (the one policy of ``core.history``: each
# Run's items carry exactly its next sequence and keep its Thread, and
# nothing of the stream follows the root's terminal result). At the end of a
# prefix they check that it reached the handoff cursor the Host asked for.
# The first fault raises a ``HistoryError`` subclass and the item at fault is
# never yielded, so ``resume()`` fed through these checks fails before it
# commits anything and the observer stays fresh.
#
# A handoff cursor is a *position* in the stream: the index of an item in
# arrival order, counted from the root's first sequence (0 unless the Host
# says otherwise). For a Run that delegates nothing, an item's position is
# its sequence. The cursor starts bound to ``run_id`` at the first position,
# so a history that starts late is a gap too: a retention hole at the front
# is still a hole. A tail starts right after the handoff cursor, which is
# what makes the cutover from replay to live free of gaps and overlaps; a
# tail of a stream whose prefix held child items needs the StreamCursor the
# prefix ended with (each Run's next sequence), not just the position.
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
from ..core.history import StreamCursor, advance_stream
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent

__all__ = ["Cursor", "check_prefix", "check_tail"]

Cursor = int | None
"""A handoff cursor: the position in the root Run's stream of the last item a
prefix holds (its sequence, for a Run without child Runs), or None for
"before the Run's first item"."""


def check_prefix(
    history: AsyncIterable[HarnessStreamEvent] | Iterable[HarnessStreamEvent],
    *,
    run_id: str,
    through: Cursor,
    first_sequence: int = 0,
) -> AsyncIterator[HarnessStreamEvent]:
    """Pass a root Run's retained prefix through, checking the Harness contract.

    ``history`` is an async or plain iterable of the Run's stream in arrival
    order from its first item (which carries ``first_sequence``): the Run's
    own items and those of its child Runs, each checked by
    ``core.history.advance_stream`` (each Run's sequences contiguous, a child
    from 0; each Run keeps its Thread; nothing after the root's terminal
    result). The prefix must end exactly with the item at the handoff cursor
    ``through``, a position in the stream (the item's sequence when the Run
    has no child Runs); nothing more is pulled from ``history`` once that
    item has been yielded, and ``through=None`` is the empty prefix (nothing
    is pulled at all).

    Returns an async iterator, meant to be passed to ``resume()``. Instead of
    yielding an item at fault it raises ``ForeignRunError`` (a first item of
    another Run, or an item of another Thread than its Run's first item),
    ``SequenceOrderError`` (a repeated or decreasing sequence),
    ``SequenceGapError`` (skipped sequences, including a late first item),
    ``AfterTerminalError`` (any item after the root's terminal result, or
    after a child's) or, when the iterable ends before ``through``,
    ``IncompletePrefixError`` (whose ``sequence`` and ``expected`` are then
    positions). All are ``HistoryError``s, hence ``AguiObservationError``s,
    naming the run id and sequence; a value that is not a source item raises
    TypeError; errors raised by ``history`` itself propagate unchanged. Bad
    arguments (blank run id, negative ``first_sequence``, non-int cursor, a
    cursor before the first position) raise at once, from this call.
    ``history`` is never closed: it belongs to the caller.
    """
    _check_args(run_id, through, first_sequence)
    start = StreamCursor.of(run_id, first_sequence=first_sequence)
    return _checked(as_async_iterable(history, "history"), run_id, start, through, prefix=True)


def check_tail(
    history: AsyncIterable[HarnessStreamEvent] | Iterable[HarnessStreamEvent],
    *,
    run_id: str,
    after: Cursor | StreamCursor,
    first_sequence: int = 0,
) -> AsyncIterator[HarnessStreamEvent]:
    """Pass the rest of a root Run's stream after the handoff cursor ``after`` through, checked.

    ``after`` is the position of the prefix's last item (None: nothing
    before), or the StreamCursor the prefix ended with. A position alone
    says that the prefix held no child items, so the tail's first root item
    must carry the sequence right after ``after`` (``first_sequence`` when
    None); a stream whose prefix held child items needs the StreamCursor,
    which knows each Run's next sequence. So the tail has neither gap nor
    overlap with the prefix. The iterable may end anywhere; the iterator
    ends with the root's terminal result and pulls nothing after it, so a
    live subscription can be followed to the end of the Run.

    Returns an async iterator and raises exactly as ``check_prefix`` does,
    except ``IncompletePrefixError`` and ``AfterTerminalError`` for the
    stream (nothing is read after the root's terminal result); a
    StreamCursor of another root Run is a ValueError, from this call.
    """
    if isinstance(after, StreamCursor):
        _check_args(run_id, None, first_sequence)
        if after.run_id != run_id:
            raise ValueError(f"the tail's cursor belongs to the stream of run {after.run_id!r}, not {run_id!r}")
        start = after
    else:
        _check_args(run_id, after, first_sequence)
        first = first_sequence if after is None else after + 1
        start = StreamCursor.of(run_id, first_sequence=first, opened=after is not None)
    return _checked(as_async_iterable(history, "history"), run_id, start, None, prefix=False)


def _check_args(run_id: str, cursor: Cursor, first_sequence: int) -> None:
    if not isinstance(run_id, str) or not run_id.strip():
        raise ValueError(f"run_id must be a non-blank str, not {run_id!r}")
    if cursor is not None and (not isinstance(cursor, int) or isinstance(cursor, bool)):
        raise TypeError(f"a cursor is an int position or None, not {type(cursor).__name__}")
    if not isinstance(first_sequence, int) or isinstance(first_sequence, bool) or first_sequence < 0:
        raise ValueError(f"first_sequence must be an int >= 0, not {first_sequence!r}")
    if cursor is not None and cursor < first_sequence:
        raise ValueError(f"cursor {cursor} lies before the Run's first position {first_sequence}")


async def _checked(source: AsyncIterable[HarnessStreamEvent], run_id: str, cursor: StreamCursor, through: Cursor,
                   *, prefix: bool) -> AsyncIterator[HarnessStreamEvent]:
    if prefix and through is None:
        return
    iterator = aiter(source)
    while True:
        try:
            item = await anext(iterator)
        except StopAsyncIteration:
            break
        if not isinstance(item, (HarnessEvent, HarnessRunResultEvent)):
            raise TypeError(f"history of run {run_id!r} yielded {type(item).__name__}, not a source item")
        cursor = advance_stream(cursor, item)
        yield item
        if cursor.finished and not prefix:
            return
        if through is not None and cursor.next_position > through:
            return
    if prefix:
        last = cursor.last_position
        ended = "the history was empty" if last is None else f"the history ended at position {last}"
        if cursor.finished:
            ended += " with the terminal result"
        raise IncompletePrefixError(f"{ended}, before the handoff cursor {through}", run_id=run_id,
                                    sequence=last, expected=through)
