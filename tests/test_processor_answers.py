# What the observer keeps of a processor's answer. apply_processor
# recognises an answer that changed nothing (the event it was shown, returned
# as it was) and keeps the record without capturing it again. That shortcut
# must report exactly what the full capture reports: a change made in place,
# a structural edit, an extra field, a look-alike value; and what it keeps of
# an accepted answer is plain data (a str subclass is kept as an exact str).

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import BaseEvent, TextMessageContentEvent

from harness_agui import AguiObservationError, HarnessAguiObserver
from harness_agui.core.records import content_of, event_type
from harness_agui.testing import SourceBuilder, simulated_run


def _observe_all(processor: Any) -> HarnessAguiObserver:
    observer = HarnessAguiObserver(processor=processor)
    for item in simulated_run():
        observer.observe(item)
    return observer


def test_a_processor_returning_each_event_unchanged_keeps_the_projection() -> None:
    assert _observe_all(lambda item, event: event).snapshot() == _observe_all(None).snapshot()
    assert _observe_all(lambda item, event: event).state == _observe_all(None).state


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
            event.shout = True  # type: ignore[attr-defined]  # AG-UI events allow extra fields
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


def test_a_processor_answering_with_a_str_subclass_leaves_an_exact_str_in_the_state() -> None:
    class Tagged(str):
        pass

    def processor(item: object, event: object) -> object:
        if isinstance(event, TextMessageContentEvent):
            event.delta = Tagged("X")
        return event

    observer = HarnessAguiObserver(processor)
    for item in SourceBuilder().text(0, ["a"]).items:
        observer.observe(item)
    contents = [r for r in observer.state.events if event_type(r) == "TEXT_MESSAGE_CONTENT"]
    assert [type(content_of(r)) for r in contents] == [str]
    assert [e.delta for e in observer.snapshot() if isinstance(e, TextMessageContentEvent)] == ["X"]
