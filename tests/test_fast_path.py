# The hot path builds AG-UI events without pydantic's validation and keeps
# records in a chunked log; neither may be observable. These tests hold the
# fast build to the validated constructor (equality, field sets, every
# serialization, repr), check that what it builds shares nothing mutable,
# that the processor's no-change shortcut reports exactly what the full
# check reports, and that the record log behaves like a tuple.

from __future__ import annotations

import gc
import random
import typing
from typing import Any

import pytest
from ag_ui.core import BaseEvent
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import AguiObservationError, HarnessAguiObserver
from harness_agui.core import _json
from harness_agui.core import records as ev
from harness_agui.testing import complete_histories, json_objects, json_values, simulated_run

FAST_KINDS = [k for k in ev.KINDS.values() if k._template is not None]
NESTED_KINDS = [k for k in ev.KINDS.values() if k._template is None]


def assert_same_event(fast: BaseEvent, slow: BaseEvent) -> None:
    assert type(fast) is type(slow)
    assert fast == slow
    assert list(fast.__dict__.items()) == list(slow.__dict__.items())
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.__pydantic_extra__ == slow.__pydantic_extra__
    assert fast.__pydantic_private__ == slow.__pydantic_private__
    assert fast.model_dump(mode="json", by_alias=True) == slow.model_dump(mode="json", by_alias=True)
    assert fast.model_dump_json(by_alias=True) == slow.model_dump_json(by_alias=True)
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    assert repr(fast) == repr(slow)


def _field_values(kind: ev.Kind) -> st.SearchStrategy[tuple[Any, ...]]:
    parts = []
    for name in kind.fields:
        info = kind.cls.model_fields[name]
        annotation = info.annotation
        args = typing.get_args(annotation)
        literals = [a for a in (annotation, *args) if typing.get_origin(a) is typing.Literal]
        if name in kind.json_fields:
            value = (json_objects() if annotation is not Any else json_values()).map(_json.dumps)
        elif literals:
            value = st.sampled_from(typing.get_args(literals[0]))
        else:
            value = st.text(max_size=40)
        if not info.is_required():
            value = st.none() | value
        parts.append(value)
    return st.tuples(*parts)


@st.composite
def fast_records(draw: st.DrawFn) -> tuple[Any, ...]:
    kind = draw(st.sampled_from(FAST_KINDS))
    timestamp = draw(st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1))
    return (kind, timestamp, *draw(_field_values(kind)))


def test_every_kind_with_only_text_and_json_fields_takes_the_fast_path() -> None:
    names = {k.name for k in FAST_KINDS}
    assert names == {
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_ENCRYPTED_VALUE", "TOOL_CALL_START",
        "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "CUSTOM",
    }


@given(fast_records())
def test_fast_build_equals_validated_construction_for_any_record(record: tuple[Any, ...]) -> None:
    kind = record[0]
    assert_same_event(kind.build(record), kind.build_validated(record))


@given(complete_histories())
def test_projection_of_any_run_equals_validated_construction(items: list[Any]) -> None:
    observer = HarnessAguiObserver()
    live = [e for item in items for e in observer.observe(item)]
    records = list(observer.state.events)
    assert len(records) == len(live)
    for record, event in zip(records, live, strict=True):
        assert_same_event(event, record[0].build_validated(record))


def test_projection_of_the_demo_run_equals_events_constructed_from_their_own_fields() -> None:
    observer = HarnessAguiObserver()
    for item in simulated_run():
        for event in observer.observe(item):
            assert_same_event(event, type(event)(**event.model_dump(exclude_unset=True)))


class Text(str):
    """A str subclass, as a Host's own string type might be."""


@pytest.mark.parametrize("kind", [ev.TEXT_CONTENT, ev.TOOL_START, ev.CUSTOM], ids=lambda k: k.name)
def test_a_str_subclass_value_goes_through_validation_and_comes_out_plain_str(kind: ev.Kind) -> None:
    values = {"message_id": Text("m-1"), "delta": Text("Hel"), "tool_call_id": Text("c-1"),
              "tool_call_name": Text("search"), "parent_message_id": None, "name": Text("harness.observation"),
              "value": Text('{"a":1}')}
    record = (kind, 5, *(values[name] for name in kind.fields))
    event = kind.build(record)
    assert_same_event(event, kind.build_validated(record))
    assert all(type(getattr(event, name)) is str for name in kind.fields if name not in kind.json_fields
               and getattr(event, name) is not None)


def test_a_record_of_the_wrong_length_raises_as_validated_construction_does() -> None:
    with pytest.raises(ValueError):
        ev.TEXT_CONTENT.build((ev.TEXT_CONTENT, 5, "m-1"))


def test_kinds_with_nested_models_are_built_by_validation() -> None:
    assert {k.name for k in NESTED_KINDS} == {"RUN_FINISHED", "RUN_ERROR"}
    usage = '[{"input_tokens":3,"output_tokens":4,"total_tokens":7}]'
    finished = (ev.RUN_FINISHED, 9, "t", "r", '{"answer":1}', '{"type":"success"}', usage)
    error = (ev.RUN_ERROR, 9, "boom", "E1", usage)
    for record in (finished, error):
        assert_same_event(record[0].build(record), record[0].build_validated(record))


def test_two_builds_of_one_record_share_nothing_mutable() -> None:
    custom = (ev.CUSTOM, 5, "harness.observation", '{"payload":{"value":[1,2]}}')
    result = (ev.TOOL_RESULT, 5, "c-1:result", "c-1", "ok", "tool", '{"harness":{"outcome":"success"}}')
    for record in (custom, result):
        a, b = record[0].build(record), record[0].build(record)
        assert a.__dict__ is not b.__dict__
        assert a.model_fields_set is not b.model_fields_set
        assert a.__pydantic_extra__ is not b.__pydantic_extra__
        json_name = next(iter(record[0].json_fields))
        assert getattr(a, json_name) is not getattr(b, json_name)
        getattr(a, json_name)["mutated"] = True
        a.model_fields_set.add("raw_event")
        a.__pydantic_extra__["extra"] = 1
        assert_same_event(b, record[0].build_validated(record))
        assert_same_event(record[0].build(record), record[0].build_validated(record))


def test_mutating_an_observed_event_in_place_changes_neither_snapshot_nor_later_builds() -> None:
    observer = HarnessAguiObserver()
    published = [e for item in simulated_run() for e in observer.observe(item)]
    before = [e.model_dump(mode="json", by_alias=True) for e in observer.snapshot()]
    for event in published:
        event.timestamp = 0
        if isinstance(getattr(event, "value", None), dict):
            event.value["payload"] = "mutated"
    assert [e.model_dump(mode="json", by_alias=True) for e in observer.snapshot()] == before


# -- the processor's no-change shortcut ------------------------------------------------------

def _observe_all(processor: Any) -> HarnessAguiObserver:
    observer = HarnessAguiObserver(processor=processor)
    for item in simulated_run():
        observer.observe(item)
    return observer


def test_a_processor_returning_each_event_unchanged_keeps_the_projection() -> None:
    assert _observe_all(lambda item, event: event).snapshot() == _observe_all(None).snapshot()


def test_a_processor_rewriting_a_delta_in_place_is_captured() -> None:
    def shout(item: Any, event: BaseEvent) -> BaseEvent:
        if event.type.value == "TEXT_MESSAGE_CONTENT":
            event.delta = event.delta.upper()
        return event

    plain = _observe_all(None).snapshot()
    loud = _observe_all(shout).snapshot()
    assert len(loud) == len(plain)
    for a, b in zip(plain, loud, strict=True):
        if a.type.value == "TEXT_MESSAGE_CONTENT":
            assert b.delta == a.delta.upper()
        else:
            assert a == b


@pytest.mark.parametrize("target", ["TEXT_MESSAGE_START", "TOOL_CALL_ARGS", "REASONING_MESSAGE_END"])
def test_a_processor_changing_a_structural_field_in_place_is_reported(target: str) -> None:
    def rename(item: Any, event: BaseEvent) -> BaseEvent:
        if event.type.value == target:
            if hasattr(event, "message_id"):
                event.message_id = "other"
            else:
                event.tool_call_id = "other"
        return event

    with pytest.raises(AguiObservationError, match="structural field"):
        _observe_all(rename)


def test_a_processor_mutating_a_custom_value_in_place_is_reported() -> None:
    def tamper(item: Any, event: BaseEvent) -> BaseEvent:
        if event.type.value == "CUSTOM":
            event.value["run_id"] = "elsewhere"
        return event

    with pytest.raises(AguiObservationError, match="structural field CUSTOM.value"):
        _observe_all(tamper)


def test_a_processor_adding_an_extra_field_in_place_is_reported() -> None:
    def extra(item: Any, event: BaseEvent) -> BaseEvent:
        if event.type.value == "TEXT_MESSAGE_CONTENT":
            event.__pydantic_extra__["shout"] = True
        return event

    with pytest.raises(AguiObservationError, match="added fields"):
        _observe_all(extra)


def test_a_processor_setting_a_non_str_delta_equal_to_the_old_one_is_reported() -> None:
    class Equal:
        def __init__(self, text: str) -> None:
            self.text = text

        def __eq__(self, other: object) -> bool:
            return other == self.text

        __hash__ = None  # type: ignore[assignment]

    def sneaky(item: Any, event: BaseEvent) -> BaseEvent:
        if event.type.value == "TEXT_MESSAGE_CONTENT":
            event.delta = Equal(event.delta)  # type: ignore[assignment]
        return event

    with pytest.raises(AguiObservationError, match="must be str"):
        _observe_all(sneaky)


# -- the record log ------------------------------------------------------------------------

def _record(i: int) -> tuple[Any, ...]:
    kinds = [ev.TEXT_CONTENT, ev.TOOL_END, ev.CUSTOM, ev.TOOL_START]
    kind = kinds[i % len(kinds)]
    values = {"parent_message_id": None, "value": f'{{"i":{i}}}'}
    return (kind, i, *(values.get(name, f"{name}-{i}") for name in kind.fields))



@given(st.lists(st.integers(min_value=0, max_value=150), max_size=12), st.data())
def test_a_record_log_behaves_like_the_tuple_of_its_records(batches: list[int], data: st.DataObject) -> None:
    log, model, logs = ev.RecordLog(), (), []
    for size in batches:
        batch = [_record(len(model) + i) for i in range(size)]
        new = log.extend(batch)
        assert (new is log) == (size == 0)
        logs.append((log, model))
        log, model = new, model + tuple(batch)
    logs.append((log, model))
    for old, expected in logs:
        assert len(old) == len(expected)
        assert tuple(old) == expected
        assert old == ev.RecordLog(expected)
        assert hash(old) == hash(ev.RecordLog(expected))
    n = len(model)
    start = data.draw(st.integers(min_value=-n - 3, max_value=n + 3))
    stop = data.draw(st.integers(min_value=-n - 3, max_value=n + 3))
    stride = data.draw(st.sampled_from([None, 1, 2, 7, -1, -3]))
    assert tuple(log[start:stop:stride]) == model[start:stop:stride]
    if n:
        i = data.draw(st.integers(min_value=-n, max_value=n - 1))
        assert log[i] == model[i]
    with pytest.raises(IndexError):
        log[n]
    assert list(ev.EventLog(log)) == [r[0].build(r) for r in model]


def test_a_long_record_log_matches_its_records_across_blocks() -> None:
    rng = random.Random(6)
    records = [_record(i) for i in range(3 * ev.RecordLog.CHUNK**2 + 7 * ev.RecordLog.CHUNK + 11)]
    log, at = ev.RecordLog(), 0
    while at < len(records):
        size = rng.choice([1, 1, 1, 2, 3, 70, 500])
        log = log.extend(records[at:at + size])
        at += size
    assert len(log) == len(records)
    assert list(log) == records
    assert log == ev.RecordLog(records) and hash(log) == hash(ev.RecordLog(records))
    for _ in range(200):
        i = rng.randrange(-len(records), len(records))
        assert log[i] == records[i]
        a, b = sorted(rng.randrange(len(records) + 1) for _ in range(2))
        assert list(log[a:b]) == records[a:b]
    assert list(log[5::97]) == records[5::97]
    assert list(log[::-1]) == records[::-1]


def test_records_are_stored_as_rows_the_garbage_collector_stops_tracking() -> None:
    log = ev.RecordLog().extend([_record(i) for i in range(2 * ev.RecordLog.CHUNK**2 + 3 * ev.RecordLog.CHUNK + 5)])
    # A tuple is untracked when a collection finds only untracked items in
    # it; one seen before its items waits for the next collection, so three
    # levels (rows, chunks, blocks) take at most three.
    for _ in range(3):
        gc.collect()
    rows = list(log._rows())
    assert rows and not any(gc.is_tracked(row) for row in rows)
    assert log._blocks and log._chunks and log._tail
    assert not any(gc.is_tracked(chunk) for chunk in log._chunks)
    assert not any(gc.is_tracked(block) or any(gc.is_tracked(c) for c in block) for block in log._blocks)
    assert all(type(record[0]) is ev.Kind for record in log)


def test_a_record_log_append_leaves_the_original_unchanged() -> None:
    log = ev.RecordLog([_record(i) for i in range(ev.RecordLog.CHUNK - 1)])
    longer = log.append(_record(-1))
    assert len(log) == ev.RecordLog.CHUNK - 1
    assert len(longer) == ev.RecordLog.CHUNK
    assert longer[-1] == _record(-1)
    assert log != longer
