# Forged checkpoints (issue 36, item 10): a well-formed checkpoint of a real
# observer, changed at the JSON level the way anyone who can write a CRC can
# change it (records swapped, dropped or of another kind; indices, counters,
# sequence numbers and ids changed; parts of the state moved about) and
# resealed with a header that agrees with it. Every such checkpoint is either
# refused with CheckpointError when restored, or restores an observer that
# works: observe() takes the items that follow (or raises the library's own
# error for an item that does not fit), and messages() and catch_up() answer.

from __future__ import annotations

import copy
import json
import zlib
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core import checkpoint as cp
from harness_agui.core.errors import AguiObservationError, CheckpointError, EventsNotRetainedError
from harness_agui.core.livelog import LiveLog
from harness_agui.core.records import _BY_TAG
from harness_agui.testing import complete_histories, live_histories, simulated_delegation
from harness_agui.testing.delegation import delegating_runs

HISTORIES = st.one_of(complete_histories(), live_histories(),
                      delegating_runs().map(lambda r: list(r.items))).filter(lambda items: len(items) >= 2)
MODES = st.sampled_from([{}, {"retain_events": False}, {"retain_events": False, "track_messages": True}])
_TAGS_BY_ARITY: dict[int, list[str]] = {}
for _tag, _kind in sorted(_BY_TAG.items()):
    _TAGS_BY_ARITY.setdefault(len(_kind.fields), []).append(_tag)


def _sections(data: bytes) -> tuple[dict[str, Any], list[bytes]]:
    at = len(cp.MAGIC)
    n = int.from_bytes(data[at:at + 4], "big")
    header = json.loads(data[at + 4:at + 4 + n])
    sections, at = [], at + 4 + n
    for length in header["sections"]:
        sections.append(data[at:at + length])
        at += length
    return header, sections


def _sealed(header: dict[str, Any], sections: list[bytes]) -> bytes:
    """The checkpoint of ``sections`` as a writer lays it out: the CRC covers the magic, the header and
    the sections before the sealed blocks, and the header holds each sealed block's CRC."""
    eager = 2 if header.get("retained") else 1
    header = dict(header, sections=[len(s) for s in sections],
                  blocks=[zlib.crc32(s).to_bytes(4, "big").hex() for s in sections[eager:]])
    head = json.dumps(header, separators=(",", ":")).encode()
    sealed = cp.MAGIC + len(head).to_bytes(4, "big") + head + b"".join(sections[:eager])
    return sealed + b"".join(sections[eager:]) + zlib.crc32(sealed).to_bytes(4, "big")


def _places(tree: Any, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Any]]:
    """Every (path, value) in a tagged JSON tree but the tags themselves."""
    out = [(path, tree)]
    if isinstance(tree, list):
        start = 1 if tree and isinstance(tree[0], str) else 0
        for i in range(start, len(tree)):
            out.extend(_places(tree[i], (*path, i)))
    return out


def _at(tree: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        tree = tree[i]
    return tree


def _set(tree: Any, path: tuple[int, ...], value: Any) -> None:
    _at(tree, path[:-1])[path[-1]] = value


def _is_record(value: Any) -> bool:
    return (isinstance(value, list) and len(value) >= 2 and isinstance(value[0], str) and value[0] in _BY_TAG
            and type(value[1]) is int)


@st.composite
def _mutated(draw: st.DrawFn, trees: list[Any]) -> list[Any]:
    """``trees`` (the state's tagged JSON, then the unsealed records) changed in one to three places."""
    trees = copy.deepcopy(trees)
    for _ in range(draw(st.integers(1, 3))):
        which = draw(st.sampled_from(range(len(trees))))
        places = [p for p in _places(trees[which]) if p[0]]
        if not places:
            continue
        how = draw(st.sampled_from(["int", "str", "swap", "drop", "dup", "kind", "record"]))
        ints = [p for p in places if type(p[1]) is int]
        strs = [p for p in places if type(p[1]) is str]
        lists = [p for p in places if isinstance(p[1], list) and len(p[1]) > 2]
        records = [p for p in places if _is_record(p[1])]
        if how == "int" and ints:
            path, value = draw(st.sampled_from(ints))
            _set(trees[which], path, draw(st.sampled_from([-1, 0, 1, 2, 3, value - 1, value + 1, 10**6])))
        elif how == "str" and strs:
            path, _ = draw(st.sampled_from(strs))
            _set(trees[which], path, draw(st.sampled_from([v for _, v in strs] + ["", "x", "text"])))
        elif how in ("swap", "drop", "dup") and lists:
            path, value = draw(st.sampled_from(lists))
            start = 1 if isinstance(value[0], str) else 0
            pair = value[0] in ("m", "im")
            i = draw(st.integers(start, len(value) - 1))
            j = draw(st.integers(start, len(value) - 1))
            if pair:  # move whole entries of a map
                i, j = start + (i - start) // 2 * 2, start + (j - start) // 2 * 2
                width = 2
            else:
                width = 1
            if how == "swap":
                value[i:i + width], value[j:j + width] = value[j:j + width], value[i:i + width]
            elif how == "drop":
                del value[i:i + width]
            else:
                value[j:j] = copy.deepcopy(value[i:i + width])
        elif how == "kind" and records:
            path, record = draw(st.sampled_from(records))
            record[0] = draw(st.sampled_from(_TAGS_BY_ARITY[len(_BY_TAG[record[0]].fields)]))
        elif how == "record" and records and len(records) >= 2:
            (p, a), (q, b) = draw(st.lists(st.sampled_from(records), min_size=2, max_size=2))
            _set(trees[which], p, copy.deepcopy(b))
            _set(trees[which], q, copy.deepcopy(a))
    return trees


def _forge(good: bytes, trees: list[Any]) -> bytes:
    """A checkpoint of the changed ``trees``, its header made to agree with them where it can."""
    header, sections = _sections(good)
    state_json = json.dumps(trees[0], ensure_ascii=False).encode("utf-8", "surrogatepass")
    new = [state_json]
    if len(trees) > 1:
        new.append(json.dumps(trees[1], ensure_ascii=False).encode("utf-8", "surrogatepass"))
        new.extend(sections[2:])
    header = dict(header)
    try:
        state = cp._decode(trees[0])
        header.update(thread_id=state.thread_id, run_id=state.run_id, last_sequence=state.last_sequence,
                      position=state.position, finished=state.finished)
        if len(trees) > 1:
            header["event_count"] = len(trees[1]) + 4096 * len(sections[2:])
        else:
            header["event_count"] = len(state.events)
    except Exception:  # noqa: BLE001 - a state that does not decode is refused whatever the header says
        pass
    return _sealed(header, new)


def _read(observer: HarnessAguiObserver) -> None:
    if observer.retains_events or observer.tracks_messages:
        observer.messages()
        observer.catch_up()
    else:  # documented: a live-only observer that does not track messages has none to give
        with pytest.raises(EventsNotRetainedError):
            observer.messages()


def _check_usable(observer: HarnessAguiObserver, rest: list[Any]) -> None:
    _read(observer)
    for item in rest:
        try:
            observer.observe(item)
        except AguiObservationError:
            pass  # the item does not fit the forged state: the library's own error, the observer unchanged
        _read(observer)
    if observer.retains_events:
        list(observer.snapshot())


@settings(max_examples=300)
@given(HISTORIES, MODES, st.data())
def test_a_forged_checkpoint_is_refused_or_restores_an_observer_that_works(
        items: list[Any], mode: dict[str, Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(items) - 1))
    original = HarnessAguiObserver(**mode)
    for item in items[:cut]:
        original.observe(item)
    good = original.checkpoint()
    _, sections = _sections(good)
    trees = [json.loads(s) for s in sections[:2]]
    forged = _forge(good, data.draw(_mutated(trees)))
    try:
        restored = HarnessAguiObserver.restore(forged)
    except CheckpointError:
        return
    _check_usable(restored, items[cut:])


# -- forgeries of each kind, one by one --------------------------------------------------------------
# Each is the state of a real observer with one part made to disagree, written as a checkpoint with a
# valid CRC and a header that agrees with it (``encode`` writes what it is given).

def _state_at(cut: int, **mode: Any) -> Any:
    observer = HarnessAguiObserver(**mode)
    for item in list(simulated_delegation())[:cut]:
        observer.observe(item)
    return observer.state


def _refused(state: Any) -> CheckpointError:
    with pytest.raises(CheckpointError) as error:
        HarnessAguiObserver.restore(cp.encode(state, processor_identity=None))
    assert error.value.problem == "corrupt"
    assert "does not hold together" in str(error.value)
    return error.value


def test_the_unchanged_states_of_these_forgeries_restore() -> None:
    for cut, mode in ((13, {}), (29, {}), (29, {"retain_events": False, "track_messages": True})):
        state = _state_at(cut, **mode)
        assert HarnessAguiObserver.restore(cp.encode(state, processor_identity=None)).state == state


def test_a_subagent_filed_under_another_run_id_is_refused() -> None:
    state = _state_at(29)
    sub = state.subagents["run-root-worker"]
    _refused(state._replace(subagents=state.subagents.discard("run-root-worker").set("run-root-other", sub)))


def test_subagents_that_descend_from_each_other_are_refused() -> None:
    state = _state_at(29)
    planner = attrs.evolve(state.subagents["run-root-planner"], parent_run_id="run-root-worker")
    _refused(state._replace(subagents=state.subagents.set("run-root-planner", planner)))


def test_two_subagents_announced_as_the_same_number_are_refused() -> None:
    state = _state_at(29)
    worker = attrs.evolve(state.subagents["run-root-worker"], order=0)
    _refused(state._replace(subagents=state.subagents.set("run-root-worker", worker)))


@pytest.mark.parametrize("record", [
    ("CUSTOM@subagent", 1, "name", "not JSON", "run-root-planner"),
    ("TEXT_MESSAGE_START@subagent", 1, "m1", "narrator", "run-root-planner"),
    ("TEXT_MESSAGE_CONTENT@subagent", 1, None, "delta", "run-root-planner"),
    ("TEXT_MESSAGE_START@subagent", 1, "m1", "assistant", "run-root-nobody"),
    ("NOT_A_KIND", 1, "x"),
])
def test_a_held_record_that_is_not_one_the_library_makes_is_refused(record: tuple[Any, ...]) -> None:
    state = _state_at(13)
    sub = state.subagents["run-root-planner"]
    assert sub.status == "pending" and sub.pending
    _refused(state._replace(subagents=state.subagents.set(
        "run-root-planner", attrs.evolve(sub, pending=(*sub.pending, record)))))


def test_an_owner_that_is_no_run_of_the_stream_is_refused() -> None:
    state = _state_at(29)
    (message_id, _), *_ = state.message_owners.items()
    _refused(state._replace(message_owners=state.message_owners.set(message_id, "run-elsewhere")))


def test_open_parts_out_of_index_order_are_refused() -> None:
    state = _state_at(5)
    part = state.root.parts[0]
    root = state.root._replace(parts=(part, part._replace(index=part.index - 1, message_id="other")))
    _refused(state._replace(root=root))


def _conversation_state(**changes: Any) -> Any:
    state = _state_at(29, retain_events=False, track_messages=True)
    log = state.events
    return state._replace(events=LiveLog(len(log), attrs.evolve(log.messages, **changes)))


def test_a_conversation_that_lists_a_tool_call_as_a_message_is_refused() -> None:
    c = _state_at(29, retain_events=False, track_messages=True).events.messages
    call_at = next(at for at, e in enumerate(c.settled) if type(e).__name__ == "ToolCall")
    _refused(_conversation_state(listed=c.listed.append(call_at)))


def test_a_conversation_whose_message_index_points_past_its_entries_is_refused() -> None:
    c = _state_at(29, retain_events=False, track_messages=True).events.messages
    (message_id, _), *_ = c.by_id.items()
    _refused(_conversation_state(by_id=c.by_id.set(message_id, len(c.settled) + 5)))


def test_a_conversation_whose_run_start_is_another_kind_of_record_is_refused() -> None:
    _refused(_conversation_state(started=("TEXT_MESSAGE_END", 1, "m")))
    _refused(_conversation_state(started=("RUN_STARTED", 1, None, "run")))


def test_a_record_of_the_log_that_does_not_build_its_event_is_refused() -> None:
    data = cp.encode(_state_at(12), processor_identity=None)
    header, sections = _sections(data)
    for bad in ('["CUSTOM",1,"name","not JSON"]', '["TEXT_MESSAGE_START",1,"m","narrator"]',
                '["TOOL_CALL_START",1,"c",null,null]'):
        records = json.loads(sections[1])
        records.append(json.loads(bad))
        with pytest.raises(CheckpointError) as error:
            HarnessAguiObserver.restore(_sealed(dict(header, event_count=header["event_count"] + 1),
                                                [sections[0], json.dumps(records).encode(), *sections[2:]]))
        assert error.value.problem == "corrupt"


def test_a_listed_message_the_client_s_list_cannot_hold_is_refused() -> None:
    c = _state_at(29, retain_events=False, track_messages=True).events.messages
    at = next(at for at in c.listed if type(c.settled[at]).__name__ == "Message" and c.settled[at].kind == "text")
    for change in ({"role": "system"}, {"role": "user", "chunks": None}, {"kind": "reasoning", "chunks": None},
                   {"tool_calls": ("call-never-started",)}):
        _refused(_conversation_state(settled=c.settled.set(at, attrs.evolve(c.settled[at], **change))))
