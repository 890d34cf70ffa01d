# The order of a Run's history: ``core.history.advance`` and the one policy
# every reader shares (a Run's items numbered contiguously from 0, one Thread,
# nothing after the terminal result).
#
# First the transition itself: every accepted transition, every error with
# its attributes, the precedence between faults, and that a refused item
# changes nothing. Then the agreement of every reader: the observer, the JSONL
# ``Journal`` reader, ``check_prefix`` and the SQLite journal accept exactly
# the same generated histories, and refuse the same damaged ones and the same
# order faults of ``invalid_cases()`` with the same error class.

from __future__ import annotations

import asyncio
import io
import pickle
import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_agui import (
    INITIAL_STATE,
    AfterTerminalError,
    AguiObservationError,
    DecodeError,
    ForeignRunError,
    HarnessAguiError,
    HarnessAguiObserver,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    HistoryError,
    IncompletePrefixError,
    SequenceGapError,
    SequenceOrderError,
)
from harness_agui.core.history import INITIAL_CURSOR, HistoryCursor, advance
from harness_agui.host import (
    DeliveryError,
    JournalConflictError,
    SqliteDeliveryLog,
    SqliteSourceJournal,
    StorageError,
    check_prefix,
)
from harness_agui.source import ObservationEvent, RunResult
from harness_agui.testing import DEMO_START, ORDER_FAULTS, complete_histories, invalid_cases, live_histories
from harness_agui.wire.codec import encode
from harness_agui.wire.jsonl import Journal

THREAD, RUN = "thread-1", "run-1"


def obs(seq: int, *, thread: str = THREAD, run: str = RUN) -> HarnessEvent:
    return HarnessEvent(thread_id=thread, run_id=run, sequence=seq, occurred_at=DEMO_START + timedelta(seconds=seq),
                        event=ObservationEvent(name="n", value=seq))


def res(seq: int, *, thread: str = THREAD, run: str = RUN) -> HarnessRunResultEvent:
    return HarnessRunResultEvent(thread_id=thread, run_id=run, sequence=seq,
                                 occurred_at=DEMO_START + timedelta(seconds=seq), result=RunResult(status="cancelled"))


def fold(items: list[HarnessStreamEvent], cursor: HistoryCursor = INITIAL_CURSOR) -> HistoryCursor:
    for item in items:
        cursor = advance(cursor, item)
    return cursor


def refused(cursor: HistoryCursor, item: HarnessStreamEvent, error: type[HistoryError]) -> HistoryError:
    """``advance`` raises exactly ``error`` and leaves ``cursor`` as it was."""
    before = cursor._asdict()
    with pytest.raises(HistoryError) as raised:
        advance(cursor, item)
    assert type(raised.value) is error, repr(raised.value)
    assert cursor._asdict() == before
    return raised.value


# -- the transition ------------------------------------------------------------------------

def test_a_fresh_cursor_binds_the_run_and_thread_of_a_first_item_at_sequence_0() -> None:
    cursor = advance(INITIAL_CURSOR, obs(0))
    assert cursor == HistoryCursor(RUN, THREAD, 1, False)
    assert cursor.started and cursor.last_sequence == 0
    assert INITIAL_CURSOR == HistoryCursor() and not INITIAL_CURSOR.started and INITIAL_CURSOR.last_sequence is None


def test_each_next_item_moves_the_cursor_one_sequence_on_in_a_new_value() -> None:
    one = advance(INITIAL_CURSOR, obs(0))
    two = advance(one, obs(1))
    assert (one.next_sequence, two.next_sequence) == (1, 2)
    assert two is not one and two == HistoryCursor(RUN, THREAD, 2, False)


def test_the_terminal_item_finishes_the_cursor() -> None:
    cursor = fold([obs(0), obs(1), res(2)])
    assert cursor == HistoryCursor(RUN, THREAD, 3, True) and cursor.last_sequence == 2


def test_a_terminal_item_may_be_the_runs_only_item() -> None:
    assert advance(INITIAL_CURSOR, res(0)) == HistoryCursor(RUN, THREAD, 1, True)


def test_a_cursor_told_the_run_binds_only_the_thread_from_the_first_item() -> None:
    cursor = advance(HistoryCursor(RUN), obs(0, thread="thread-9"))
    assert (cursor.run_id, cursor.thread_id) == (RUN, "thread-9")


def test_a_cursor_told_another_first_sequence_takes_the_first_item_there() -> None:
    cursor = advance(HistoryCursor(RUN, next_sequence=5), obs(5))
    assert cursor.next_sequence == 6
    error = refused(HistoryCursor(RUN, next_sequence=5), obs(0), SequenceOrderError)
    assert error.expected == 5


def test_a_first_item_after_0_is_a_gap() -> None:
    error = refused(INITIAL_CURSOR, obs(3), SequenceGapError)
    assert (error.run_id, error.sequence, error.expected, error.reason) == (RUN, 3, 0, "sequence 0 to 2 missing")


def test_a_skipped_sequence_is_a_gap_naming_what_is_missing() -> None:
    cursor = fold([obs(0), obs(1)])
    error = refused(cursor, obs(3), SequenceGapError)
    assert (error.run_id, error.sequence, error.expected, error.reason) == (RUN, 3, 2, "sequence 2 missing")
    assert refused(cursor, res(9), SequenceGapError).reason == "sequence 2 to 8 missing"


def test_a_repeated_sequence_is_an_order_error() -> None:
    cursor = fold([obs(0), obs(1)])
    error = refused(cursor, obs(1), SequenceOrderError)
    assert (error.run_id, error.sequence, error.expected, error.reason) == (RUN, 1, 2, "sequence repeated: 2 was due")


def test_a_step_back_is_an_order_error() -> None:
    cursor = fold([obs(0), obs(1), obs(2)])
    error = refused(cursor, res(0), SequenceOrderError)
    assert (error.sequence, error.expected, error.reason) == (0, 3, "sequence went back: 3 was due")


def test_an_item_after_the_terminal_result_is_refused_even_at_the_next_sequence() -> None:
    cursor = fold([obs(0), res(1)])
    error = refused(cursor, obs(2), AfterTerminalError)
    assert (error.run_id, error.sequence, error.terminal_sequence) == (RUN, 2, 1)
    refused(cursor, res(2), AfterTerminalError)


def test_an_item_of_another_run_is_foreign() -> None:
    cursor = fold([obs(0)])
    error = refused(cursor, obs(1, run="run-2"), ForeignRunError)
    assert (error.run_id, error.sequence, error.thread_id, error.found_run_id, error.found_thread_id) == \
        (RUN, 1, THREAD, "run-2", THREAD)
    error = refused(HistoryCursor(RUN), obs(0, run="run-2"), ForeignRunError)
    assert (error.run_id, error.found_run_id, error.thread_id) == (RUN, "run-2", None)


def test_an_item_of_another_thread_is_foreign() -> None:
    error = refused(fold([obs(0)]), obs(1, thread="thread-2"), ForeignRunError)
    assert (error.run_id, error.thread_id, error.found_thread_id) == (RUN, THREAD, "thread-2")


def test_faults_are_reported_foreign_first_then_after_terminal_then_order_then_gap() -> None:
    ended = fold([obs(0), res(1)])
    refused(ended, obs(0, run="run-2"), ForeignRunError)
    refused(ended, obs(0, thread="thread-2"), ForeignRunError)
    refused(ended, obs(0), AfterTerminalError)
    refused(ended, obs(9), AfterTerminalError)
    live = fold([obs(0), obs(1)])
    refused(live, obs(0, run="run-2"), ForeignRunError)
    refused(live, obs(9, thread="thread-2"), ForeignRunError)


def test_a_refused_item_leaves_an_observer_exactly_as_it_was() -> None:
    observer = HarnessAguiObserver()
    for item in (obs(0), obs(1)):
        observer.observe(item)
    state, snapshot = observer.state, observer.snapshot()
    for bad in (obs(1), obs(3), obs(2, run="run-2"), obs(2, thread="thread-2")):
        with pytest.raises(HistoryError):
            observer.observe(bad)
        assert observer.state is state and observer.snapshot() == snapshot
    assert observer.state.history == HistoryCursor(RUN, THREAD, 2, False)


def test_the_state_reads_its_correlation_and_progress_through_the_cursor() -> None:
    observer = HarnessAguiObserver()
    assert (INITIAL_STATE.thread_id, INITIAL_STATE.run_id, INITIAL_STATE.last_sequence, INITIAL_STATE.finished) == \
        (None, None, -1, False)
    for item in (obs(0), obs(1), res(2)):
        observer.observe(item)
    state = observer.state
    assert (state.thread_id, state.run_id, state.last_sequence, state.finished) == (THREAD, RUN, 2, True)
    assert state.history == HistoryCursor(RUN, THREAD, 3, True)


def test_a_cursor_is_frozen() -> None:
    with pytest.raises(AttributeError):
        INITIAL_CURSOR.next_sequence = 3  # type: ignore[misc]


def test_the_cursor_advance_builds_is_the_one_its_constructor_builds() -> None:
    # advance() builds a new cursor with tuple.__new__, not the NamedTuple's own
    # __new__: the same type, the same fields in the same order.
    built = fold([obs(0), res(1)])
    assert type(built) is HistoryCursor and built._asdict() == HistoryCursor(RUN, THREAD, 2, True)._asdict()
    assert pickle.loads(pickle.dumps(built)) == built and hash(built) == hash(HistoryCursor(RUN, THREAD, 2, True))
    assert built.finished is True and fold([obs(0), obs(1)]).finished is False


# A plain model of the policy, to sweep (cursor, item) pairs against.
def model(cursor: HistoryCursor, item: HarnessStreamEvent) -> HistoryCursor | type[HistoryError]:
    if cursor.run_id is not None and item.run_id != cursor.run_id:
        return ForeignRunError
    if cursor.thread_id is not None and item.thread_id != cursor.thread_id:
        return ForeignRunError
    if cursor.finished:
        return AfterTerminalError
    if item.sequence != cursor.next_sequence:
        return SequenceOrderError if item.sequence < cursor.next_sequence else SequenceGapError
    return HistoryCursor(item.run_id, item.thread_id, item.sequence + 1, isinstance(item, HarnessRunResultEvent))


_IDS = st.sampled_from(["a", "b"])
_CURSORS = st.one_of(
    st.just(INITIAL_CURSOR),
    st.builds(HistoryCursor, st.none() | _IDS, st.none(), st.integers(0, 4), st.just(False)),
    st.builds(HistoryCursor, _IDS, _IDS, st.integers(1, 4), st.booleans()),
)
_ITEMS = st.builds(lambda terminal, seq, run, thread: (res if terminal else obs)(seq, run=run, thread=thread),
                   st.booleans(), st.integers(0, 6), _IDS, _IDS)


@given(cursor=_CURSORS, item=_ITEMS)
def test_every_cursor_and_item_either_move_on_as_the_model_says_or_raise_its_error(cursor, item) -> None:
    expected = model(cursor, item)
    if isinstance(expected, HistoryCursor):
        assert advance(cursor, item) == expected
    else:
        error = refused(cursor, item, expected)
        assert error.sequence == item.sequence
        assert isinstance(error, AguiObservationError)


# -- the error tree ------------------------------------------------------------------------

def test_every_history_error_is_an_observation_error_and_every_library_error_has_one_root() -> None:
    for cls in (ForeignRunError, SequenceOrderError, SequenceGapError, AfterTerminalError, IncompletePrefixError):
        assert issubclass(cls, HistoryError) and issubclass(cls, AguiObservationError)
        assert issubclass(cls, HarnessAguiError)
    assert issubclass(DecodeError, HarnessAguiError) and issubclass(DecodeError, ValueError)
    assert issubclass(StorageError, HarnessAguiError) and issubclass(StorageError, ValueError)
    assert issubclass(DeliveryError, HarnessAguiError) and issubclass(DeliveryError, ValueError)
    assert not issubclass(DeliveryError, StorageError)  # a refused request is not a failing store
    assert issubclass(JournalConflictError, SequenceOrderError) and not issubclass(JournalConflictError, StorageError)


def test_a_history_error_located_at_a_file_line_keeps_its_class_and_attributes() -> None:
    error = refused(fold([obs(0)]), obs(4), SequenceGapError)
    located = error.at(7, "run.jsonl", note="a hint")
    assert type(located) is SequenceGapError and located is not error
    assert (located.run_id, located.sequence, located.expected, located.line, located.source) == \
        (RUN, 4, 1, 7, "run.jsonl")
    assert str(located) == "run.jsonl:7: run 'run-1', sequence 4: sequence 1 to 3 missing (a hint)"
    assert (error.line, error.source, str(error)) == (None, None, "run 'run-1', sequence 4: sequence 1 to 3 missing")


def test_a_history_error_pickles_whole() -> None:
    error = refused(fold([obs(0)]), obs(1, thread="thread-2"), ForeignRunError).at(2, "f.jsonl")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ForeignRunError and str(copy) == str(error) and vars(copy) == vars(error)


# -- every reader, the same verdict ------------------------------------------------------------

Verdict = type[HistoryError] | None
_CLASSES = (ForeignRunError, SequenceOrderError, SequenceGapError, AfterTerminalError, IncompletePrefixError)


def verdict(read: Callable[[], object]) -> Verdict:
    """None if ``read`` accepted the history, else the history error class it
    raised (a subclass, such as the SQLite journal's JournalConflictError,
    counts as the class it extends)."""
    try:
        read()
    except HistoryError as e:
        return next(cls for cls in _CLASSES if isinstance(e, cls))
    return None


def by_observer(items: list[HarnessStreamEvent]) -> None:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)


def by_journal_file(items: list[HarnessStreamEvent]) -> None:
    data = io.BytesIO("".join(encode(item) + "\n" for item in items).encode())
    assert list(Journal(data)) == items


async def _read(iterator: Any) -> list[HarnessStreamEvent]:
    return [item async for item in iterator]


def by_check_prefix(items: list[HarnessStreamEvent]) -> None:
    # The cursor a contiguous history of this length ends at: a Host asks for
    # the prefix it expects to hold, so a hole anywhere shows.
    through = len(items) - 1 if items else None
    run_id = items[0].run_id if items else RUN
    assert asyncio.run(_read(check_prefix(items, run_id=run_id, through=through))) == items


def by_sqlite_journal(items: list[HarnessStreamEvent]) -> None:
    with tempfile.TemporaryDirectory() as folder, \
            SqliteSourceJournal(Path(folder) / "host.db", synchronous="OFF") as journal:
        for item in items:
            journal.append(item)
        if items:
            through = len(items) - 1
            assert asyncio.run(_read(journal.read_prefix(items[0].run_id, through=through))) == items


def by_sqlite_delivery_log(items: list[HarnessStreamEvent]) -> None:
    with tempfile.TemporaryDirectory() as folder, \
            SqliteDeliveryLog(Path(folder) / "host.db", synchronous="OFF") as log:
        for item in items:
            log.record(item, ())


READERS = {"observer": by_observer, "Journal": by_journal_file, "check_prefix": by_check_prefix,
           "SqliteSourceJournal": by_sqlite_journal, "SqliteDeliveryLog": by_sqlite_delivery_log}


def verdicts(items: list[HarnessStreamEvent]) -> dict[str, Verdict]:
    return {name: verdict(lambda read=read: read(items)) for name, read in READERS.items()}


@pytest.mark.parametrize("strategy", [complete_histories, live_histories], ids=["complete", "live"])
@settings(max_examples=150)  # 300 histories in all
@given(data=st.data())
def test_every_reader_accepts_every_generated_history(strategy, data) -> None:
    items = data.draw(strategy(), label="history")
    assert [i.sequence for i in items] == list(range(len(items)))
    assert verdicts(items) == dict.fromkeys(READERS)


DAMAGES = ("drop", "repeat", "swap", "shift", "thread", "after_terminal")


def damaged(data: Any, items: list[HarnessStreamEvent], damage: str) -> list[HarnessStreamEvent]:
    out = list(items)
    i = data.draw(st.integers(0, len(items) - 1), label="at")
    if damage == "drop":
        del out[i]
    elif damage == "repeat":  # sent again, not identical (identical redelivery is the SQLite journal's no-op)
        out.insert(i + 1, attrs.evolve(out[i], occurred_at=out[i].occurred_at + timedelta(microseconds=1)))
    elif damage == "swap" and i + 1 < len(out):
        out[i], out[i + 1] = out[i + 1], out[i]
    elif damage == "shift":
        k = data.draw(st.integers(1, 10), label="by")
        out = [attrs.evolve(item, sequence=item.sequence + k) for item in out]
    elif damage == "thread":
        out[i] = attrs.evolve(out[i], thread_id=out[i].thread_id + "-other")
    elif damage == "after_terminal" and isinstance(out[-1], HarnessRunResultEvent):
        last = out[-1]
        out.append(HarnessEvent(thread_id=last.thread_id, run_id=last.run_id, sequence=last.sequence + 1,
                                occurred_at=last.occurred_at, event=ObservationEvent(name="late")))
    return out


@settings(max_examples=150)
@given(data=st.data(), damage=st.sampled_from(DAMAGES))
def test_every_reader_refuses_a_damaged_history_with_the_same_error_class(data, damage) -> None:
    items = data.draw(st.one_of(complete_histories(large_payloads=False), live_histories(large_payloads=False))
                      .filter(bool), label="history")
    broken = damaged(data, items, damage)
    found = verdicts(broken)
    assert len(set(found.values())) == 1, found


ORDER = sorted(ORDER_FAULTS)


@pytest.mark.parametrize("fault", ORDER)
@settings(max_examples=20)
@given(data=st.data())
def test_every_reader_refuses_an_order_fault_with_the_same_error_class(fault, data) -> None:
    case = data.draw(invalid_cases(faults=(fault,)), label="case")
    items = [*case.history, case.item]
    assert case.error is ORDER_FAULTS[fault]
    for name, read in READERS.items():
        if name in ("SqliteSourceJournal", "SqliteDeliveryLog") and fault == "run_changed":
            continue  # below: the SQLite stores keep Runs apart
        with pytest.raises(HistoryError) as raised:
            read(items)
        assert isinstance(raised.value, case.error), f"{name}: {raised.value!r}"
        if name != "SqliteSourceJournal":  # its repeat is a JournalConflictError, a SequenceOrderError
            assert type(raised.value) is case.error, f"{name}: {raised.value!r}"


@settings(max_examples=20)
@given(data=st.data())
def test_the_sqlite_stores_file_an_item_of_another_run_under_that_run_where_it_is_a_late_start(data) -> None:
    # One journal holds many Runs, so an item of another Run is not a fault of
    # this Run's history there: it is the first item of the other Run, and
    # one that does not carry 0. The Run read back is untouched.
    case = data.draw(invalid_cases(faults=("run_changed",)), label="case")
    history = list(case.history)
    with tempfile.TemporaryDirectory() as folder, \
            SqliteSourceJournal(Path(folder) / "host.db", synchronous="OFF") as journal:
        for item in history:
            journal.append(item)
        with pytest.raises(SequenceGapError) as raised:
            journal.append(case.item)
        assert (raised.value.run_id, raised.value.expected) == (case.item.run_id, 0)
        prefix = journal.read_prefix(history[0].run_id, through=len(history) - 1)
        assert asyncio.run(_read(prefix)) == history
    with tempfile.TemporaryDirectory() as folder, \
            SqliteDeliveryLog(Path(folder) / "host.db", synchronous="OFF") as log:
        for item in history:
            log.record(item, ())
        with pytest.raises(SequenceGapError) as raised:
            log.record(case.item, ())
        assert (raised.value.run_id, raised.value.expected) == (case.item.run_id, 0)
        assert log.cursor(history[0].run_id) == len(history) - 1
