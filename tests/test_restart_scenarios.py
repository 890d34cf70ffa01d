# Restart scenarios, written as a Host would live them.
#
# A Host journals every source item as a wire line while it observes. After a
# restart it reopens the journal, resumes a fresh observer from it and goes
# on observing the live tail. The scenarios check that this gives exactly
# what an uninterrupted observer would have (no gap, no overlap, nothing
# published twice), and that every way a resume can go wrong (the journal
# failing midway, a bad line, cancellation, misuse during the resume) leaves
# the observer fresh so that the Host can simply try again.

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from ag_ui.core import EventType
from ag_ui_validate.pytest_plugin import validate_agui

from harness_agui import INITIAL_STATE, AguiObservationError, DecodeError, HarnessAguiObserver, HarnessStreamEvent
from harness_agui.source import (
    Deferred,
    DeferredToolCall,
    ExtensionEvent,
    InputEvent,
    RunResult,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)
from harness_agui.testing import SourceBuilder, simulated_run
from harness_agui.wire.codec import decode, encode


def support_run() -> list[HarnessStreamEvent]:
    """A second realistic Run: a long pasted log, steering mid-run, a large
    tool result, an oversized diagnostic, reasoning with a signature, parts cut off by a
    new model request, and a suspended ending that waits for an approval."""
    b = SourceBuilder("thread-support", "run-support")
    b.user("Here is the failing log:\n" + "ERROR disk full on /var\n" * 900)
    b.request()
    b.part(0, ThinkingPart(content=""),
           [ThinkingPartDelta(content_delta="The disk "), ThinkingPartDelta(content_delta="is full."),
            ThinkingPartDelta(signature_delta="c2lnLTE=")], None)
    b.text(1, ["I will ", "look at ", "the volume."])
    b.tool_call(2, "disk_usage", "call-du", ['{"path": ', '"/var"}'])
    entries = [{"path": f"/var/log/app-{i}.log", "mb": i} for i in range(3000)]
    b.tool_result("call-du", "disk_usage", {"entries": entries[:200]})
    b.event(ExtensionEvent(kind="diagnostic", schema_version="1", payload={"scan": entries}))
    b.event(InputEvent(input_id="steer-1", source="steering", content="Only delete logs older than a week."))
    b.request()
    b.text(0, ["The logs under /var/log ", "take most of the space."])
    b.part(1, TextPart(content=""), [TextPartDelta(content_delta="Cut off")], None)
    b.request()
    b.tool_call(0, "delete_files", "call-rm", ['{"glob": "/var/log/*.log", ', '"older_than_days": 7}'])
    b.observation("token_budget", {"remaining": 1200})
    b.result(RunResult(status="suspended", deferred=Deferred(approvals=(
        DeferredToolCall(tool_call_id="call-rm", tool_name="delete_files",
                         args='{"glob": "/var/log/*.log", "older_than_days": 7}'),))))
    return b.items


RUNS = {"simulated": simulated_run(), "support": support_run()}
CUTS = [(name, cut) for name, items in RUNS.items() for cut in range(len(items) + 1)]


async def journal(items: Sequence[HarnessStreamEvent]) -> AsyncIterator[HarnessStreamEvent]:
    """Reopen a journal: decode each retained wire line, as a Host would."""
    for number, line in enumerate([encode(item) for item in items], start=1):
        await asyncio.sleep(0)
        yield decode(line, line=number)


def observed(items: Sequence[HarnessStreamEvent]) -> HarnessAguiObserver:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return observer


def readings(observer: HarnessAguiObserver) -> tuple[Any, ...]:
    return (tuple(observer.snapshot()), observer.event_count, observer.thread_id, observer.run_id, observer.finished,
            observer.is_fresh)


FRESH = readings(HarnessAguiObserver())


def assert_fresh(observer: HarnessAguiObserver) -> None:
    assert observer.state is INITIAL_STATE
    assert readings(observer) == FRESH


# -- resume from a prefix, then the live tail ---------------------------------------------------------

@pytest.mark.parametrize(("run", "cut"), CUTS, ids=[f"{name}-{cut}" for name, cut in CUTS])
def test_resume_from_any_prefix_then_the_live_tail_equals_an_uninterrupted_observer(run: str, cut: int) -> None:
    items = RUNS[run]
    uninterrupted = observed(items)
    whole = uninterrupted.snapshot()

    restarted = HarnessAguiObserver()
    assert asyncio.run(restarted.resume(journal(items[:cut]))) is None
    rebuilt = restarted.event_count
    assert restarted.snapshot() == whole[:rebuilt] == observed(items[:cut]).snapshot()

    live = [event for item in items[cut:] for event in restarted.observe(item)]
    assert restarted.snapshot() == whole
    assert tuple(live) == whole[rebuilt:]
    assert restarted.state == uninterrupted.state
    assert (restarted.thread_id, restarted.run_id, restarted.finished) == (
        uninterrupted.thread_id, uninterrupted.run_id, True)


def test_the_published_stream_of_a_restarted_host_is_a_valid_ag_ui_run_without_duplicates() -> None:
    items = RUNS["support"]
    first = HarnessAguiObserver()
    cut = len(items) // 2
    published = [event for item in items[:cut] for event in first.observe(item)]
    second = HarnessAguiObserver()
    asyncio.run(second.resume(journal(items[:cut])))
    published += [event for item in items[cut:] for event in second.observe(item)]
    assert tuple(published) == observed(items).snapshot()
    report = validate_agui([e.model_dump(mode="json", by_alias=True) for e in published])
    assert (report.summary.errors, report.summary.warnings) == (0, 0)


def test_after_resuming_a_complete_run_every_further_item_is_refused() -> None:
    items = RUNS["simulated"]
    observer = HarnessAguiObserver()
    asyncio.run(observer.resume(journal(items)))
    before = readings(observer)
    with pytest.raises(AguiObservationError):
        observer.observe(items[-1])
    assert readings(observer) == before and observer.finished


# -- a resume that fails midway, then a retry ----------------------------------------------------------

class JournalReadError(OSError):
    pass


async def broken_journal(items: Sequence[HarnessStreamEvent], fail_after: int) -> AsyncIterator[HarnessStreamEvent]:
    async for n, item in _numbered(journal(items)):
        if n == fail_after:
            raise JournalReadError(f"storage went away after {n} lines")
        yield item


async def _numbered(source: AsyncIterator[HarnessStreamEvent]) -> AsyncIterator[tuple[int, HarnessStreamEvent]]:
    n = 0
    async for item in source:
        yield n, item
        n += 1


async def corrupt_journal(items: Sequence[HarnessStreamEvent], bad_line: int) -> AsyncIterator[HarnessStreamEvent]:
    for number, item in enumerate(items, start=1):
        line = encode(item)
        if number == bad_line:
            line = line[: len(line) // 2]
        yield decode(line, line=number)


@pytest.mark.parametrize("fail_after", [0, 1, 17, 40])
def test_a_resume_whose_history_raises_midway_leaves_the_observer_fresh_and_a_retry_succeeds(fail_after: int) -> None:
    items = RUNS["simulated"]
    cut = 50
    observer = HarnessAguiObserver()
    with pytest.raises(JournalReadError):
        asyncio.run(observer.resume(broken_journal(items[:cut], fail_after)))
    assert_fresh(observer)

    asyncio.run(observer.resume(journal(items[:cut])))
    assert observer.snapshot() == observed(items[:cut]).snapshot()
    live = [e for item in items[cut:] for e in observer.observe(item)]
    whole = observed(items).snapshot()
    assert observer.snapshot() == whole and tuple(live) == whole[len(whole) - len(live):]


def test_a_resume_hitting_an_undecodable_journal_line_names_it_leaves_the_observer_fresh_and_a_retry_succeeds() -> None:
    items = RUNS["support"]
    observer = HarnessAguiObserver()
    with pytest.raises(DecodeError) as raised:
        asyncio.run(observer.resume(corrupt_journal(items, bad_line=12)))
    assert raised.value.line == 12
    assert_fresh(observer)
    asyncio.run(observer.resume(journal(items)))
    assert observer.snapshot() == observed(items).snapshot()


@pytest.mark.parametrize("fault", ["item of another run", "duplicate delivery", "not an item"])
def test_a_resume_whose_history_breaks_the_run_contract_leaves_the_observer_fresh_and_a_retry_succeeds(
    fault: str
) -> None:
    items = RUNS["simulated"][:30]
    other = SourceBuilder("thread-demo", "run-other").observation("n", 1).items[0]
    bad: list[Any] = {
        "item of another run": items[:10] + [other] + items[10:],
        "duplicate delivery": items[:10] + [items[9]] + items[10:],
        "not an item": items[:10] + [encode(items[10])] + items[11:],
    }[fault]
    observer = HarnessAguiObserver()
    with pytest.raises((AguiObservationError, TypeError)) as raised:
        asyncio.run(observer.resume(bad))
    assert isinstance(raised.value, TypeError if fault == "not an item" else AguiObservationError)
    assert_fresh(observer)
    asyncio.run(observer.resume(journal(items)))
    assert observer.snapshot() == observed(items).snapshot()


# -- a resume cancelled while awaiting the next item -------------------------------------------------------

class SlowJournal:
    """A history that yields ``ready`` items, then waits for ``gate`` before
    yielding the rest; ``waiting`` is set when it starts waiting."""

    def __init__(self, items: Sequence[HarnessStreamEvent], ready: int) -> None:
        self.items, self.ready = items, ready
        self.waiting = asyncio.Event()
        self.gate = asyncio.Event()
        self.started = False
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[HarnessStreamEvent]:
        self.started = True
        try:
            for item in self.items[: self.ready]:
                yield item
            self.waiting.set()
            await self.gate.wait()
            for item in self.items[self.ready:]:
                yield item
        finally:
            self.closed = True


@pytest.mark.parametrize("ready", [0, 1, 25])
def test_a_resume_cancelled_while_awaiting_the_next_item_leaves_the_observer_fresh_and_a_retry_works(
    ready: int
) -> None:
    items = RUNS["simulated"]
    cut = 40

    async def scenario() -> None:
        observer = HarnessAguiObserver()
        history = SlowJournal(items[:cut], ready)
        task = asyncio.create_task(observer.resume(history))
        await history.waiting.wait()
        assert not task.done()
        assert_fresh(observer)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert history.closed
        assert_fresh(observer)

        await observer.resume(journal(items[:cut]))
        assert observer.snapshot() == observed(items[:cut]).snapshot()
        for item in items[cut:]:
            observer.observe(item)
        assert observer.snapshot() == observed(items).snapshot()

    asyncio.run(scenario())


def test_a_resume_cancelled_while_waiting_lets_observe_start_the_run_afresh() -> None:
    items = RUNS["support"]

    async def scenario() -> None:
        observer = HarnessAguiObserver()
        history = SlowJournal(items, 5)
        task = asyncio.create_task(observer.resume(history))
        await history.waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert observer.observe(items[0])[0].type == EventType.RUN_STARTED

    asyncio.run(scenario())


# -- misuse during a resume ---------------------------------------------------------------------------------

def test_observe_and_a_second_resume_during_a_resume_raise_while_reads_show_the_fresh_state() -> None:
    items = RUNS["simulated"]
    cut = 30

    async def scenario() -> None:
        observer = HarnessAguiObserver()
        history = SlowJournal(items[:cut], 12)
        task = asyncio.create_task(observer.resume(history))
        await history.waiting.wait()

        with pytest.raises(AguiObservationError):
            observer.observe(items[cut])
        with pytest.raises(AguiObservationError):
            observer.observe(items[0])
        second = SlowJournal(items, 0)
        with pytest.raises(AguiObservationError):
            await observer.resume(second)
        assert not second.started
        with pytest.raises(AguiObservationError):
            await observer.resume([])
        assert_fresh(observer)
        assert observer.snapshot(0, 5) == () and "resuming" in repr(observer)

        history.gate.set()
        assert await task is None
        assert observer.snapshot() == observed(items[:cut]).snapshot()
        live = [e for item in items[cut:] for e in observer.observe(item)]
        whole = observed(items).snapshot()
        assert observer.snapshot() == whole and tuple(live) == whole[len(whole) - len(live):]

    asyncio.run(scenario())


def test_a_processor_that_calls_observe_during_a_resume_is_refused() -> None:
    items = RUNS["simulated"][:5]
    refused: list[Exception] = []
    observer: HarnessAguiObserver

    def meddling(item: Any, event: Any) -> Any:
        try:
            observer.observe(item)
        except AguiObservationError as e:
            refused.append(e)
        return event

    observer = HarnessAguiObserver(meddling)
    asyncio.run(observer.resume(items))
    assert len(refused) == observer.event_count > 0
    assert observer.snapshot() == observed(items).snapshot()


# -- worker takeover ----------------------------------------------------------------------------------------

def _takeover() -> tuple[list[HarnessStreamEvent], list[HarnessStreamEvent]]:
    """Run A dies after some items; the Harness starts Run B on the same Thread."""
    a = simulated_run("thread-shared", "run-a")[:33]
    b = simulated_run("thread-shared", "run-b")
    return a, b


def test_worker_takeover_gets_a_new_observer_for_the_new_run() -> None:
    run_a, run_b = _takeover()
    old = observed(run_a)
    new = HarnessAguiObserver()
    published = [e for item in run_b for e in new.observe(item)]
    assert published[0].type == EventType.RUN_STARTED and published[0].run_id == "run-b"
    assert (new.thread_id, new.run_id, new.finished) == ("thread-shared", "run-b", True)
    assert not any(getattr(e, "run_id", None) == "run-a" for e in published)
    assert old.run_id == "run-a" and not old.finished
    report = validate_agui([e.model_dump(mode="json", by_alias=True) for e in published])
    assert (report.summary.errors, report.summary.warnings) == (0, 0)


@pytest.mark.parametrize("which", [0, 20, -1], ids=["first", "middle", "last"])
def test_feeding_the_old_runs_items_to_the_new_runs_observer_raises_and_changes_nothing(which: int) -> None:
    run_a, run_b = _takeover()
    new = observed(run_b[:10])
    before, state = readings(new), new.state
    with pytest.raises(AguiObservationError):
        new.observe(run_a[which])
    assert new.state is state and readings(new) == before
    assert new.observe(run_b[10]) == observed(run_b[:11]).snapshot()[before[1]:]


def test_the_old_runs_observer_refuses_the_new_runs_items() -> None:
    run_a, run_b = _takeover()
    old = observed(run_a)
    before = readings(old)
    with pytest.raises(AguiObservationError):
        old.observe(run_b[len(run_a)])
    assert readings(old) == before


def test_resuming_a_new_observer_from_a_history_that_mixes_two_runs_raises_and_leaves_it_fresh() -> None:
    run_a, run_b = _takeover()
    observer = HarnessAguiObserver()
    with pytest.raises(AguiObservationError):
        asyncio.run(observer.resume(journal(run_a + run_b)))
    assert_fresh(observer)
    asyncio.run(observer.resume(journal(run_b[:20])))
    assert observer.run_id == "run-b"
    with pytest.raises(AguiObservationError):
        observer.observe(run_a[-1])
    assert observer.snapshot() == observed(run_b[:20]).snapshot()
