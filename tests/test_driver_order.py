"""The order of a served Run's items (``host.driver``): the projection checks each item's order once (the
reducer's ``core.history`` rule), the driver reads where the stream stands from the projection's state, and an
item the projection refuses is told apart by the stream's order: a Harness item out of order ends the Run with
``source_refused`` and is not journaled, a resend is compared with the journal, and an item in order that the
projection refuses is journaled and ends the Run with ``projection_failed``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver, HarnessStreamEvent
from harness_agui.core import reduce
from harness_agui.core.errors import HistoryError
from harness_agui.core.history import StreamCursor, advance_stream
from harness_agui.core.source import HarnessEvent, ObservationEvent
from harness_agui.host import SqliteDeliveryLog, SqliteSourceJournal
from harness_agui.host import plan as plan_module
from harness_agui.host.driver import DrivenRun, RunDriver
from harness_agui.host.options import SupervisorOptions
from harness_agui.host.stores import stores_of
from harness_agui.testing import RunWriter
from harness_agui.testing.delegation import delegating_histories

ROOT, CHILD = "run-root", "run-child"


def _writers() -> tuple[RunWriter, RunWriter]:
    root = RunWriter("thread-root", ROOT).run_started().request().user("go")
    root.tool_call(0, "delegate", "call-d", ['{"task": "x"}']).model_request_completed()
    child = RunWriter("thread-child", CHILD).run_started()
    child.delegation("started", child_run_id=CHILD, subagent="researcher", parent_run_id=ROOT,
                     parent_tool_call_id="call-d", status="running")
    child.request().text(0, ["found ", "it"]).model_request_completed()
    return root, child


def delegating_run() -> tuple[list[HarnessStreamEvent], list[HarnessStreamEvent], RunWriter]:
    """A root Run's stream with one child Run: the root's items up to the delegation, the child's, and the root's
    writer (to end the delegation and the Run)."""
    root, child = _writers()
    return list(root.items), list(child.items), root


def _end_delegation(root: RunWriter) -> RunWriter:
    return root.delegation("completed", child_run_id=CHILD, subagent="researcher", parent_run_id=ROOT,
                           parent_tool_call_id="call-d", status="completed")


def drive(tmp_path: Path, items: Sequence[HarnessStreamEvent]) -> tuple[DrivenRun, list[dict[str, Any]], int | None]:
    """Drive root Run ``items`` from a live Harness stream; the Run, its recorded events, the journal's last
    position."""
    database = tmp_path / "host.db"
    journal = SqliteSourceJournal(database, synchronous="NORMAL")
    deliveries = SqliteDeliveryLog(database, synchronous="NORMAL")

    async def source() -> AsyncIterator[HarnessStreamEvent]:
        for item in items:
            yield item

    async def main() -> DrivenRun:
        driver = RunDriver(stores_of(journal, deliveries), processor=None, options=SupervisorOptions())
        run = DrivenRun(ROOT, "thread-root", source=source())
        await driver.drive(run)
        await driver.close()
        return run

    try:
        run = asyncio.run(asyncio.wait_for(main(), 30))
        return run, [json.loads(d.data) for d in deliveries.replay(ROOT)], journal.cursor(ROOT)
    finally:
        journal.close()
        deliveries.close()


def _counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str, counts: dict[str, int]) -> None:
    original: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] = counts.get(name, 0) + 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


def test_a_served_item_has_its_order_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root_items, child_items, root = delegating_run()
    _end_delegation(root).completed("done")
    items = root_items + child_items + root.items[len(root_items):]
    counts: dict[str, int] = {}
    _counting(monkeypatch, reduce, "advance_history", counts)  # the root's items, in the reducer
    _counting(monkeypatch, reduce, "advance_in_stream", counts)  # a child's items, in the reducer
    _counting(monkeypatch, plan_module, "advance_stream", counts)  # the stream cursor, in the driver's plan
    run, events, last = drive(tmp_path, items)
    assert run.ended and not run.failed and events[-1]["type"] == "RUN_FINISHED"
    assert last == len(items) - 1
    assert counts["advance_history"] + counts["advance_in_stream"] == len(items)
    # The driver checks one item itself: the stream's first, which binds the root Run (the projection would
    # bind whatever came first; only the driver knows which Run the stream is).
    assert counts.get("advance_stream", 0) == 1


def test_an_item_out_of_the_streams_order_ends_the_run_with_source_refused_and_is_not_journaled(
        tmp_path: Path) -> None:
    root_items, child_items, _ = delegating_run()
    skipped = attrs.evolve(child_items[4], sequence=child_items[4].sequence + 1)  # the child's sequence 4 missing
    run, events, last = drive(tmp_path, root_items + child_items[:4] + [skipped])
    assert run.ended and run.failed
    assert (events[-1]["type"], events[-1]["code"]) == ("RUN_ERROR", "harness_agui.source_refused")
    assert "is out of order: SequenceGapError" in events[-1]["message"]
    assert last == len(root_items) + 4 - 1


def test_a_first_item_of_another_run_ends_the_run_with_source_refused(tmp_path: Path) -> None:
    _, child_items, _ = delegating_run()
    run, events, last = drive(tmp_path, child_items)
    assert (events[-1]["type"], events[-1]["code"]) == ("RUN_ERROR", "harness_agui.source_refused")
    assert "ForeignRunError" in events[-1]["message"] and len(events) == 1
    assert last is None


def test_an_item_in_order_that_the_projection_refuses_is_journaled_and_ends_the_run_with_projection_failed(
        tmp_path: Path) -> None:
    root_items, child_items, root = delegating_run()
    _end_delegation(root)
    ended = root.items[len(root_items):]
    late = RunWriter("thread-child", CHILD, first_sequence=len(child_items)).observation("late", 1).items[0]
    run, events, last = drive(tmp_path, root_items + child_items + ended + [late])
    assert (events[-1]["type"], events[-1]["code"]) == ("RUN_ERROR", "harness_agui.projection_failed")
    assert "FinishedSubagentError" in events[-1]["message"]
    assert last == len(root_items) + len(child_items) + len(ended)  # the refused item is journaled


def test_a_harness_that_resends_an_item_it_sent_goes_on(tmp_path: Path) -> None:
    root_items, child_items, root = delegating_run()
    _end_delegation(root).completed("done")
    rest = root.items[len(root_items):]
    items = root_items + child_items[:3] + [child_items[1], root_items[2]] + child_items[3:] + rest
    run, events, last = drive(tmp_path, items)
    assert run.ended and not run.failed and events[-1]["type"] == "RUN_FINISHED"
    assert last == len(root_items) + len(child_items) + len(rest) - 1


# -- what the driver relies on: the projection never takes an item the stream's order refuses --------

DAMAGES = ("none", "drop", "repeat", "swap", "move", "thread", "run", "sequence", "late")


def damaged(data: st.DataObject, items: list[HarnessStreamEvent], damage: str) -> list[HarnessStreamEvent]:
    out = list(items)
    i, j = (data.draw(st.integers(0, len(out) - 1), label=name) for name in ("i", "j"))
    runs = sorted({item.run_id for item in out}) + ["run-stranger"]
    if damage == "drop" and len(out) > 1:
        del out[i]
    elif damage == "repeat":  # sent again later, not identical
        out.insert(j, attrs.evolve(out[i], occurred_at=out[i].occurred_at + timedelta(microseconds=1)))
    elif damage == "swap":
        out[i], out[j] = out[j], out[i]
    elif damage == "move":
        out.insert(j, out.pop(i))
    elif damage == "thread":
        out[i] = attrs.evolve(out[i], thread_id=out[i].thread_id + "-other")
    elif damage == "run":
        out[i] = attrs.evolve(out[i], run_id=data.draw(st.sampled_from(runs), label="run"))
    elif damage == "sequence":
        out[i] = attrs.evolve(out[i], sequence=data.draw(st.integers(0, 40), label="sequence"))
    elif damage == "late":
        last = out[-1]
        out.append(HarnessEvent(thread_id=last.thread_id, run_id=data.draw(st.sampled_from(runs), label="run"),
                                sequence=data.draw(st.integers(0, 40), label="sequence"),
                                occurred_at=last.occurred_at, event=ObservationEvent(name="late")))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), damage=st.sampled_from(DAMAGES), complete=st.sampled_from([True, False, None]))
def test_the_projection_never_takes_an_item_the_streams_order_refuses_and_holds_the_same_cursors(
        data: st.DataObject, damage: str, complete: bool | None) -> None:
    # The driver journals what the projection took without a check of its own (past a stream's first item):
    # on any delegating stream, damaged or not, an item the projection takes is one the stream cursor takes,
    # and the cursors the driver reads from the projection's state are the stream cursor's.
    items = damaged(data, data.draw(delegating_histories(complete).filter(bool), label="history"), damage)
    observer = HarnessAguiObserver()
    cursor = StreamCursor.of(items[0].run_id)
    for item in items:
        try:
            after: StreamCursor | None = advance_stream(cursor, item)
        except HistoryError:
            after = None
        try:
            observer.observe(item)
        except Exception:
            return  # refused: the driver asks the stream cursor which fault it is
        assert after is not None, f"the projection took {item!r}, which the stream's order refuses"
        cursor = after
        state = observer.state
        assert state.root.history == cursor.root
        assert {run_id: state.subagents[run_id].run.history for run_id in cursor.children} == dict(cursor.children)
