"""Step-through replay (harness_agui.debug.replay): steps, diagnose and the lookups."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import TextMessageStartEvent, ToolCallStartEvent
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness_agui import (
    INITIAL_STATE,
    AguiObservationError,
    DecodeError,
    HarnessAguiObserver,
    SequenceGapError,
    SequenceOrderError,
)
from harness_agui.core.records import build
from harness_agui.debug import replay as replay_module
from harness_agui.debug.replay import (
    Diagnosis,
    Step,
    adiagnose,
    asteps,
    diagnose,
    find_message,
    find_tool_call,
    part_steps,
    steps,
)
from harness_agui.source import (
    ObservationEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    ToolCallPart,
    ToolCallPartDelta,
)
from harness_agui.testing import (
    FAULTS,
    SourceBuilder,
    histories,
    invalid_cases,
    replay_stable_processors,
    simulated_run,
)
from harness_agui.wire.codec import encode

# -- helpers --------------------------------------------------------------------------------


async def _aiter(items: Any):  # type: ignore[no-untyped-def]
    for item in items:
        yield item


async def _collect(agen: Any) -> list[Any]:
    return [x async for x in agen]


def _observed(items: list[Any], processor: Any = None) -> tuple[HarnessAguiObserver, list[list[Any]]]:
    observer = HarnessAguiObserver(processor=processor)
    return observer, [list(observer.observe(item)) for item in items]


def _late_named_call_run() -> list[Any]:
    """A Run whose tool call learns its name from a delta and its first args
    from a later one, so TOOL_CALL_START comes out of a delta, and whose call
    part is closed by the next model request rather than by its end."""
    b = SourceBuilder("t", "r")
    b.user("look it up")                                                                           # 0
    b.request()                                                                                    # 1
    b.text(0, ["Checking ", "now."], id="msg-1")                                                   # 2-5
    b.event(PartStartEvent(index=1, part=ToolCallPart(tool_name="", args=None, tool_call_id="call-1")))  # 6
    b.event(PartDeltaEvent(index=1, delta=ToolCallPartDelta(tool_name_delta="look")))              # 7
    b.event(PartDeltaEvent(index=1, delta=ToolCallPartDelta(args_delta='{"q": 1}')))               # 8
    b.event(PartDeltaEvent(index=1, delta=ToolCallPartDelta(args_delta=" ")))                      # 9
    b.request()                                                                                    # 10
    b.tool_result("call-1", "look", {"answer": 42})                                                # 11
    b.text(0, ["The answer ", "is 42."])                                                           # 12-15
    b.completed("42")                                                                              # 16
    return b.items


# -- steps ------------------------------------------------------------------------------------


@given(items=histories(max_steps=20), processor=st.none() | replay_stable_processors())
@settings(max_examples=60)
def test_steps_end_in_the_state_and_events_that_observe_produces(items: list[Any], processor: Any) -> None:
    observer, observed = _observed(items, processor)
    replayed = list(steps(items, processor))
    assert [s.position for s in replayed] == list(range(len(items)))
    assert [s.item for s in replayed] == items
    assert [list(s.events) for s in replayed] == observed
    final = replayed[-1].after if replayed else INITIAL_STATE
    assert final == observer.state
    assert final.snapshot() == observer.snapshot()


def test_steps_hand_out_the_very_states_the_reducer_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    returned: list[Any] = []
    real = replay_module.advance

    def spy(state: Any, item: Any, processor: Any = None) -> Any:
        new = real(state, item, processor)
        returned.append((state, new))
        return new

    monkeypatch.setattr(replay_module, "advance", spy)
    replayed = list(steps(simulated_run()))
    assert len(returned) == len(replayed) > 0
    assert replayed[0].before is INITIAL_STATE
    for step, (given_state, new) in zip(replayed, returned, strict=True):
        assert step.before is given_state
        assert step.after is new
    for earlier, later in zip(replayed, replayed[1:], strict=False):
        assert later.before is earlier.after


def test_a_steps_events_are_the_records_its_item_appended() -> None:
    for step in steps(simulated_run()):
        appended = step.after.events[len(step.before.events):]
        assert list(step.records) == list(appended)
        assert step.events == tuple(build(r) for r in appended)


def test_steps_is_lazy_and_yields_every_step_before_a_failing_item() -> None:
    items = simulated_run()[:5]
    bad = SourceBuilder("thread-demo", "run-demo", first_sequence=2).observation("late", 1).items[0]
    it = steps([*items, bad, *simulated_run()[5:7]])
    got = [next(it) for _ in range(5)]
    assert [s.position for s in got] == [0, 1, 2, 3, 4]
    with pytest.raises(SequenceOrderError, match="sequence went back: 5 was due"):
        next(it)


def test_asteps_over_an_async_history_gives_the_same_steps_as_steps() -> None:
    items = simulated_run()
    sync = list(steps(items))
    from_async = asyncio.run(_collect(asteps(_aiter(items))))
    from_plain = asyncio.run(_collect(asteps(items)))
    assert from_async == sync
    assert from_plain == sync
    for a, b in zip(from_async[1:], from_async, strict=False):
        assert a.before is b.after


def test_steps_refuses_an_async_history_and_points_to_asteps() -> None:
    with pytest.raises(TypeError, match="asteps"):
        steps(_aiter(simulated_run()))


@pytest.mark.parametrize("history", ["journal.jsonl", b"{}", 42, None])
def test_steps_refuses_what_is_not_a_history_when_called(history: Any) -> None:
    with pytest.raises(TypeError):
        steps(history)
    with pytest.raises(TypeError):
        asteps(history)


def test_steps_refuses_a_processor_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="processor must be callable"):
        steps([], processor="upper")  # type: ignore[arg-type]


def test_steps_decode_wire_lines_and_number_them_as_journal_lines() -> None:
    items = simulated_run()[:6]
    lines = [encode(items[0]) + "\n", "\n", *(encode(i).encode() for i in items[1:]), "   \n"]
    replayed = list(steps(lines))
    assert [s.item for s in replayed] == items
    assert [s.line for s in replayed] == [1, 3, 4, 5, 6, 7]
    assert [s.position for s in replayed] == [0, 1, 2, 3, 4, 5]
    assert all(s.line is None for s in steps(items))


def test_steps_read_a_journal_path_line_by_line(tmp_path: Path) -> None:
    items = simulated_run()
    journal = tmp_path / "run.jsonl"
    journal.write_text("".join(encode(i) + "\n" for i in items[:8]) + "not json\n", encoding="utf-8")
    it = steps(journal)
    got = [next(it) for _ in range(8)]
    assert [s.item for s in got] == items[:8]
    with pytest.raises(DecodeError, match="line 9"):
        next(it)


def test_steps_pass_over_a_byte_order_mark_at_the_start_of_a_journal(tmp_path: Path) -> None:
    items = simulated_run()[:3]
    journal = tmp_path / "bom.jsonl"
    journal.write_bytes(b"\xef\xbb\xbf" + "".join(encode(i) + "\n" for i in items).encode())
    assert [s.item for s in steps(journal)] == items


def test_steps_and_diagnose_read_a_journal_object_plain_or_async(tmp_path: Path) -> None:
    from harness_agui.wire.jsonl import Journal, JournalError

    items = simulated_run()
    whole = tmp_path / "run.jsonl"
    whole.write_text("".join(encode(i) + "\n" for i in items), encoding="utf-8")
    assert [s.item for s in steps(Journal(whole))] == items
    assert [s.item for s in asyncio.run(_collect(asteps(Journal(whole))))] == items
    gap = tmp_path / "gap.jsonl"
    gap.write_text("".join(encode(i) + "\n" for i in [*items[:3], *items[4:]]), encoding="utf-8")
    report = diagnose(Journal(gap))
    failure = report.failure
    assert failure is not None
    assert (failure.stage, failure.position, failure.line) == ("read", 3, 4)
    assert isinstance(failure.error, JournalError)
    assert type(failure.error) is SequenceGapError
    # Read leniently, the same gap is refused one stage later, by the reducer, with the same error.
    projected = diagnose(gap).failure
    assert projected is not None
    assert (projected.stage, projected.position, projected.line) == ("project", 3, 4)
    assert type(projected.error) is SequenceGapError


def test_step_properties_show_where_the_run_is() -> None:
    replayed = list(steps(simulated_run()))
    step = replayed[3]
    assert step.sequence == step.item.sequence == 3
    assert step.request == 0
    assert step.open_parts == step.after.parts
    assert [p.kind for p in step.open_parts] == ["thinking"]


# -- diagnose ----------------------------------------------------------------------------------


@given(items=histories(max_steps=20))
@settings(max_examples=40)
def test_diagnose_of_a_valid_history_is_clean_with_counts(items: list[Any]) -> None:
    observer, _ = _observed(items)
    report = diagnose(items)
    assert report.ok and report.failure is None
    assert report.items == len(items)
    assert report.events == observer.event_count == sum(report.event_counts().values())
    assert report.state == observer.state
    assert report.finished == observer.finished


_FOLLOW_UP = ObservationEvent(name="after-the-fault", value=None)


@pytest.mark.parametrize("fault", FAULTS)
@given(data=st.data())
@settings(max_examples=8, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_diagnose_finds_the_first_failing_item_for_every_invalid_kind(fault: str, data: st.DataObject) -> None:
    case = data.draw(invalid_cases(faults=(fault,), max_steps=10))
    # Text and bytes are wire lines to replay; the other wrong types reach the reducer.
    assume(not isinstance(case.item, (str, bytes)))
    prefix = list(case.history)
    tail = SourceBuilder(prefix[-1].thread_id if prefix else "t", prefix[-1].run_id if prefix else "r",
                         first_sequence=10**6).event(_FOLLOW_UP).items
    report = diagnose([*prefix, case.item, *tail])
    failure = report.failure
    assert failure is not None
    assert failure.position == len(prefix)
    assert failure.stage == "project"
    assert failure.item is case.item
    assert isinstance(failure.error, case.error)
    assert failure.message == str(failure.error)
    expected_before = list(steps(prefix))[-1].after if prefix else INITIAL_STATE
    assert failure.before == expected_before
    assert failure.before is report.state
    assert report.items == len(prefix)
    assert report.events == len(expected_before.events)


def test_diagnose_reports_an_undecodable_line_with_its_number_and_text() -> None:
    items = simulated_run()
    lines = [encode(i) for i in items[:4]] + ['{"v": 7, "kind": "event"}'] + [encode(i) for i in items[4:]]
    report = diagnose(lines)
    failure = report.failure
    assert failure is not None
    assert (failure.stage, failure.position, failure.line) == ("decode", 4, 5)
    assert failure.item is None
    assert failure.text == '{"v": 7, "kind": "event"}'
    assert isinstance(failure.error, DecodeError)
    assert "line 5" in failure.message and "unknown wire version 7" in failure.message
    assert failure.before == list(steps(items[:4]))[-1].after


def test_diagnose_reads_a_broken_journal_file(tmp_path: Path) -> None:
    items = simulated_run()
    journal = tmp_path / "broken.jsonl"
    body = "".join(encode(i) + "\n" for i in items[:3]) + "\n" + "{not json\n" + encode(items[3]) + "\n"
    journal.write_bytes(body.encode())
    report = diagnose(journal)
    assert report.failure is not None
    assert (report.failure.stage, report.failure.line, report.failure.position) == ("decode", 5, 3)
    assert report.failure.text == "{not json"
    assert "malformed JSON" in report.failure.message


def test_diagnose_reports_invalid_utf8_in_a_journal_as_a_decode_failure(tmp_path: Path) -> None:
    journal = tmp_path / "bad-bytes.jsonl"
    journal.write_bytes(encode(simulated_run()[0]).encode() + b"\n\xff\xfe{}\n")
    report = diagnose(journal)
    assert report.failure is not None
    assert (report.failure.stage, report.failure.line) == ("decode", 2)


def test_diagnose_reports_a_history_that_raises_while_it_is_read() -> None:
    items = simulated_run()

    def history():  # type: ignore[no-untyped-def]
        yield from items[:3]
        raise OSError("journal disk went away")

    report = diagnose(history())
    assert report.failure is not None
    assert (report.failure.stage, report.failure.position, report.failure.item) == ("read", 3, None)
    assert isinstance(report.failure.error, OSError)
    assert report.items == 3


def test_diagnose_reports_a_processor_that_raises() -> None:
    def processor(item: Any, event: Any) -> Any:
        if isinstance(event, ToolCallStartEvent):
            raise RuntimeError("redaction service down")
        return event

    items = simulated_run()
    report = diagnose(items, processor)
    failure = report.failure
    assert failure is not None
    first_call = next(i for i, item in enumerate(items) if isinstance(getattr(item, "event", None), PartStartEvent)
                      and isinstance(item.event.part, ToolCallPart))
    assert (failure.stage, failure.position) == ("project", first_call)
    assert isinstance(failure.error, RuntimeError)


def test_diagnose_reports_a_processor_that_changes_a_structural_field() -> None:
    def processor(item: Any, event: Any) -> Any:
        if isinstance(event, TextMessageStartEvent):
            return event.model_copy(update={"message_id": "forged"})
        return event

    report = diagnose(simulated_run(), processor)
    assert report.failure is not None
    assert isinstance(report.failure.error, AguiObservationError)
    assert "message_id" in report.failure.message


def test_adiagnose_reports_what_diagnose_reports() -> None:
    items = simulated_run()
    bad = [*items[:6], items[2], *items[6:]]
    for history in (items, bad):
        sync = diagnose(history)
        from_async = asyncio.run(adiagnose(_aiter(history)))
        assert from_async.items == sync.items and from_async.events == sync.events
        assert from_async.state == sync.state
        assert (from_async.failure is None) == (sync.failure is None)
        if sync.failure is not None:
            assert from_async.failure is not None
            assert from_async.failure.position == sync.failure.position == 6
            assert str(from_async.failure.error) == str(sync.failure.error)


def test_adiagnose_reports_an_async_history_that_raises() -> None:
    async def history():  # type: ignore[no-untyped-def]
        yield simulated_run()[0]
        raise ConnectionError("stream reset")

    report = asyncio.run(adiagnose(history()))
    assert report.failure is not None and report.failure.stage == "read" and report.items == 1


@pytest.mark.parametrize("history", ["journal.jsonl", 42])
def test_diagnose_refuses_what_is_not_a_history(history: Any) -> None:
    with pytest.raises(TypeError):
        diagnose(history)


def test_diagnose_of_an_empty_history_is_clean_and_fresh() -> None:
    report = diagnose([])
    assert isinstance(report, Diagnosis)
    assert report.ok and report.items == 0 and report.events == 0 and report.state is INITIAL_STATE


# -- lookups -----------------------------------------------------------------------------------


def test_find_message_gives_the_step_that_started_the_message() -> None:
    replayed = list(steps(_late_named_call_run()))
    step = find_message(replayed, "msg-1")
    assert isinstance(step.item.event, PartStartEvent) and step.item.event.index == 0
    assert any(isinstance(e, TextMessageStartEvent) for e in step.events)
    result = find_message(replayed, "call-1:result")
    assert result.item.event.tool_call_id == "call-1"
    assert find_message(replayed, "r:request-1:part-0:text").position > result.position


def test_find_tool_call_gives_the_step_that_emitted_its_start() -> None:
    replayed = list(steps(_late_named_call_run()))
    step = find_tool_call(replayed, "call-1")
    # The name is known at the first delta, but START waits for the first args delta.
    assert isinstance(step.item.event, PartDeltaEvent) and step.item.event.delta.args_delta == '{"q": 1}'
    starts = [e for e in step.events if isinstance(e, ToolCallStartEvent)]
    assert [(e.tool_call_id, e.tool_call_name, e.parent_message_id) for e in starts] == [("call-1", "look", "msg-1")]
    assert find_message(replayed, "call-1") is step


def test_lookups_raise_key_error_for_an_id_no_step_produced() -> None:
    replayed = list(steps(_late_named_call_run()))
    with pytest.raises(KeyError, match="nowhere"):
        find_message(replayed, "nowhere")
    with pytest.raises(KeyError, match="msg-1"):
        find_tool_call(replayed, "msg-1")


def test_find_message_reads_the_steps_only_up_to_the_match() -> None:
    items = _late_named_call_run()
    it = steps(items)
    step = find_message(it, "msg-1")
    assert next(it).position == step.position + 1


def test_part_steps_of_one_index_include_the_item_that_closed_it() -> None:
    items = _late_named_call_run()
    replayed = list(steps(items))
    call = part_steps(replayed, 1)
    kinds = [type(s.item.event).__name__ for s in call]
    # Start, three deltas, then the next model request closes the never-ended call.
    assert kinds == ["PartStartEvent"] + ["PartDeltaEvent"] * 3 + ["ExtensionEvent"]
    assert call[-1].before.part(1) is not None and call[-1].after.part(1) is None
    index0 = part_steps(replayed, 0)
    assert {s.before.request_index for s in index0} == {0, 1}
    first_request = part_steps(replayed, 0, request=0)
    assert [s.item.event.index for s in first_request] == [0, 0, 0, 0]
    assert first_request[0].item.event.part == TextPart(content="", id="msg-1")
    assert part_steps(replayed, 7) == ()


def test_open_parts_at_each_step_follow_the_parts_lifecycle() -> None:
    replayed = list(steps(_late_named_call_run()))
    opened = [[(p.index, p.kind) for p in s.open_parts] for s in replayed]
    assert opened[3] == [(0, "text")]
    assert opened[6] == [(1, "tool_call")]
    assert not opened[-1]
    named = replayed[7].open_parts[0]
    assert (named.started, named.tool_name) == (False, "look")
    assert replayed[8].open_parts[0].started


def test_step_is_a_value_with_a_short_repr() -> None:
    step = next(iter(steps(simulated_run())))
    assert isinstance(step, Step)
    assert repr(step).startswith("Step(#0 seq 0 input -> 4 events: RUN_STARTED, TEXT_MESSAGE_START, ")
