# The retained form of emitted events: records made by named constructors and
# read through named accessors, kinds that pickle by name, and the chunked
# RecordLog that must behave exactly like the tuple of its records while
# keeping them out of the garbage collector's way.

from __future__ import annotations

import gc
import pickle
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_agui.core import records as ev

CONSTRUCTED = [
    (ev.run_started(1, "t", "r"), {"thread_id": "t", "run_id": "r"}),
    (ev.run_finished(1, "t", "r", '{"a":1}', '{"type":"success"}', None),
     {"thread_id": "t", "run_id": "r", "result": '{"a":1}', "outcome": '{"type":"success"}', "usage": None}),
    (ev.run_error(1, "boom", None, None), {"message": "boom", "code": None, "usage": None, "metadata": None}),
    (ev.text_start(1, "m"), {"message_id": "m", "role": "assistant"}),
    (ev.text_content(1, "m", "Hel"), {"message_id": "m", "delta": "Hel"}),
    (ev.text_end(1, "m"), {"message_id": "m"}),
    (ev.reasoning_start(1, "m"), {"message_id": "m"}),
    (ev.reasoning_content(1, "m", "hm"), {"message_id": "m", "delta": "hm"}),
    (ev.reasoning_end(1, "m"), {"message_id": "m"}),
    (ev.reasoning_signature(1, "m", "sig"), {"subtype": "message", "entity_id": "m", "encrypted_value": "sig"}),
    (ev.tool_call_start(1, "c", "f", "m"), {"tool_call_id": "c", "tool_call_name": "f", "parent_message_id": "m"}),
    (ev.tool_call_args(1, "c", "{}"), {"tool_call_id": "c", "delta": "{}"}),
    (ev.tool_call_end(1, "c"), {"tool_call_id": "c"}),
    (ev.tool_call_result(1, "c:result", "c", "ok", "{}"),
     {"message_id": "c:result", "tool_call_id": "c", "content": "ok", "role": "tool", "metadata": "{}"}),
    (ev.custom(1, "harness.x", "{}"), {"name": "harness.x", "value": "{}"}),
    (ev.subagent_started(1, "run-c", "planner", None, "call-1"),
     {"subagent_run_id": "run-c", "name": "planner", "parent_subagent_run_id": None, "parent_tool_call_id": "call-1"}),
    (ev.subagent_finished(1, "run-c", '"done"', '{"type":"success"}'),
     {"subagent_run_id": "run-c", "result": '"done"', "outcome": '{"type":"success"}'}),
    (ev.subagent_error(1, "run-c", "failed", "failed"),
     {"subagent_run_id": "run-c", "message": "failed", "code": "failed"}),
]


def test_there_is_one_named_constructor_for_every_kind() -> None:
    assert sorted(ev.event_type(r) for r, _ in CONSTRUCTED) == sorted(ev.KINDS)


@pytest.mark.parametrize(("record", "fields"), CONSTRUCTED, ids=lambda x: ev.event_type(x) if type(x) is tuple else "")
def test_a_constructed_record_reads_back_by_name_and_builds(record: ev.Record, fields: dict[str, Any]) -> None:
    kind = ev.kind_of(record)
    assert kind is ev.kind_named(ev.event_type(record))
    assert set(kind.fields) == set(fields)
    assert ev.field_of(record, "timestamp") == 1
    assert {name: ev.field_of(record, name) for name in kind.fields} == fields
    assert ev.field_of(record, "no_such_field") is None
    assert kind.record(1, *(fields[name] for name in kind.fields)) == record
    assert ev.build(record).type.value == ev.event_type(record)


def test_records_hold_only_atomic_values() -> None:
    for record, _ in CONSTRUCTED:
        assert type(record) is tuple
        assert all(v is None or type(v) in (str, int) for v in record)


def test_content_is_read_and_replaced_by_name() -> None:
    record = ev.text_content(1, "m", "Hel")
    assert ev.content_of(record) == "Hel"
    assert ev.with_content(record, "Hel") is record
    changed = ev.with_content(record, "HEL")
    assert ev.content_of(changed) == "HEL" and ev.field_of(changed, "message_id") == "m"
    result = ev.tool_call_result(1, "c:result", "c", "ok", "{}")
    assert ev.field_of(ev.with_content(result, "fine"), "metadata") == "{}"


def test_a_kind_without_a_content_field_refuses_content_access() -> None:
    record = ev.text_end(1, "m")
    with pytest.raises(ValueError, match="no content field"):
        ev.content_of(record)
    with pytest.raises(ValueError, match="no content field"):
        ev.with_content(record, "x")


def test_a_record_of_the_wrong_length_is_refused_when_made() -> None:
    with pytest.raises(ValueError, match="holds 2 values, not 1"):
        ev.TEXT_CONTENT.record(5, "m-1")


def test_kinds_pickle_by_name_to_the_same_object() -> None:
    for kind in ev.KINDS.values():
        assert pickle.loads(pickle.dumps(kind)) is kind
        if kind.attributed is not None:
            assert pickle.loads(pickle.dumps(kind.attributed)) is kind.attributed


# -- a subagent's records ------------------------------------------------------------------

ATTRIBUTABLE = [(r, f) for r, f in CONSTRUCTED if ev.kind_of(r).attributed is not None]


def test_exactly_the_kinds_with_a_subagent_run_id_field_in_ag_ui_can_be_attributed() -> None:
    names = {ev.event_type(r) for r, _ in ATTRIBUTABLE}
    assert names == {
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_ENCRYPTED_VALUE", "TOOL_CALL_START",
        "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "CUSTOM",
    }
    for record, _ in CONSTRUCTED:
        if ev.kind_of(record).attributed is None:
            with pytest.raises(ValueError, match="cannot be attributed"):
                ev.attributed(record, "run-c")


@pytest.mark.parametrize(("record", "fields"), ATTRIBUTABLE, ids=lambda x: ev.event_type(x) if type(x) is tuple else "")
def test_an_attributed_record_is_the_same_event_with_its_subagent_run_id(record: ev.Record,
                                                                          fields: dict[str, Any]) -> None:
    mine = ev.attributed(record, "run-c")
    assert ev.subagent_of(record) is None and ev.subagent_of(mine) == "run-c"
    assert ev.event_type(mine) == ev.event_type(record)
    assert {name: ev.field_of(mine, name) for name in fields} == fields
    assert ev.build(mine) == ev.build(record).model_copy(update={"subagent_run_id": "run-c"})
    assert "subagent_run_id" not in ev.build(record).model_fields_set
    assert all(v is None or type(v) in (str, int) for v in mine)
    assert pickle.loads(pickle.dumps(ev.RecordLog([mine]))) == ev.RecordLog([mine])
    with pytest.raises(ValueError, match="cannot be attributed"):
        ev.attributed(mine, "run-d")
    if ev.kind_of(record).content is not None:
        assert ev.subagent_of(ev.with_content(mine, "other")) == "run-c"


def test_with_field_replaces_one_named_field() -> None:
    record = ev.attributed(ev.tool_call_args(1, "c", "{}"), "run-c")
    assert ev.with_field(record, "tool_call_id", "c") is record
    renamed = ev.with_field(record, "tool_call_id", "c:run-c")
    assert ev.field_of(renamed, "tool_call_id") == "c:run-c" and ev.subagent_of(renamed) == "run-c"
    with pytest.raises(ValueError, match="no field"):
        ev.with_field(record, "message_id", "x")


# -- the record log ------------------------------------------------------------------------

def _record(i: int) -> ev.Record:
    kinds = [ev.TEXT_CONTENT, ev.TOOL_END, ev.CUSTOM, ev.TOOL_START]
    kind = kinds[i % len(kinds)]
    values = {"parent_message_id": None, "value": f'{{"i":{i}}}'}
    return kind.record(i, *(values.get(name, f"{name}-{i}") for name in kind.fields))


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
        assert pickle.loads(pickle.dumps(old)) == old
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
    assert list(ev.EventLog(log)) == [ev.build(r) for r in model]
    assert list(ev.EventLog(model)) == [ev.build(r) for r in model]


def test_a_long_record_log_matches_its_records_across_blocks() -> None:
    rng = random.Random(6)
    records = [_record(i) for i in range(3 * ev.RecordLog.CHUNK**2 + 7 * ev.RecordLog.CHUNK + 11)]
    log, at = ev.RecordLog(), 0
    while at < len(records):
        size = rng.choice([1, 1, 1, 2, 3, 70, 500])
        # append (the reducer's way for one record) and extend, across chunk and block boundaries
        log = log.append(records[at]) if size == 1 and rng.random() < 0.5 else log.extend(records[at:at + size])
        at += size
    assert len(log) == len(records)
    assert list(log) == records
    assert log == ev.RecordLog(records) and hash(log) == hash(ev.RecordLog(records))
    assert pickle.loads(pickle.dumps(log)) == log
    for _ in range(200):
        i = rng.randrange(-len(records), len(records))
        assert log[i] == records[i]
        a, b = sorted(rng.randrange(len(records) + 1) for _ in range(2))
        assert list(log[a:b]) == records[a:b]
    assert list(log[5::97]) == records[5::97]
    assert list(log[::-1]) == records[::-1]


def test_records_and_their_chunks_are_untracked_by_the_garbage_collector() -> None:
    log = ev.RecordLog().extend([_record(i) for i in range(2 * ev.RecordLog.CHUNK**2 + 3 * ev.RecordLog.CHUNK + 5)])
    # A tuple is untracked when a collection finds only untracked items in
    # it; one seen before its items waits for the next collection, so three
    # levels (records, chunks, blocks) take at most three.
    for _ in range(3):
        gc.collect()
    assert len(log) and not any(gc.is_tracked(record) for record in log)
    assert log._blocks and log._chunks and log._tail
    assert not any(gc.is_tracked(chunk) for chunk in log._chunks)
    assert not any(gc.is_tracked(block) or any(gc.is_tracked(c) for c in block) for block in log._blocks)


def test_a_record_log_append_leaves_the_original_unchanged() -> None:
    log = ev.RecordLog([_record(i) for i in range(ev.RecordLog.CHUNK - 1)])
    longer = log.append(_record(-1))
    assert len(log) == ev.RecordLog.CHUNK - 1
    assert len(longer) == ev.RecordLog.CHUNK
    assert longer[-1] == _record(-1)
    assert log != longer
