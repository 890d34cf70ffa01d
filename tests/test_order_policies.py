"""The order policies of core.history ("strict", "tap", "unchecked"), and the projection under each."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from hypothesis import given, settings

from harness_agui import HarnessAguiObserver
from harness_agui.core import vocabulary
from harness_agui.core.errors import (
    AfterTerminalError,
    ForeignRunError,
    HistoryError,
    SequenceGapError,
    SequenceOrderError,
)
from harness_agui.core.history import INITIAL_CURSOR, HistoryCursor, advance_tap, advance_unchecked
from harness_agui.core.notices import delegation_notice, is_run_started
from harness_agui.core.reduce import DEFAULT
from harness_agui.core.source import HarnessEvent, HarnessRunResultEvent, HarnessStreamEvent
from harness_agui.core.state import ProjectionOptions
from harness_agui.testing import SourceBuilder, complete_delegating_histories
from harness_agui.wire.agui import agui_to_json

T0 = datetime(2026, 1, 2, tzinfo=UTC)


def item(sequence: int, run_id: str = "run-1", thread_id: str = "thread-1") -> HarnessEvent:
    return attrs.evolve(SourceBuilder(thread_id, run_id).user("hi").items[0], sequence=sequence,
                        occurred_at=T0 + timedelta(seconds=sequence))


def terminal(sequence: int, run_id: str = "run-1") -> HarnessRunResultEvent:
    last = SourceBuilder("thread-1", run_id).completed("done").items[-1]
    assert isinstance(last, HarnessRunResultEvent)
    return attrs.evolve(last, sequence=sequence)


def walk(advance: Any, items: list[HarnessStreamEvent], cursor: HistoryCursor = INITIAL_CURSOR) -> HistoryCursor:
    for it in items:
        cursor = advance(cursor, it)
    return cursor


# -- the policies ------------------------------------------------------------------------------------

def test_the_tap_policy_binds_a_run_at_any_sequence_and_then_wants_increasing_ones() -> None:
    cursor = walk(advance_tap, [item(1), item(2), item(5)])
    assert cursor == HistoryCursor("run-1", "thread-1", 6, False)
    with pytest.raises(SequenceOrderError):
        advance_tap(cursor, item(5))
    with pytest.raises(SequenceOrderError):
        advance_tap(cursor, item(3))
    with pytest.raises(ForeignRunError):
        advance_tap(cursor, item(6, run_id="run-2"))
    with pytest.raises(ForeignRunError):
        advance_tap(cursor, item(6, thread_id="thread-2"))


def test_the_tap_policy_takes_the_terminal_result_at_any_sequence_and_nothing_after_it() -> None:
    cursor = walk(advance_tap, [item(1), item(2), item(29)])
    for sequence in (29, 3, 40):  # the public sequence: equal to the tap's last, lower, or higher
        ended = advance_tap(cursor, terminal(sequence))
        assert ended.finished
        with pytest.raises(AfterTerminalError):
            advance_tap(ended, item(50))


def test_the_unchecked_policy_checks_only_the_run_and_its_thread() -> None:
    cursor = walk(advance_unchecked, [item(0), item(0), item(7), item(3), terminal(3), item(1)])
    assert (cursor.run_id, cursor.thread_id, cursor.finished) == ("run-1", "thread-1", True)
    with pytest.raises(ForeignRunError):
        advance_unchecked(cursor, item(2, run_id="run-2"))
    with pytest.raises(ForeignRunError):
        advance_unchecked(cursor, item(2, thread_id="thread-2"))


# -- the projection ----------------------------------------------------------------------------------

def events_json(observer: HarnessAguiObserver, items: list[HarnessStreamEvent]) -> list[str]:
    return [agui_to_json(event) for it in items for event in observer.observe(it)]


@settings(max_examples=40)
@given(items=complete_delegating_histories())
def test_every_stream_the_strict_policy_accepts_projects_the_same_under_the_looser_ones(
        items: list[HarnessStreamEvent]) -> None:
    strict = events_json(HarnessAguiObserver(), items)
    assert events_json(HarnessAguiObserver(order="tap"), items) == strict
    assert events_json(HarnessAguiObserver(order="unchecked"), items) == strict


def tapped(items: list[HarnessStreamEvent], *, with_run_started: bool) -> list[HarnessStreamEvent]:
    """``items`` as a13n-harness's producer tap gives them, followed by the public terminal item: every Run
    numbered by its producer from 1, a child's announcement before its own run_started, the root's
    run_started missing or not, and the terminal item at the sequence of the tap's last root item."""
    root = items[0].run_id
    order: list[HarnessStreamEvent] = []
    held: dict[str, HarnessStreamEvent] = {}
    for it in items:
        if it.run_id != root and is_run_started(it):
            held[it.run_id] = it  # comes right after the announcement
            continue
        if it.run_id == root and is_run_started(it) and not with_run_started:
            continue
        order.append(it)
        notice = delegation_notice(it.event) if isinstance(it, HarnessEvent) else None
        if notice is not None and notice.action == "started" and it.run_id in held:
            order.append(held.pop(it.run_id))
    numbers: dict[str, int] = {}
    out: list[HarnessStreamEvent] = []
    for it in order:
        if isinstance(it, HarnessRunResultEvent):
            out.append(attrs.evolve(it, sequence=numbers.get(root, 0)))
            continue
        numbers[it.run_id] = numbers.get(it.run_id, 0) + 1
        out.append(attrs.evolve(it, sequence=numbers[it.run_id]))
    return out


@settings(max_examples=40)
@given(items=complete_delegating_histories())
def test_a_producer_tap_followed_by_the_terminal_item_projects_onto_a_valid_agui_run(
        items: list[HarnessStreamEvent]) -> None:
    for with_run_started in (False, True):
        tap = tapped(items, with_run_started=with_run_started)
        with pytest.raises(HistoryError):
            events_json(HarnessAguiObserver(), tap)
        events = [json.loads(text) for text in events_json(HarnessAguiObserver(order="tap"), tap)]
        report = validate_agui(events)
        assert [d for d in report.diagnostics if d.severity in ("error", "warning")] == []
        assert [e["type"] for e in events].count("RUN_STARTED") == 1
        assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")


def test_the_tap_refuses_an_item_after_the_terminal_result_and_a_repeated_number() -> None:
    items = SourceBuilder().user("go").request().text(0, ["a", "b"]).completed("ab").items
    tap = [attrs.evolve(it, sequence=it.sequence) for it in items[1:]]
    observer = HarnessAguiObserver(order="tap")
    for it in tap:
        observer.observe(it)
    with pytest.raises(AfterTerminalError):
        observer.observe(attrs.evolve(items[2], sequence=99))
    again = HarnessAguiObserver(order="tap")
    again.observe(tap[0])
    before = again.snapshot()
    with pytest.raises(SequenceOrderError):
        again.observe(tap[0])
    assert again.snapshot() == before


def test_the_strict_policy_still_names_the_missing_first_item_of_a_tap() -> None:
    items = SourceBuilder().user("go").completed("x").items
    with pytest.raises(SequenceGapError):
        HarnessAguiObserver().observe(attrs.evolve(items[0], sequence=1))


# -- options -------------------------------------------------------------------------------------------

def test_an_unknown_order_or_vocabulary_is_refused_where_the_options_are_made() -> None:
    with pytest.raises(ValueError):
        ProjectionOptions(order="loose")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="vocabulary must be one of"):
        ProjectionOptions(vocabulary="a13n-stream-protocol/0.20")
    with pytest.raises(ValueError):
        HarnessAguiObserver(order="sorted")  # type: ignore[arg-type]


def test_options_derive_the_order_function_and_the_vocabulary_and_keep_them_through_a_checkpoint() -> None:
    options = ProjectionOptions(order="tap")
    assert (options.plain, options.advance, options.rules) == (False, advance_tap, DEFAULT)
    assert ProjectionOptions().plain and ProjectionOptions().rules is DEFAULT
    items = SourceBuilder().user("go").request().text(0, ["a", "b"]).completed("ab").items
    tap = [attrs.evolve(it, sequence=it.sequence + 1) for it in items]
    observer = HarnessAguiObserver(order="tap")
    for it in tap[:3]:
        observer.observe(it)
    restored = HarnessAguiObserver.restore(observer.checkpoint())
    assert restored.options == observer.options and restored.options.advance is advance_tap
    assert [restored.observe(it) for it in tap[3:]] == [observer.observe(it) for it in tap[3:]]


def test_a_vocabulary_name_resolves_only_from_the_table_and_registers_once() -> None:
    assert vocabulary.resolve(vocabulary.DEFAULT_VOCABULARY) is DEFAULT
    assert vocabulary.known("a13n-stream-protocol/0.21") and not vocabulary.known("harness_agui.core.reduce")
    with pytest.raises(ValueError, match="unknown vocabulary"):
        vocabulary.resolve("harness_agui.core.reduce")
    with pytest.raises(ValueError, match="registered already"):
        vocabulary.register(DEFAULT)
    with pytest.raises(ValueError, match="not a vocabulary name"):
        vocabulary.register(attrs.evolve(DEFAULT, name="mine"))
