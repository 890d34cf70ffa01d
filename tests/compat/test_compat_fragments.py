"""a13n.stream.fragment framing and the incremental assembler of the compat package."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import CustomEvent

from harness_agui.compat.a13n_stream_protocol.fragments import (
    FRAGMENT_EVENT_NAME,
    FRAME_CHARS,
    CustomEventAssembler,
    FragmentState,
    PendingFrames,
    fragment_custom_event,
)


def big(name: str = "customer.big", chars: int = 100_000) -> CustomEvent:
    return CustomEvent(name=name, value={"text": "é\"\\\n中" * (chars // 5), "n": 4}, timestamp=7, subagent_run_id="c")


def frames_json(event: CustomEvent, identity: str = "one") -> list[dict]:
    return [frame.model_dump(mode="json", by_alias=True) for frame in fragment_custom_event(event, identity=identity)]


def test_an_event_under_48_kib_is_returned_itself_unframed() -> None:
    event = CustomEvent(name="small", value="x" * (48 * 1024 - 100))
    assert fragment_custom_event(event, identity="i")[0] is event
    assert len(fragment_custom_event(event, identity="i")) == 1


def test_an_event_over_48_kib_becomes_ordered_frames_of_4096_characters_under_64_kib_each() -> None:
    event = big()
    text = event.model_dump_json(by_alias=True)
    frames = fragment_custom_event(event, identity="one")
    assert len(frames) == -(-len(text) // FRAME_CHARS) > 1
    assert [f.value["index"] for f in frames] == list(range(len(frames)))
    assert all(f.name == FRAGMENT_EVENT_NAME and f.value["id"] == "one" and f.value["count"] == len(frames)
               for f in frames)
    assert all(f.timestamp == 7 and f.subagent_run_id == "c" for f in frames)
    assert "".join(f.value["data"] for f in frames) == text
    assert all(len(f.model_dump_json(by_alias=True).encode()) < 64 * 1024 for f in frames)


def test_the_assembler_returns_the_original_event_json_once_its_last_frame_arrives() -> None:
    event = big()
    assembler = CustomEventAssembler()
    results = [assembler.accept(frame) for frame in frames_json(event)]
    assert results[:-1] == [None] * (len(results) - 1)
    assert results[-1] == event.model_dump(mode="json", by_alias=True)
    assert not assembler.gap and assembler.export().pending == {}


def test_an_event_that_is_not_a_frame_passes_through_as_the_same_object() -> None:
    payload = {"type": "CUSTOM", "name": "other", "value": 1}
    assert CustomEventAssembler().accept(payload) is payload


def test_interleaved_frames_of_two_events_assemble_both_in_completion_order() -> None:
    one, two = big("one"), big("two")
    assembler = CustomEventAssembler()
    done = [result for pair in zip(frames_json(one, "a"), frames_json(two, "b"), strict=True)
            for result in map(assembler.accept, pair) if result is not None]
    assert [event["name"] for event in done] == ["one", "two"]


@pytest.mark.parametrize("cut", ["first", "middle", "repeat"])
def test_a_missing_or_repeated_frame_sets_gap_and_never_yields_a_partial_event(cut: str) -> None:
    frames = frames_json(big())
    if cut == "first":
        frames = frames[1:]
    elif cut == "middle":
        frames = frames[:2] + frames[3:]
    else:
        frames = frames[:2] + frames[1:]
    assembler = CustomEventAssembler()
    assert all(assembler.accept(frame) is None for frame in frames)
    assert assembler.gap


@pytest.mark.parametrize("value", [None, "text", {"id": "a", "index": 2, "count": 2, "data": ""},
                                   {"id": 1, "index": 0, "count": 1, "data": ""}])
def test_a_malformed_frame_sets_gap(value: object) -> None:
    assembler = CustomEventAssembler()
    assert assembler.accept({"type": "CUSTOM", "name": FRAGMENT_EVENT_NAME, "value": value}) is None
    assert assembler.gap


def test_the_byte_budget_drops_the_assembly_that_would_exceed_it() -> None:
    assembler = CustomEventAssembler(max_bytes=5000)
    assert all(assembler.accept(frame) is None for frame in frames_json(big()))
    assert assembler.gap and assembler.export().pending == {}


def test_starting_one_more_assembly_than_max_pending_evicts_the_oldest_and_sets_gap() -> None:
    assembler = CustomEventAssembler(max_pending=2)
    firsts = [frames_json(big(str(i)), str(i))[0] for i in range(3)]
    for frame in firsts:
        assembler.accept(frame)
    assert list(assembler.export().pending) == ["1", "2"] and assembler.gap


def test_frames_whose_joined_text_is_not_a_custom_event_set_gap() -> None:
    bad = [{"type": "CUSTOM", "name": FRAGMENT_EVENT_NAME, "value": {"id": "x", "index": i, "count": 2, "data": d}}
           for i, d in enumerate(['{"type": "TEXT', '_MESSAGE_END"}'])]
    assembler = CustomEventAssembler()
    assert [assembler.accept(frame) for frame in bad] == [None, None] and assembler.gap


def test_a_frame_that_carries_a_frame_is_refused() -> None:
    inner = CustomEvent(name=FRAGMENT_EVENT_NAME, value={"id": "z", "index": 0, "count": 1, "data": "x" * 60000})
    assembler = CustomEventAssembler()
    assert all(assembler.accept(frame) is None for frame in frames_json(inner)) and assembler.gap


def test_export_and_restore_mid_assembly_continue_to_the_same_event_through_json() -> None:
    event, frames = big(), frames_json(big())
    first = CustomEventAssembler()
    for frame in frames[:3]:
        first.accept(frame)
    state = FragmentState.model_validate_json(first.export().model_dump_json())
    second = CustomEventAssembler.restore(state)
    assert [second.accept(frame) for frame in frames[3:]][-1] == event.model_dump(mode="json", by_alias=True)
    assert len(first.export().pending["one"].parts) == 3  # the restored copy shares nothing


def test_the_exported_state_has_the_json_shape_hosts_persist() -> None:
    assembler = CustomEventAssembler()
    assembler.accept(frames_json(big())[0])
    state = json.loads(assembler.export().model_dump_json())
    assert set(state) == {"pending", "gap", "max_bytes", "max_pending"}
    assert set(state["pending"]["one"]) == {"count", "parts", "size"}
    assert state["pending"]["one"]["size"] == len(state["pending"]["one"]["parts"][0].encode())


@pytest.mark.parametrize("bounds", [{"max_bytes": 0}, {"max_pending": 0}])
def test_bounds_below_one_are_refused(bounds: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        CustomEventAssembler(**bounds)


# -- restored bounds and the cost of many open assemblies (issue 36, item 11) ----------------------------------

def _first_frame(identity: str, data: str = "x", count: int = 2) -> dict:
    return {"type": "CUSTOM", "name": FRAGMENT_EVENT_NAME,
            "value": {"id": identity, "index": 0, "count": count, "data": data}}


@pytest.mark.parametrize("state", [
    {"max_pending": 10**9},
    {"max_bytes": 2**62},
    {"max_pending": 1, "pending": {"a": {"count": 2, "parts": ["x"], "size": 1},
                                   "b": {"count": 2, "parts": ["y"], "size": 1}}},
    {"pending": {"a": {"count": 2, "parts": ["x"], "size": 0}}},
    {"pending": {"a": {"count": 2, "parts": ["é"], "size": 1}}},
    {"pending": {"a": {"count": 2, "parts": ["x", "y"], "size": 2}}},
    {"pending": {"a": {"count": 0, "parts": [], "size": 0}}},
    {"pending": {"a": {"count": 3, "parts": [], "size": 0}}},
    {"max_bytes": 100, "pending": {"a": {"count": 2, "parts": ["x" * 90], "size": 90},
                                   "b": {"count": 2, "parts": ["y" * 90], "size": 90}}},
])
def test_a_restored_state_with_absurd_bounds_or_counts_that_do_not_add_up_is_refused(state: dict) -> None:
    text = json.dumps(state)
    with pytest.raises(ValueError):
        FragmentState.model_validate_json(text)
    unchecked = FragmentState().model_dump() | state
    unchecked["pending"] = {k: PendingFrames.model_construct(**v) for k, v in unchecked["pending"].items()}
    with pytest.raises(ValueError):  # a state built without validation is checked by restore itself
        CustomEventAssembler.restore(FragmentState.model_construct(**unchecked))


def test_a_state_at_the_documented_limits_restores() -> None:
    state = FragmentState.model_validate_json(json.dumps(
        {"max_pending": 2**16, "max_bytes": 2**30, "pending": {"a": {"count": 2, "parts": ["é"], "size": 2}}}))
    assembler = CustomEventAssembler.restore(state)
    assert assembler.export() == state


def test_bounds_above_the_documented_limits_are_refused_by_the_constructor_too() -> None:
    with pytest.raises(ValueError):
        CustomEventAssembler(max_pending=2**16 + 1)
    with pytest.raises(ValueError):
        CustomEventAssembler(max_bytes=2**30 + 1)


def test_empty_frames_count_toward_the_byte_budget() -> None:
    assembler = CustomEventAssembler(max_bytes=10_000)
    frames = [{"type": "CUSTOM", "name": FRAGMENT_EVENT_NAME,
               "value": {"id": "empty", "index": i, "count": 10**6, "data": ""}} for i in range(10_000)]
    assert all(assembler.accept(frame) is None for frame in frames)
    assert assembler.gap and assembler.export().pending == {}


def _python_calls(n: int) -> int:
    """Python-level calls (function calls and generator resumptions) made while
    ``n`` events are open at once: a deterministic measure of the work."""
    import sys

    assembler = CustomEventAssembler.restore(FragmentState(max_pending=2**16))
    frames = [_first_frame(f"id-{i}") for i in range(n)]
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        for frame in frames:
            assembler.accept(frame)
    finally:
        sys.setprofile(None)
    assert len(assembler.export().pending) == n and not assembler.gap
    return calls


def test_the_work_of_assembling_grows_linearly_with_the_events_open_at_once() -> None:
    small, large = _python_calls(5_000), _python_calls(20_000)
    assert large < 5 * small, (small, large)  # linear: 4 times the work; quadratic: 16
