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
