# The order of a Run's history: one value, one transition, one policy.
#
# The policy. A Harness numbers the items of each Run contiguously from 0,
# and a Host must detect retention gaps rather than skip over them. So the
# first item of a Run carries sequence 0 (a reader whose API takes another
# first sequence, such as ``check_prefix(first_sequence=...)``, starts its
# cursor there), and every later item carries the next integer. Against the
# item that is due:
#
#   - an item of another Run, or of another Thread than the Run's first item,
#     is a ForeignRunError;
#   - any item after the terminal result is an AfterTerminalError;
#   - a repeated or earlier sequence is a SequenceOrderError;
#   - a later one (a skip) is a SequenceGapError.
#
# When an item breaks more than one rule the first in that list is reported,
# so every reader names the same fault for the same item.
#
# Two looser policies exist for readers that do not get a Run's own stream
# (``ProjectionOptions.order`` chooses one for a projection; the stores
# always keep the strict one):
#
#   - "tap" (``advance_tap``): what a Host gets from a13n-harness's producer
#     tap (``RunBindings.producer_observer``) followed by the public terminal
#     item. The tap numbers each Run's items with the producer's own counter
#     from 1 (it may or may not show a run_started), and the terminal item
#     carries its public sequence, which can equal or precede the tap's
#     last number. So: the first item of a Run binds it at any sequence,
#     each later item has a greater sequence than the one before (a repeat
#     or a step back is a SequenceOrderError, a skip is allowed), the
#     terminal result may carry any sequence, and nothing may follow it;
#   - "unchecked" (``advance_unchecked``): only the correlation (the Run and
#     its Thread); the sequence and anything after the terminal result are
#     the Host's to check. This is a13n-stream-protocol's contract.
#
# Every reader of a history goes through ``advance``: the reducer (so
# ``observe()`` and ``resume()``), the JSONL journal reader and checker, the
# Host kit's ``check_prefix`` / ``check_tail``, the SQLite source journal's
# ``append`` and the delivery log's ``record``. They differ only in where
# their cursor starts (a stored head row, a handoff cursor) and in what they
# do with the error (raise it, locate it at a file line, count it in a
# report); none re-states the rule.
#
# A cursor belongs to one Run. A fresh cursor binds the Run and Thread of the
# first item it accepts; a reader that already knows the Run (check_prefix,
# a chosen journal Run) starts with ``run_id`` set and only the Thread is
# bound by the first item. A stream that interleaves several Runs (subagents,
# each numbering from 0) keeps one cursor per run id. ``advance`` is on the
# observe() hot path: the accepted case is four comparisons and one small
# object, and everything else (binding, classifying a fault) is off to the
# side in ``_slow``.

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from ._fast import new_tuple
from .errors import AfterTerminalError, ForeignRunError, SequenceGapError, SequenceOrderError
from .source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent

__all__ = ["HistoryCursor", "advance", "INITIAL_CURSOR", "StreamCursor", "advance_stream", "is_root_item",
           "advance_in_stream", "advance_tap", "advance_unchecked", "advance_by", "advance_by_name"]


# A NamedTuple, not a frozen attrs class: a cursor is four atomic values, one
# is built per accepted item on observe()'s hot path, and a tuple is the
# cheapest frozen value CPython builds (bench/pipeline.py: about 2% of
# observe_encoded() against an attrs class with an instance dict). Its fields
# are named; being a tuple it also unpacks and compares equal to a tuple of
# the same four values, which nothing here relies on.
class HistoryCursor(NamedTuple):
    """Where a reader is in one Run's history.

    ``run_id`` and ``thread_id`` are the Run's correlation (None until bound:
    a fresh cursor takes both from the first item it accepts),
    ``next_sequence`` the sequence due next, and ``finished`` whether the
    terminal result was accepted (nothing may follow it).
    """

    run_id: str | None = None
    thread_id: str | None = None
    next_sequence: int = 0
    finished: bool = False

    @property
    def started(self) -> bool:
        """Whether the cursor has accepted an item (the first binds the Thread)."""
        return self.thread_id is not None

    @property
    def last_sequence(self) -> int | None:
        """The sequence of the last accepted item, None before the first."""
        return self.next_sequence - 1 if self.thread_id is not None else None

    def __repr__(self) -> str:
        if self.thread_id is None:
            run = "" if self.run_id is None else f"run={self.run_id!r}, "
            return f"HistoryCursor({run}fresh, next={self.next_sequence})"
        end = ", finished" if self.finished else ""
        return f"HistoryCursor(run={self.run_id!r}, thread={self.thread_id!r}, next={self.next_sequence}{end})"


INITIAL_CURSOR = HistoryCursor()
"""A cursor that has seen nothing and expects a Run's first item at 0."""


def advance(cursor: HistoryCursor, item: HarnessStreamEvent) -> HistoryCursor:
    """The cursor after ``item``, the next item of the Run's history.

    ``item`` must be a HarnessEvent or HarnessRunResultEvent (callers check
    the type; this does not). Returns a new cursor. Raises, with the policy
    and precedence of this module's comment: ForeignRunError,
    AfterTerminalError, SequenceOrderError or SequenceGapError, each naming
    the run id, the item's sequence and (for order and gap) the ``expected``
    one. On error ``cursor`` is of course unchanged: keep using it.
    """
    run_id, thread_id, due, finished = cursor  # one unpacking: cheaper than four field reads
    seq = item.sequence
    if seq == due and item.run_id == run_id and item.thread_id == thread_id and not finished:
        return new_tuple(HistoryCursor, (run_id, thread_id, seq + 1,
                                    type(item) is not HarnessEvent and isinstance(item, HarnessRunResultEvent)))
    return _slow(cursor, item)



def _slow(cursor: HistoryCursor, item: HarnessStreamEvent) -> HistoryCursor:
    seq, run_id, thread_id, due = item.sequence, cursor.run_id, cursor.thread_id, cursor.next_sequence
    if run_id is not None and item.run_id != run_id:
        raise ForeignRunError(f"an item of run {item.run_id!r} in the history of run {run_id!r}",
                              run_id=run_id, sequence=seq, thread_id=thread_id, found_run_id=item.run_id,
                              found_thread_id=item.thread_id)
    if thread_id is not None and item.thread_id != thread_id:
        raise ForeignRunError(f"an item of thread {item.thread_id!r} in a run of thread {thread_id!r}",
                              run_id=run_id, sequence=seq, thread_id=thread_id, found_run_id=item.run_id,
                              found_thread_id=item.thread_id)
    if cursor.finished:
        raise AfterTerminalError(f"an item after the terminal result at sequence {due - 1}",
                                 run_id=run_id, sequence=seq, terminal_sequence=due - 1)
    if seq < due:
        what = "repeated" if thread_id is not None and seq == due - 1 else "went back"
        raise SequenceOrderError(f"sequence {what}: {due} was due", run_id=item.run_id, sequence=seq,
                                 expected=due)
    if seq > due:
        missing = f"{due}" if seq == due + 1 else f"{due} to {seq - 1}"
        raise SequenceGapError(f"sequence {missing} missing", run_id=item.run_id, sequence=seq, expected=due)
    # The first item: it binds what the cursor did not know yet.
    return HistoryCursor(item.run_id, item.thread_id, seq + 1, isinstance(item, HarnessRunResultEvent))


def advance_tap(cursor: HistoryCursor, item: HarnessStreamEvent) -> HistoryCursor:
    """The cursor after ``item`` under the "tap" policy (see the module
    comment): ``advance``'s checks of the Run, the Thread and the terminal
    result; a first item at any sequence; then increasing sequences, a
    terminal result at any. Raises ForeignRunError, AfterTerminalError or
    SequenceOrderError."""
    run_id, thread_id, due, finished = cursor
    terminal = type(item) is not HarnessEvent and isinstance(item, HarnessRunResultEvent)
    seq = item.sequence
    if item.run_id == run_id and item.thread_id == thread_id and not finished and (seq >= due or terminal):
        return HistoryCursor(run_id, thread_id, seq + 1, terminal)
    if thread_id is None and (run_id is None or item.run_id == run_id):  # the first item binds at any sequence
        return HistoryCursor(item.run_id, item.thread_id, seq + 1, terminal)
    return _slow(cursor, item)


def advance_unchecked(cursor: HistoryCursor, item: HarnessStreamEvent) -> HistoryCursor:
    """The cursor after ``item`` under the "unchecked" policy: the Run and
    its Thread must be the cursor's (ForeignRunError), nothing else is
    checked; the cursor records the item's sequence and whether a terminal
    result was seen."""
    run_id, thread_id, _, finished = cursor
    if (run_id is not None and item.run_id != run_id) or (thread_id is not None and item.thread_id != thread_id):
        return _slow(cursor, item)
    terminal = type(item) is not HarnessEvent and isinstance(item, HarnessRunResultEvent)
    return HistoryCursor(item.run_id, item.thread_id, item.sequence + 1, finished or terminal)


_POLICIES = {"tap": advance_tap, "unchecked": advance_unchecked}


def advance_by_name(order: str) -> Callable[[HistoryCursor, HarnessStreamEvent], HistoryCursor]:
    """``advance``, ``advance_tap`` or ``advance_unchecked``: the function of
    the policy named ``order`` ("strict", "tap", "unchecked"). KeyError for
    another name."""
    return advance if order == "strict" else _POLICIES[order]


def advance_by(order: str, cursor: HistoryCursor, item: HarnessStreamEvent) -> HistoryCursor:
    """The cursor after ``item`` under the policy named ``order``."""
    return advance_by_name(order)(cursor, item)


# -- streams -------------------------------------------------------------------
#
# A Run that delegates publishes one stream: its own items and those of its
# child Runs (and theirs), interleaved, each Run numbering its own items from
# 0 (core/reduce.py). What a store keeps is that stream in arrival order,
# and what it hands over is a *position* in it: the index of an item in the
# stream, counted from the root Run's first sequence, so that for a Run
# without children the position of an item is its sequence. A StreamCursor
# checks such a stream the way a HistoryCursor checks one Run: the root with
# its own cursor, every other run id with a cursor of its own that starts at
# 0, every item through ``advance``; nothing of the stream may follow the
# root's terminal result. Which child Runs a stream may carry (opened by
# run_started, announced, not yet finished) is ``core.membership``'s table,
# which the reducer applies: a store only keeps each Run's order and the
# stream's.


@attrs.frozen(repr=False)
class StreamCursor:
    """Where a reader is in the stream of one root Run and its child Runs.

    ``root`` is the root Run's HistoryCursor (``root.run_id`` is preset by a
    reader that knows the stream it reads), ``children`` one cursor per child
    run id seen, ``next_position`` the position due next. ``opened`` says
    that the stream's first item lies behind the cursor even if the root's
    cursor has not bound its Thread yet (a tail read from a bare position):
    then an item of another run id is a child item, not a foreign first item.
    """

    root: HistoryCursor = INITIAL_CURSOR
    children: PMap[str, HistoryCursor] = pmap()
    next_position: int = 0
    opened: bool = False

    @classmethod
    def of(cls, run_id: str | None = None, *, first_sequence: int = 0, opened: bool = False) -> StreamCursor:
        """A cursor for the stream of root Run ``run_id`` (None: the first item's Run) whose root item and
        position ``first_sequence`` are due next; ``opened``: the stream's first item is behind it."""
        return cls(HistoryCursor(run_id, next_sequence=first_sequence), pmap(), first_sequence, opened)

    @property
    def run_id(self) -> str | None:
        """The root Run, None until bound."""
        return self.root.run_id

    @property
    def finished(self) -> bool:
        """Whether the root's terminal result was accepted (the stream is over)."""
        return self.root.finished

    @property
    def last_position(self) -> int | None:
        """The position of the last accepted item, None before the first."""
        return self.next_position - 1 if self.root.started or self.opened else None

    def cursor_of(self, run_id: str) -> HistoryCursor | None:
        """The cursor of one Run of the stream (root or child), None if unseen."""
        if run_id == self.root.run_id:
            return self.root
        return self.children.get(run_id)

    def __repr__(self) -> str:
        kids = f", children={len(self.children)}" if self.children else ""
        return f"StreamCursor({self.root!r}, next_position={self.next_position}{kids})"


def is_root_item(root: HistoryCursor, item: HarnessStreamEvent, opened: bool = False) -> bool:
    """The membership rule of a stream: whether ``item`` is an item of the
    root Run whose cursor is ``root`` (of its run id, or the stream's first
    item, which binds the root unless ``opened`` says the first item lies
    behind) rather than of a child Run."""
    return item.run_id == root.run_id or not (root.started or opened)


def advance_in_stream(root: HistoryCursor, child: HistoryCursor | None, item: HarnessStreamEvent,
                      opened: bool = False, order: str = "strict") -> HistoryCursor:
    """The cursor of ``item``'s Run after ``item``, the next item of a root
    Run's stream: the root's cursor for an item of the root (``is_root_item``),
    else the cursor of the child Run, given as ``child`` (None for a Run new
    to the stream).

    A child item after the root's terminal result is an
    ``AfterTerminalError`` naming the root (a ``ForeignRunError`` when the
    Run is new to the stream: nothing starts once it has ended); a new child
    starts at sequence 0 and binds its own Thread (another first sequence is
    a ForeignRunError naming the root); then the item goes through
    ``advance`` on its Run's cursor. Raises what ``advance`` raises.

    Under another ``order`` policy (the module comment) every Run's cursor
    goes through that policy's function instead: under "tap" a child Run
    starts at any sequence (nothing may still follow the root's terminal
    result), under "unchecked" only each Run's Thread is checked.
    """
    if order != "strict":
        if is_root_item(root, item, opened):
            return advance_by(order, root, item)
        if order == "tap" and root.finished:
            raise AfterTerminalError(
                f"an item of run {item.run_id!r} after the terminal result of the stream's root run "
                f"{root.run_id!r}", run_id=root.run_id, sequence=item.sequence,
                terminal_sequence=root.next_sequence - 1)
        return advance_by(order, child if child is not None else HistoryCursor(item.run_id), item)
    if is_root_item(root, item, opened):
        return advance(root, item)
    if root.finished and child is None:  # nothing starts once the stream has ended: another Run's item
        raise ForeignRunError(f"an item of run {item.run_id!r} in the history of run {root.run_id!r}",
                              run_id=root.run_id, sequence=item.sequence, thread_id=root.thread_id,
                              found_run_id=item.run_id, found_thread_id=item.thread_id)
    if root.finished:
        raise AfterTerminalError(
            f"an item of run {item.run_id!r} after the terminal result of the stream's root run "
            f"{root.run_id!r} at sequence {root.next_sequence - 1}",
            run_id=root.run_id, sequence=item.sequence, terminal_sequence=root.next_sequence - 1)
    if child is None:
        if item.sequence != 0:  # not the start of a child Run: an item of a Run foreign to the stream
            raise ForeignRunError(f"an item of run {item.run_id!r}, which the stream has not started, in the "
                                  f"stream of run {root.run_id!r}", run_id=root.run_id, sequence=item.sequence,
                                  thread_id=root.thread_id, found_run_id=item.run_id,
                                  found_thread_id=item.thread_id)
        child = HistoryCursor(item.run_id)
    return advance(child, item)


def advance_stream(cursor: StreamCursor, item: HarnessStreamEvent) -> StreamCursor:
    """The stream cursor after ``item``, the next item of a root Run's stream.

    The root's first item binds the root Run (unless preset). An item of the
    root goes through ``advance`` on the root's cursor; an item of any other
    run id is a child item: after the root's terminal result it is an
    ``AfterTerminalError`` naming the root (a ``ForeignRunError`` when the
    Run is new to the stream: nothing starts once it has ended), otherwise it goes through
    ``advance`` on that child's own cursor (a new child starts at sequence 0
    and binds its own Thread; the first item of an unseen run id at another
    sequence is a ForeignRunError naming the root). Before the root's first item, an item of
    another Run is the ForeignRunError of ``advance``. Raises what
    ``advance`` raises; ``cursor`` is unchanged on error.
    """
    root = cursor.root
    if is_root_item(root, item, cursor.opened):
        return StreamCursor(advance(root, item), cursor.children, cursor.next_position + 1, cursor.opened)
    child = advance_in_stream(root, cursor.children.get(item.run_id), item, cursor.opened)
    return StreamCursor(root, cursor.children.set(item.run_id, child), cursor.next_position + 1, cursor.opened)
