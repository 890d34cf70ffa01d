# How an AG-UI event is built from a record: through the event class's schema
# validator, which must give exactly what the validated keyword constructor
# ``cls(**fields)`` gives (equality, fields-set, every serialization, repr),
# for any record of any kind and for the projection of any Run. And what is
# built shares nothing mutable with the projection or with other builds.

from __future__ import annotations

import typing
from typing import Any

import pytest
from ag_ui.core import BaseEvent
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core import _json
from harness_agui.core import records as ev
from harness_agui.testing import complete_histories, json_objects, json_values, live_histories, simulated_run


def validated(record: ev.Record) -> BaseEvent:
    """The reference: the validated keyword constructor, given the fields the
    record carries (None left out, JSON text parsed)."""
    kind = ev.kind_of(record)
    fields: dict[str, Any] = {"timestamp": ev.field_of(record, "timestamp")}
    for name in kind.fields:
        value = ev.field_of(record, name)
        if value is not None:
            fields[name] = _json.loads(value) if name in kind.json_fields else value
    return kind.cls(**fields)


def assert_same_event(built: BaseEvent, reference: BaseEvent) -> None:
    assert type(built) is type(reference)
    assert built == reference
    assert list(built.__dict__.items()) == list(reference.__dict__.items())
    assert built.model_fields_set == reference.model_fields_set
    assert built.model_extra == reference.model_extra
    assert built.model_dump(mode="json", by_alias=True) == reference.model_dump(mode="json", by_alias=True)
    assert built.model_dump_json(by_alias=True) == reference.model_dump_json(by_alias=True)
    assert (built.model_dump_json(by_alias=True, exclude_none=True)
            == reference.model_dump_json(by_alias=True, exclude_none=True))
    assert built.model_dump_json() == reference.model_dump_json()
    assert built.model_dump(exclude_unset=True) == reference.model_dump(exclude_unset=True)
    assert repr(built) == repr(reference)


_OUTCOMES = ['{"type":"success"}', '{"type":"cancelled"}',
             '{"type":"interrupt","interrupts":[{"id":"c-1","reason":"tool_call","message":"Waiting",'
             '"toolCallId":"c-1","metadata":{"harness":{"tool_name":"f"}}}]}']
_USAGES = st.lists(
    st.fixed_dictionaries({}, optional={
        "input_tokens": st.integers(0, 10**9), "output_tokens": st.integers(0, 10**9),
        "reasoning_tokens": st.integers(0, 10**9), "cached_input_tokens": st.integers(0, 10**9),
    }), min_size=1, max_size=2,
).map(_json.dumps)
_SPECIAL: dict[tuple[str, str], st.SearchStrategy[Any]] = {
    ("RUN_FINISHED", "outcome"): st.sampled_from(_OUTCOMES),
    ("RUN_FINISHED", "usage"): _USAGES,
    ("RUN_ERROR", "usage"): _USAGES,
}


def _values(kind: ev.Kind) -> st.SearchStrategy[tuple[Any, ...]]:
    parts = []
    for name in kind.fields:
        info = kind.cls.model_fields[name]
        args = typing.get_args(info.annotation)
        literals = [a for a in (info.annotation, *args) if typing.get_origin(a) is typing.Literal]
        if (kind.name, name) in _SPECIAL:
            value = _SPECIAL[kind.name, name]
        elif name in kind.json_fields:
            value = (json_values() if info.annotation is Any or kind.name == "RUN_FINISHED"
                     else json_objects()).map(_json.dumps)
        elif literals:
            value = st.sampled_from(typing.get_args(literals[0]))
        else:
            value = st.text(max_size=40)
        if not info.is_required():
            value = st.none() | value
        parts.append(value)
    return st.tuples(*parts)


@st.composite
def records(draw: st.DrawFn) -> ev.Record:
    kind = draw(st.sampled_from(sorted(ev.KINDS.values(), key=lambda k: k.name)))
    timestamp = draw(st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1))
    return kind.record(timestamp, *draw(_values(kind)))


@given(records())
def test_building_any_record_equals_validated_construction(record: ev.Record) -> None:
    try:
        reference = validated(record)
    except ValueError:  # pydantic's ValidationError: the built event must be refused alike
        with pytest.raises(ValueError):
            ev.build(record)
        return
    assert_same_event(ev.build(record), reference)
    assert_same_event(ev.kind_of(record).build(record), reference)


@given(records())
def test_a_complete_build_of_any_record_equals_the_event_validated_from_its_own_dump(record: ev.Record) -> None:
    try:
        built = ev.build(record)
    except ValueError:
        with pytest.raises(ValueError):
            ev.build_complete(record)
        return
    reference = type(built).model_validate(built.model_dump(mode="python"))
    assert_same_event(ev.build_complete(record), reference)
    assert_same_event(ev.kind_of(record).build_complete(record), reference)
    assert ev.build_complete(record) == built


def test_a_complete_build_sets_the_type_and_the_defaults_a_dump_writes() -> None:
    start = ev.build_complete(ev.reasoning_start(5, "m-1"))
    assert start.model_fields_set == {"type", "timestamp", "message_id", "role"}
    assert start.model_dump(exclude_unset=True) == {"type": "REASONING_MESSAGE_START", "timestamp": 5,
                                                    "message_id": "m-1", "role": "reasoning"}
    assert ev.build(ev.reasoning_start(5, "m-1")).model_fields_set == {"timestamp", "message_id"}


@given(st.one_of(complete_histories(), live_histories()))
def test_the_projection_of_any_run_equals_validated_construction(items: list[Any]) -> None:
    observer = HarnessAguiObserver()
    live = [e for item in items for e in observer.observe(item)]
    stored = list(observer.state.events)
    assert len(stored) == len(live)
    for record, event, read in zip(stored, live, observer.snapshot(), strict=True):
        reference = validated(record)
        assert_same_event(event, reference)
        assert_same_event(read, reference)


def test_the_demo_run_equals_events_constructed_from_their_own_fields() -> None:
    observer = HarnessAguiObserver()
    for item in simulated_run():
        for event in observer.observe(item):
            assert_same_event(event, type(event)(**event.model_dump(exclude_unset=True)))


def test_a_built_event_carries_only_the_fields_its_record_sets() -> None:
    start = ev.build(ev.tool_call_start(5, "c-1", "search", None))
    assert start.model_fields_set == {"timestamp", "tool_call_id", "tool_call_name"}
    assert start.parent_message_id is None
    assert "parentMessageId" not in start.model_dump_json(by_alias=True, exclude_none=True)
    finished = ev.build(ev.run_finished(9, "t", "r", None, '{"type":"success"}', None))
    assert finished.model_fields_set == {"timestamp", "thread_id", "run_id", "outcome"}


class Text(str):
    """A str subclass, as a Host's own string type might be."""


@pytest.mark.parametrize("kind", [ev.TEXT_CONTENT, ev.TOOL_START, ev.CUSTOM], ids=lambda k: k.name)
def test_a_str_subclass_value_comes_out_plain_str(kind: ev.Kind) -> None:
    values = {"message_id": Text("m-1"), "delta": Text("Hel"), "tool_call_id": Text("c-1"),
              "tool_call_name": Text("search"), "parent_message_id": None, "name": Text("harness.observation"),
              "value": Text('{"a":1}')}
    record = kind.record(5, *(values[name] for name in kind.fields))
    event = ev.build(record)
    assert_same_event(event, validated(record))
    assert all(type(getattr(event, name)) is str for name in kind.fields if name not in kind.json_fields
               and getattr(event, name) is not None)


def test_kinds_with_nested_models_are_built_into_those_models() -> None:
    usage = '[{"input_tokens":3,"output_tokens":4,"total_tokens":7}]'
    finished = ev.run_finished(9, "t", "r", '{"answer":1}', '{"type":"success"}', usage)
    error = ev.run_error(9, "boom", "E1", usage)
    for record in (finished, error):
        event = ev.build(record)
        assert_same_event(event, validated(record))
        assert event.usage[0].total_tokens == 7
    assert ev.build(finished).outcome.type == "success"


def test_two_builds_of_one_record_share_nothing_mutable() -> None:
    value = ev.custom(5, "harness.observation", '{"payload":{"value":[1,2]}}')
    result = ev.tool_call_result(5, "c-1:result", "c-1", "ok", '{"harness":{"outcome":"success"}}')
    for record, json_name in ((value, "value"), (result, "metadata")):
        a, b = ev.build(record), ev.build(record)
        assert a.__dict__ is not b.__dict__
        assert a.model_fields_set is not b.model_fields_set
        assert getattr(a, json_name) is not getattr(b, json_name)
        getattr(a, json_name)["mutated"] = True
        a.model_fields_set.add("raw_event")
        a.model_extra["extra"] = 1  # type: ignore[index]
        assert_same_event(b, validated(record))
        assert_same_event(ev.build(record), validated(record))


def test_mutating_an_observed_event_in_place_changes_neither_snapshot_nor_later_builds() -> None:
    observer = HarnessAguiObserver()
    published = [e for item in simulated_run() for e in observer.observe(item)]
    before = [e.model_dump(mode="json", by_alias=True) for e in observer.snapshot()]
    for event in published:
        event.timestamp = 0
        if isinstance(getattr(event, "value", None), dict):
            event.value["payload"] = "mutated"
    assert [e.model_dump(mode="json", by_alias=True) for e in observer.snapshot()] == before
