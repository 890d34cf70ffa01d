# What the inspector reads from a Host database, and the one index it keeps per Run.
#
# Everything here is read-only and goes through the stores' public methods: the journal's
# ``runs``, ``thread_of``, ``cursor``, ``finished``, ``tail`` and ``read_prefix``, the delivery
# log's ``last_event_id``, ``finished`` and ``page``, and the bindings' ``wire_of`` / ``source_of``.
#
# A Run's list row is cheap: counts from the stores' heads, its first and last items (one page of
# the journal each) and its last delivered event, which says how it ended; a row is kept until the
# Run moves. A step's own events need no index either: event ids grow with the positions of the
# items that produced them, so ``deliveries_of_item`` bisects the log a row at a time, and stepping
# works while a long Run's index is still being made.
#
# Everything that needs the whole Run is in its ``RunIndex``: one pass over its delivery log that
# folds the AG-UI conversation (``core.conversation``, the fold the debug views and the client's
# message list use), remembers the source position of each event, and keeps the conversation every
# ``CHECKPOINT_EVERY`` events. Conversations are immutable values that share structure, so the
# checkpoints cost little, and the conversation as it stood after item k is a checkpoint plus at
# most that many events folded again. The index of a Run still being written is extended from
# where it stopped, never rebuilt. It is made in a worker thread and kept by run id.

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs

from ..core.conversation import EMPTY_CONVERSATION, Conversation, Input, Message, Subagent, fold_event
from ..host.delivery import Delivery

CHECKPOINT_EVERY = 2000
"""Events between two kept conversations of a Run's index."""

PAGE = 5000
"""Deliveries read per page while an index is made."""


@attrs.frozen
class Status:
    """How a Run stands: ``kind`` is one of finished, suspended, cancelled, failed, lost, running,
    unrecorded (journaled to its end, events not all recorded); ``detail`` says more (the error, what
    a suspended Run waits for)."""

    kind: str
    detail: str = ""


@attrs.frozen
class RunRow:
    """One root Run as the Thread list shows it."""

    run_id: str
    thread_id: str
    wire_run_id: str | None
    wire_thread_id: str | None
    items: int
    events: int
    status: Status
    started_at: datetime | None
    ended_at: datetime | None


@attrs.frozen
class ThreadRow:
    """One Thread: its Runs, oldest first."""

    thread_id: str
    runs: tuple[RunRow, ...]

    @property
    def latest(self) -> datetime | None:
        times = [r.started_at for r in self.runs if r.started_at is not None]
        return max(times) if times else None


def status_of(last: Delivery | None, *, journal_finished: bool, delivered: bool) -> Status:
    """The Status a Run's last delivered event gives it."""
    if last is None or not delivered:
        return Status("unrecorded", "journaled to its end, events not all recorded") if journal_finished \
            else Status("running")
    data = json.loads(last.data)
    if last.event_type == "RUN_ERROR":
        code, message = data.get("code") or "", data.get("message") or ""
        if code == "harness_agui.cancelled":
            return Status("cancelled", message)
        if code == "harness_agui.harness_lost":
            return Status("lost", message)
        return Status("failed", f"{message} [{code}]" if code else message)
    outcome = data.get("outcome") if isinstance(data.get("outcome"), dict) else {}
    kind = outcome.get("type")
    if kind == "interrupt":
        waits = []
        for interrupt in outcome.get("interrupts") or ():
            reason = interrupt.get("reason") if isinstance(interrupt, dict) else None
            what = "an approval" if reason == "tool_approval" else "a client tool" if reason else "the host"
            message = interrupt.get("message") if isinstance(interrupt, dict) else None
            waits.append(f"on {what}" + (f" ({message})" if message else ""))
        return Status("suspended", "; ".join(waits))
    if kind == "cancelled":
        return Status("cancelled")
    return Status("finished")


class Database:
    """A Host database's stores, opened read-only by the caller; ``bindings`` may be None."""

    def __init__(self, journal: Any, deliveries: Any, bindings: Any = None) -> None:
        self.journal = journal
        self.deliveries = deliveries
        self.bindings = bindings
        self._indexes: dict[str, RunIndex] = {}
        self._rows: dict[str, tuple[tuple[Any, ...], RunRow]] = {}
        self._lock = threading.Lock()

    # -- the list ------------------------------------------------------------------------------

    def threads(self) -> list[ThreadRow]:
        """Every Thread, newest first (by its latest Run's first item)."""
        by_thread: dict[str, list[RunRow]] = {}
        for run_id in self.journal.runs():
            row = self.row(run_id)
            if row is not None:
                by_thread.setdefault(row.thread_id, []).append(row)
        threads = [ThreadRow(t, tuple(sorted(rows, key=started_order))) for t, rows in by_thread.items()]
        threads.sort(key=lambda t: (t.latest is not None, t.latest or datetime.min), reverse=True)
        return threads

    def row(self, run_id: str) -> RunRow | None:
        """The list row of a root Run; None for a Run the journal does not hold as a root. A row is
        made again only when the Run's journal or delivery log has moved since it was made."""
        cursor = self.journal.cursor(run_id)
        thread_id = self.journal.thread_of(run_id)
        if cursor is None or thread_id is None:
            return None
        events = self.deliveries.last_event_id(run_id)
        key = (cursor, events, self.journal.finished(run_id), self.deliveries.finished(run_id))
        kept = self._rows.get(run_id)
        if kept is not None and kept[0] == key:
            return kept[1]
        first, last_item = self.item(run_id, 0), self.item(run_id, cursor)
        last = self.deliveries.page(run_id, after=events - 1, limit=1).deliveries if events else ()
        status = status_of(last[0] if last else None, journal_finished=key[2], delivered=key[3])
        wire = None if self.bindings is None else self.bindings.wire_of(run_id)
        row = RunRow(run_id, thread_id, None if wire is None else wire.wire_run_id,
                     None if wire is None else wire.wire_thread_id, cursor + 1, events, status,
                     None if first is None else first.occurred_at,
                     None if last_item is None or status.kind == "running" else last_item.occurred_at)
        self._rows[run_id] = (key, row)
        return row

    def deliveries_of_item(self, run_id: str, position: int) -> tuple[Delivery, ...]:
        """The recorded events source item ``position`` produced, in id order. Event ids grow with the
        positions of the items that produced them, so the first is found by bisecting the delivery log
        one row at a time, without the Run's index."""
        lo, hi = 1, self.deliveries.last_event_id(run_id) + 1
        while lo < hi:
            mid = (lo + hi) // 2
            (d,) = self.deliveries.page(run_id, after=mid - 1, limit=1).deliveries
            if d.source_position < position:
                lo = mid + 1
            else:
                hi = mid
        found: list[Delivery] = []
        after = lo - 1
        while True:
            page = self.deliveries.page(run_id, after=after, limit=64).deliveries
            found.extend(d for d in page if d.source_position == position)
            if len(page) < 64 or page[-1].source_position > position:
                return tuple(found)
            after = page[-1].event_id

    def source_run(self, given: str) -> str:
        """The Harness's run id of a Run named by its client's id or its own."""
        wire = None if self.bindings is None else self.bindings.source_of(given)
        return given if wire is None else str(wire.source_run_id)

    # -- one Run ---------------------------------------------------------------------------------

    def item(self, run_id: str, position: int) -> Any:
        """The source item at ``position`` of a root Run's stream (None beyond what is stored)."""
        import asyncio

        async def first() -> Any:
            tail = self.journal.tail(run_id, after=None if position == 0 else position - 1)
            try:
                async for item in tail:
                    return item
            finally:
                await tail.aclose()
            return None

        cursor = self.journal.cursor(run_id)
        if cursor is None or not 0 <= position <= cursor:
            return None
        return asyncio.run(first())

    def index(self, run_id: str) -> RunIndex:
        """The Run's index, made or brought up to date with what the delivery log holds now."""
        with self._lock:
            index = self._indexes.get(run_id)
            if index is None:
                index = self._indexes[run_id] = RunIndex(run_id)
        index.extend(self.deliveries)
        return index


def started_order(row: RunRow) -> tuple[bool, datetime]:
    """The sort key of Runs, oldest first, those not started yet first."""
    return (row.started_at is not None, row.started_at or datetime.min)


class RunIndex:
    """One pass over a Run's delivery log (see the module comment). ``extend`` is safe from several
    threads; every other method reads what the last ``extend`` left."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.events = 0
        self.conversation: Conversation = EMPTY_CONVERSATION
        self._checkpoints: list[Conversation] = [EMPTY_CONVERSATION]  # after 0, K, 2K, ... events
        self._positions: list[int] = []  # source position of each event, by event id - 1
        self._lock = threading.Lock()

    def extend(self, deliveries: Any) -> None:
        with self._lock:
            last = deliveries.last_event_id(self.run_id)
            while self.events < last:
                page = deliveries.page(self.run_id, after=self.events, limit=PAGE).deliveries
                if not page:
                    break
                conv = self.conversation
                for d in page:
                    conv = fold_event(conv, d.event)
                    self._positions.append(d.source_position)
                    self.events = d.event_id
                    if self.events % CHECKPOINT_EVERY == 0:
                        self._checkpoints.append(conv)
                self.conversation = conv

    def events_through(self, position: int) -> int:
        """How many events the items through ``position`` produced."""
        return bisect.bisect_right(self._positions, position)

    def conversation_after(self, events: int, deliveries: Any) -> Conversation:
        """The conversation after the first ``events`` events."""
        events = max(0, min(events, self.events))
        if events == self.events:
            return self.conversation
        k = events // CHECKPOINT_EVERY
        conv = self._checkpoints[k]
        done = k * CHECKPOINT_EVERY
        while done < events:
            page = deliveries.page(self.run_id, after=done, limit=min(PAGE, events - done)).deliveries
            if not page:
                break
            for d in page:
                conv = fold_event(conv, d.event)
            done = page[-1].event_id
        return conv

    def user_texts(self) -> list[str]:
        """The text of every user message and input of the Run (what the Thread list searches)."""
        texts = []
        for e in self.conversation.entries:
            if isinstance(e, Input) and e.text:
                texts.append(e.text)
            elif isinstance(e, Message) and e.kind == "text" and e.role == "user":
                texts.append(e.text)
        return texts

    def subagents(self) -> list[Subagent]:
        return [e for e in self.conversation.entries if isinstance(e, Subagent)]


def deliveries_of(deliveries: Any, run_id: str, ids: range) -> Sequence[Delivery]:
    """The deliveries with ``ids`` (consecutive), read from the log."""
    if not ids:
        return ()
    return tuple(deliveries.page(run_id, after=ids.start - 1, limit=len(ids)).deliveries)
