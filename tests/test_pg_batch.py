"""The PostgreSQL writer's batch (``host.postgres.batch``) on a real server: the rows of a large batch for one
table go in one statement, in the batch's order; a batch naming one Run twice still applies its writes one
after the other; a write whose delivery row moved under it fails the whole batch, and nothing of it stays; a
write of more than a MiB commits, in a batch and through the stores' one-item methods (the same write path)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import psycopg
import pytest
from ag_ui.core import RunErrorEvent, TextMessageContentEvent
from pg_server import fresh_url

from harness_agui.host.errors import ProjectorConflictError
from harness_agui.host.postgres import PostgresDeliveryLog, PostgresLeases, PostgresSourceJournal
from harness_agui.host.postgres._pg import STREAMS_CHANNEL, notify_key
from harness_agui.host.postgres.batch import _ARRAYS_FROM, _Backend
from harness_agui.host.postgres.delivery import CHILDREN
from harness_agui.host.postgres.journal import ITEMS
from harness_agui.host.postgres.journal import RUNS as HEADS
from harness_agui.host.writes import Head, Journaled, Recorded, StreamWrite
from harness_agui.testing import SourceBuilder
from harness_agui.wire.codec import encode

LINE = encode(SourceBuilder("t", "r").user("hi").items[0])


class Runs:
    """Writes of root Runs, each continuing after what the previous write of the same Run left."""

    def __init__(self) -> None:
        self.position: dict[str, int] = {}
        self.last_id: dict[str, int] = {}
        self.delivered: dict[str, tuple[int, int]] = {}

    def write(self, root: str, *, child: str | None = None, events: int = 2, stale: bool = False) -> StreamWrite:
        journal_last = self.position.get(root)
        first = -1 if journal_last is None else journal_last
        runs = [root] if child is None else [root, child]
        items = tuple(Journaled(first + 1 + k, run, (first + 1 + k) // len(runs), f"thread-{root}", False, LINE)
                      for k, run in enumerate(runs))
        last = items[-1].position
        last_id = self.last_id.get(root, 0)
        recorded = tuple(Recorded(last_id + 1 + k, last, "TEXT_MESSAGE_CONTENT", f'{{"n":{last_id + 1 + k}}}')
                         for k in range(events))
        heads = tuple(Head(i.run_id, i.thread_id, i.sequence, False, last) for i in items)
        children = () if child is None else (Head(child, f"thread-{root}", items[-1].sequence, False),)
        delivered = (-1, 0) if stale else self.delivered.get(root)  # stale: what the row held before any write
        write = StreamWrite(root_run_id=root, thread_id=f"thread-{root}", journal_last=journal_last, items=items,
                            heads=heads, records=True, delivered=delivered, events=recorded, cursor=last,
                            last_event_id=last_id + events, finished=False, root_last_sequence=items[0].sequence,
                            children=children, lease=None)
        if not stale:
            self.position[root] = last
            self.last_id[root] = last_id + events
            self.delivered[root] = (last, last_id + events)
        return write


@pytest.fixture
def database() -> Iterator[tuple[str, PostgresSourceJournal, PostgresDeliveryLog, psycopg.Connection[Any]]]:
    url = fresh_url("batch")
    journal, deliveries = PostgresSourceJournal(url), PostgresDeliveryLog(url)
    session = _Backend(url).connect()
    try:
        yield url, journal, deliveries, session
    finally:
        session.close()
        journal.close()
        deliveries.close()


def head_row(session: psycopg.Connection[Any], run_id: str) -> tuple[Any, ...]:
    row = session.execute(f"SELECT root_run_id, last_sequence, last_position FROM {HEADS} WHERE run_id = %s",
                          (run_id,)).fetchone()
    assert row is not None
    return tuple(row)


def child_rows(session: psycopg.Connection[Any]) -> dict[str, tuple[Any, ...]]:
    rows = session.execute(f"SELECT run_id, root_run_id, last_sequence FROM {CHILDREN}").fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}


# Enough Runs for a batch's rows to go in one statement per table (``_ARRAYS_FROM``), in an order that is not
# the ids' own.
ROOTS = [f"run-{k:02}" for k in range(20)][::-1]


def test_a_batch_of_many_runs_stores_every_row_in_the_batch_order(database: Any) -> None:
    url, journal, deliveries, session = database
    backend, runs = _Backend(url), Runs()
    assert len(ROOTS) >= _ARRAYS_FROM
    backend.commit(session, [runs.write(r, child="child-a" if r == "run-07" else None) for r in ROOTS],
                   verify=False)
    assert journal.runs() == tuple(ROOTS)  # the journal's order is the batch's, not the ids'
    backend.commit(session, [runs.write(r, child="child-a" if r == "run-07" else None, events=3) for r in ROOTS],
                   verify=False)
    for root in ROOTS:
        assert [d.event_id for d in deliveries.replay(root)] == [1, 2, 3, 4, 5]
        assert deliveries.last_event_id(root) == 5 and deliveries.cursor(root) == runs.position[root]
        assert journal.cursor(root) == runs.position[root]  # the stream's last position
        assert head_row(session, root) == (root, 1, runs.position[root])
    assert head_row(session, "child-a") == ("run-07", 1, 3)
    assert child_rows(session) == {"child-a": ("run-07", 1)}


def test_a_batch_naming_one_run_twice_applies_both_writes_in_order(database: Any) -> None:
    url, journal, deliveries, session = database
    backend, runs = _Backend(url), Runs()
    backend.commit(session, [runs.write(r, child="child-a" if r == "run-07" else None) for r in ROOTS], verify=False)
    twice = [runs.write(r, child="child-a" if r == "run-07" else None) for r in ROOTS]
    twice.append(runs.write("run-07", child="child-a"))
    backend.commit(session, twice, verify=False)
    assert [d.event_id for d in deliveries.replay("run-07")] == [1, 2, 3, 4, 5, 6]
    assert deliveries.cursor("run-07") == runs.position["run-07"] == 5
    assert journal.cursor("run-07") == 5
    assert head_row(session, "run-07") == ("run-07", 2, 5) and head_row(session, "child-a") == ("run-07", 2, 5)
    assert child_rows(session) == {"child-a": ("run-07", 2)}
    assert {deliveries.last_event_id(r) for r in ROOTS if r != "run-07"} == {4}


def test_a_write_whose_delivery_row_moved_fails_the_batch_and_leaves_nothing_of_it(database: Any) -> None:
    url, journal, deliveries, session = database
    backend, runs = _Backend(url), Runs()
    backend.commit(session, [runs.write(r) for r in ROOTS], verify=False)
    moved = [runs.write(r, stale=r == "run-11") for r in ROOTS]
    with pytest.raises(ProjectorConflictError, match="another projector recorded events"):
        backend.commit(session, moved, verify=False)
    for root in ROOTS:
        assert deliveries.last_event_id(root) == 2 and journal.cursor(root) == 0 and len(deliveries.replay(root)) == 2


# What a text-format array would have to quote or escape: quotes, backslashes, braces, commas, blanks, the
# word NULL, text that is not ASCII.
AWKWARD = ['say "hi"', "back\\slash", "{a,b}", "NULL", " ", "", "naïve ☃ 🎈", 'x\\"y}{', "\t\n"]


def test_a_batch_in_one_statement_per_table_stores_every_line_and_event_as_written(database: Any) -> None:
    url, journal, deliveries, session = database
    backend, runs = _Backend(url), Runs()
    assert len(ROOTS) >= _ARRAYS_FROM
    writes, lines = [], {}
    for k, root in enumerate(ROOTS):
        text = AWKWARD[k % len(AWKWARD)] + f" {k}"
        item = SourceBuilder(f"thread-{root}", root).user(text).items[0]
        lines[root] = encode(item)
        write = runs.write(root)
        recorded = tuple(Recorded(e.event_id, e.position, e.type, json.dumps({"delta": text, "n": e.event_id},
                                                                            ensure_ascii=False))
                         for e in write.events)
        writes.append(attrs.evolve(write, items=(attrs.evolve(write.items[0], line=lines[root]),), events=recorded))
    backend.commit(session, writes, verify=False)
    stored = dict(session.execute(f"SELECT run_id, line FROM {ITEMS}").fetchall())
    assert stored == lines
    for root, write in zip(ROOTS, writes, strict=True):
        assert [(d.event_id, d.data) for d in deliveries.replay(root)] == [(e.event_id, e.data) for e in write.events]


def test_a_new_stream_wakes_the_workers_only_when_its_driver_holds_no_lease(database: Any) -> None:
    # A leased Run is its driver's until the lease ends, which the workers' periodic scan finds: no wake-up.
    url, journal, deliveries, session = database
    backend, runs = _Backend(url), Runs()
    with PostgresLeases(url, ttl=30) as leases, psycopg.connect(url, autocommit=True) as listener:
        listener.execute(f"LISTEN {STREAMS_CHANNEL}")
        lease = leases.acquire("run-leased")
        assert lease is not None
        backend.commit(session, [attrs.evolve(runs.write("run-leased"), lease=lease), runs.write("run-free")],
                       verify=False)
        assert [n.payload for n in listener.notifies(timeout=1.0)] == [notify_key("run-free")]
        backend.commit(session, [runs.write("run-free")], verify=False)  # not a new stream
        assert list(listener.notifies(timeout=0.5)) == []
    assert journal.runs() == ("run-leased", "run-free")


# More than the socket takes at once: psycopg's ``Pipeline.sync()`` left such a statement half sent and waited
# for its results for ever (``host.postgres.writes``).
LARGE = 2**20 + 4096


def finishes(call: Callable[[], Any], seconds: float = 30.0) -> Any:
    """``call()``'s result, or a failed test instead of a hang when it takes longer than ``seconds``."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as e:
            outcome.append((False, e))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still writing after {seconds} s: the write hangs"
    done, value = outcome[0]
    if not done:
        raise value
    return value


def test_a_batch_larger_than_a_mebibyte_commits_instead_of_hanging(database: Any) -> None:
    url, journal, deliveries, session = database
    backend, runs = _Backend(url), Runs()
    line = json.dumps({"text": "x" * 4 * LARGE})
    one = runs.write("run-large", events=1)
    one = attrs.evolve(one, items=(attrs.evolve(one.items[0], line=line),),
                       events=(attrs.evolve(one.events[0], data=json.dumps({"delta": "y" * LARGE})),))
    many = [attrs.evolve(w, events=tuple(attrs.evolve(e, data=json.dumps({"delta": "z" * (LARGE // 4)}))
                                         for e in w.events))
            for w in (runs.write(f"run-{k}", events=3) for k in range(3))]
    finishes(lambda: backend.commit(session, [one], verify=False))
    finishes(lambda: backend.commit(session, many, verify=False))
    finishes(lambda: backend.commit(session, [runs.write("run-large")], verify=True))  # a small one after
    stored = session.execute(f"SELECT line FROM {ITEMS} WHERE root_run_id = 'run-large' AND position = 0").fetchone()
    assert stored == (line,)
    assert [len(d.data) for d in deliveries.replay("run-large")][0] == len(one.events[0].data)
    assert deliveries.last_event_id("run-large") == 3 and journal.cursor("run-large") == 1
    assert all(deliveries.last_event_id(f"run-{k}") == 3 for k in range(3))


def test_an_item_and_events_larger_than_a_mebibyte_are_appended_and_recorded_one_by_one(database: Any) -> None:
    url, journal, deliveries, session = database
    builder = SourceBuilder("thread-large", "run-large").user("x" * LARGE)
    item = builder.items[0]
    assert finishes(lambda: journal.append(item)) is True
    assert finishes(lambda: journal.append(item)) is False  # the same item again: found, not written
    event = TextMessageContentEvent(message_id="m", delta="y" * LARGE)
    (delivery,) = finishes(lambda: deliveries.record(item, [event], expected_cursor=None))
    failure = finishes(lambda: deliveries.fail("run-large", RunErrorEvent(message="z" * LARGE), expected_cursor=0))
    assert journal.cursor("run-large") == 0 and deliveries.cursor("run-large") == 0
    assert [d.data for d in deliveries.replay("run-large")] == [delivery.data, failure.data]
    assert len(delivery.data) > LARGE and deliveries.finished("run-large")
