# The half of driving a Run (``host.driver``) that awaits nothing: what committing a lot of its items
# writes. ``prepare`` projects the items with the Run's observer and builds the one ``StreamWrite``
# (journal rows, heads and the events with their ids) that commits them, stopping at an item the driver
# must first compare with the journal or at a failure, which the same write ends the Run with. It reads
# the database never and awaits nothing: the driver does both.

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs
from ag_ui.core import RunErrorEvent

from ..core.errors import AfterTerminalError, HistoryError, SequenceOrderError
from ..core.history import StreamCursor, advance_stream
from ..core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from ..wire.agui import agui_to_json
from ..wire.codec import encode
from .checks import Cursor
from .writes import Head, Journaled, Recorded, StreamWrite

if TYPE_CHECKING:
    from ..core.observer import HarnessAguiObserver
    from ..core.state import ProjectionState
    from .postgres.lease import Lease

__all__ = ["Driven", "Plan", "prepare", "run_error", "stream_at"]

log = logging.getLogger("harness_agui.host.supervisor")

_SOURCE_ITEMS = (HarnessEvent, HarnessRunResultEvent)


class Driven(Protocol):
    """What ``prepare`` reads of a Run its driver holds (``host.driver.DrivenRun``)."""

    @property
    def run_id(self) -> str: ...
    @property
    def thread_id(self) -> str: ...
    @property
    def named(self) -> str: ...
    @property
    def observer(self) -> HarnessAguiObserver | None: ...
    @property
    def cursor(self) -> StreamCursor: ...
    @property
    def journal_end(self) -> Cursor: ...
    @property
    def delivered(self) -> tuple[int, int] | None: ...
    @property
    def last_event_id(self) -> int: ...
    @property
    def lease(self) -> Lease | None: ...


@attrs.frozen
class Plan:
    """What ``prepare`` made of a run of items: the write (None: nothing to commit), the stream cursor
    after the items it projected, how many items it took, an item to compare with the journal before
    going on, and whether the write ends the Run."""

    write: StreamWrite | None
    cursor: StreamCursor
    taken: int
    resent: HarnessStreamEvent | None
    ends: bool


def prepare(run: Driven, items: Sequence[HarnessStreamEvent], *, journaled: bool) -> Plan:
    """What committing ``items`` of ``run`` writes: each item's projection (``run.observer`` moves) and the
    rows that commit it, up to an item to compare with the journal (a resend) or a failure (then the
    write ends the Run with a RUN_ERROR). ``journaled``: the items are the journal's already (a backlog or
    its tail), not the Harness's.

    The projection checks the item's order (the reducer's ``advance``: one check per item), and where the
    stream stands is read from its state (``stream_at``). The stream cursor is asked only what the
    projection cannot answer: of an item it refused, whether the stream's order refuses it (the Harness's
    fault, or a resend) or the projection's own rules; and, until the projection has bound the root Run
    (it binds whatever comes first) or under an order policy looser than the stores' strict one, the
    item's order itself."""
    root = run.run_id
    observer = run.observer
    assert observer is not None
    strict = observer.options.order == "strict"
    at = run.cursor.next_position  # the position of the item at hand
    last_id = run.last_event_id
    rows: list[Journaled] = []
    heads: dict[str, Head] = {}
    events: list[Recorded] = []
    children: dict[str, Head] = {}
    failure: tuple[str, str] | None = None
    resent: HarnessStreamEvent | None = None
    taken = 0
    for item in items:
        if type(item) not in _SOURCE_ITEMS:  # the Harness's fault, not the database's
            failure = ("harness_agui.source_refused", f"{run.named}: the Harness yielded a "
                                                      f"{type(item).__name__}, not a source item")
            break
        before = observer.state
        refused: Exception | None = None
        try:
            if not strict or not before.root.history.started:
                advance_stream(stream_at(run.cursor, before, children, at), item)
            encoded = observer.observe_encoded(item)
        except Exception as e:
            refused, encoded = e, ()
        if refused is None:
            now = observer.state
            top = now.root.history
            own = top if item.run_id == root else now.subagents[item.run_id].run.history
        else:  # refused by the stream's order, or by the projection (then the journal keeps the item)?
            cursor = stream_at(run.cursor, before, children, at)
            try:
                after = advance_stream(cursor, item)
            except HistoryError as e:
                if not journaled and isinstance(e, (SequenceOrderError, AfterTerminalError)) \
                        and _resent(cursor, item):
                    resent = item
                else:
                    code = "harness_agui.projection_failed" if journaled else "harness_agui.source_refused"
                    failure = (code, f"run {root!r}: the Harness item at sequence {item.sequence} is out of "
                                     f"order: {type(e).__name__}: {e}")
                break
            top, kid = after.root, after.cursor_of(item.run_id)
            assert kid is not None
            own = kid
        if not journaled:
            # A result's line is written by the store, in its worker thread: its state may hold a long
            # Thread's whole history (a13n-harness), too much to encode on the event loop.
            line = None if type(item) is HarnessRunResultEvent else encode(item)
            rows.append(Journaled(at, item.run_id, item.sequence, item.thread_id, own.finished, line, item))
            heads[item.run_id] = Head(item.run_id, item.thread_id, item.sequence, own.finished, at)
            if item.run_id != root:
                heads[root] = Head(root, str(top.thread_id), top.next_sequence - 1, top.finished, at)
        taken += 1
        if refused is not None:
            failure = ("harness_agui.projection_failed",
                       f"the projection of run {root!r} failed at the source item at sequence {item.sequence}: "
                       f"{type(refused).__name__}: {refused}")
            break
        for kind, data in encoded:
            last_id += 1
            events.append(Recorded(last_id, at, kind, data))
        if item.run_id != root:
            children[item.run_id] = Head(item.run_id, item.thread_id, item.sequence, own.finished)
        at += 1
        if top.finished:
            break
    if not taken and failure is None:
        return Plan(None, run.cursor, taken, resent, False)
    cursor = run.cursor if at == run.cursor.next_position else stream_at(run.cursor, observer.state, children, at)
    position = -1 if cursor.last_position is None else cursor.last_position
    if failure is not None:
        code, message = failure
        log.error("run %r ended with RUN_ERROR %s: %s", root, code, message)
        last_id += 1
        events.append(Recorded(last_id, position, "RUN_ERROR", run_error(code, message)))
    top = cursor.root
    write = StreamWrite(
        root_run_id=root, thread_id=run.thread_id,
        journal_last=run.journal_end, items=tuple(rows), heads=tuple(heads.values()),
        records=True, delivered=run.delivered, events=tuple(events), cursor=position, last_event_id=last_id,
        finished=cursor.finished or failure is not None,
        root_last_sequence=top.next_sequence - 1 if top.started else -1, children=tuple(children.values()),
        lease=run.lease)
    return Plan(write, cursor, taken, resent, write.finished)


def stream_at(start: StreamCursor, state: ProjectionState, touched: Iterable[str], position: int) -> StreamCursor:
    # The stream cursor at ``position`` read from the projection's state: ``start`` (where the driver took the
    # stream up) with the cursors of the root and of the child Runs ``touched`` since as the state holds them;
    # ``start`` itself until the projection has bound the root (``start`` knows the root Run, it does not).
    root = state.root.history
    if not root.started:
        return start
    subagents = state.subagents
    children = start.children.update({run_id: subagents[run_id].run.history for run_id in touched})
    return StreamCursor(root, children, position, start.opened)


def _resent(cursor: StreamCursor, item: HarnessStreamEvent) -> bool:
    # An item at a sequence its Run has already passed: perhaps the stored item sent again.
    own = cursor.cursor_of(item.run_id)
    return own is not None and item.sequence < own.next_sequence


def run_error(code: str, message: str) -> str:
    """The wire JSON of a RUN_ERROR with ``code`` and ``message``, stamped now."""
    return agui_to_json(RunErrorEvent(message=message, code=code, timestamp=int(time.time() * 1000)))
