"""The conversation fold (harness_agui.core.conversation): the one
interpretation of AG-UI events (and of the records they are built from) that
the client's message list, catch-up, the terminal and the notebook views all
read."""

from __future__ import annotations

import pickle
from typing import Any

import attrs
import pytest
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEncryptedValueEvent,
    RunStartedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from hypothesis import given
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core.conversation import (
    EMPTY_CONVERSATION,
    Conversation,
    Input,
    JsonValue,
    Message,
    ModelRequest,
    Notice,
    Outcome,
    RunStart,
    ToolCall,
    ToolResult,
    catch_up_events,
    fold_event,
    fold_events,
    fold_records,
    messages_json,
)
from harness_agui.core.errors import EventsNotRetainedError
from harness_agui.core.source import InputEvent
from harness_agui.debug.views import conversation_html
from harness_agui.testing import (
    SourceBuilder,
    complete_histories,
    delegating_runs,
    live_histories,
    simulated_delegation,
    simulated_run,
)


def fold(events: list[BaseEvent]) -> Conversation:
    return fold_events(EMPTY_CONVERSATION, events)


def _events(items: list[Any]) -> list[BaseEvent]:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return list(observer.snapshot())


def test_the_demo_run_folds_into_entries_in_the_order_they_started() -> None:
    conv = fold(_events(simulated_run()))
    kinds = [type(e).__name__ for e in conv.entries]
    assert kinds[:5] == ["RunStart", "Message", "ModelRequest", "Message", "Message"]  # the question is a message
    assert kinds[-1] == "Outcome" and conv.outcome is conv.entries[-1]
    assert (conv.thread_id, conv.run_id) == ("thread-demo", "run-demo")
    reasoning, text = conv.entries[3], conv.entries[4]
    assert isinstance(reasoning, Message) and reasoning.kind == "reasoning" and reasoning.signed and reasoning.ended
    assert isinstance(text, Message) and text.text == "Let me check the forecast and do the conversion."
    call = conv.call("call-forecast-1")
    assert isinstance(call, ToolCall) and call.name == "get_forecast" and call.ended
    assert call.args == '{"city": "Lyon", "day": "tomorrow"}' and call.parent_message_id == text.message_id
    results = [e for e in conv.entries if isinstance(e, ToolResult)]
    assert [(r.tool_call_id, r.outcome) for r in results][:2] == [("call-forecast-1", "failed"),
                                                                  ("call-convert-1", "success")]
    assert results[0].content.value == '{"error":"upstream timeout"}' and results[0].in_run
    assert conv.outcome is not None and conv.outcome.status == "success"
    assert conv.outcome.usage[0].input_tokens == 812 and conv.outcome.usage[0].total_tokens == 908


def test_folding_in_two_parts_gives_the_same_conversation_as_folding_at_once() -> None:
    events = _events(simulated_run())
    whole = fold(events)
    for cut in (0, 1, 7, 30, len(events) - 1, len(events)):
        assert fold_events(fold(events[:cut]), events[cut:]) == whole


def test_a_conversation_is_frozen_pickles_and_shares_nothing_mutable_with_its_events() -> None:
    events = _events(SourceBuilder().observation("note", {"b": 1, "a": [1, 2]}).completed({"z": 1, "y": 2}).items)
    conv = fold(events)
    notice = conv.entries[1]
    assert isinstance(notice, Notice) and notice.category == "observation"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        notice.name = "other"  # type: ignore[misc]
    copy = notice.value.value
    copy["b"] = 99
    assert notice.value.value == {"b": 1, "a": [1, 2]}
    assert list(notice.value.value) == ["b", "a"]  # object keys keep their order
    events[1].value["payload"]["value"]["b"] = 42  # type: ignore[attr-defined]
    assert notice.value.value["b"] == 1
    assert pickle.loads(pickle.dumps(conv)) == conv
    assert list(conv.outcome.result.value) == ["z", "y"]  # type: ignore[union-attr]


def test_input_split_into_chunks_is_one_whole_entry_and_a_slice_from_the_middle_is_not_whole() -> None:
    text = " ".join(f"w{i:05d}" for i in range(3000))  # three CUSTOM chunks
    events = _events(SourceBuilder().event(InputEvent(input_id="in-1", source="context", content=text))
                     .completed(None).items)
    (entry,) = [e for e in fold(events).entries if isinstance(e, Input)]
    assert entry.text == text and entry.whole and entry.chunk_count == 3
    (tail,) = [e for e in fold(events[2:]).entries if isinstance(e, Input)]
    assert tail.first_chunk == 1 and tail.complete and not tail.whole


def test_an_oversized_custom_is_joined_and_a_cut_one_is_kept_pending() -> None:
    events = _events(SourceBuilder().observation("big", {"blob": "z" * 100_000}).items)
    pieces = [e for e in events if isinstance(e, CustomEvent) and "fragment" in e.value]
    assert len(pieces) > 1
    conv = fold(events)
    assert [e.name for e in conv.entries if isinstance(e, Notice)] == ["big"] and not conv.fragments
    cut = fold(events[:-1])
    assert len(cut.fragments) == len(pieces) - 1 and not [e for e in cut.entries if isinstance(e, Notice)]
    interrupted = fold([*events[:-1], StepStartedEvent(step_name="x"), events[-1]])
    notes = [e for e in interrupted.entries if isinstance(e, Notice) and e.category == "fragments"]
    assert notes and "incomplete before a STEP_STARTED event" in notes[0].value.value


def test_events_of_a_slice_that_starts_mid_message_open_an_entry_marked_not_started() -> None:
    conv = fold([TextMessageContentEvent(message_id="m", delta="orphan"), TextMessageEndEvent(message_id="m")])
    (msg,) = conv.entries
    assert msg == Message("text", "m", chunks=msg.chunks, started=False, ended=True) and msg.text == "orphan"


def test_a_signature_without_its_message_and_an_unknown_event_become_notices() -> None:
    conv = fold([ReasoningEncryptedValueEvent(subtype="message", entity_id="r", encrypted_value="x"),
                 StepStartedEvent(step_name="plan")])
    assert [(n.category, n.name) for n in conv.entries if isinstance(n, Notice)] == [
        ("event", "REASONING_ENCRYPTED_VALUE"), ("event", "STEP_STARTED")]
    assert conv.entries[1].value == JsonValue('{"stepName":"plan"}')  # type: ignore[union-attr]


def test_odd_custom_values_never_make_the_fold_raise() -> None:
    odd = [
        CustomEvent(name="harness.input.user", value={"payload": {"content": 5}, "chunk": {"index": "x"}}),
        CustomEvent(name="harness.input.user", value={"payload": {"content": "a"}, "chunk": {"index": 1, "count": -3}}),
        CustomEvent(name="harness.extension.lifecycle",
                    value={"payload": {"payload": {"type": "model_request_started"}}}),
        CustomEvent(name="harness.observation", value={"payload": "not an object"}),
        CustomEvent(name="harness.x", value={"fragment": {"index": 5, "count": 2}, "data": "{"}),
        CustomEvent(name="app.thing", value={1, 2}),
        CustomEvent(name="harness.tool_result", value={"payload": {}}),
    ]
    conv = fold(odd)
    assert len(conv.entries) == len(odd)
    assert isinstance(conv.entries[2], ModelRequest) and conv.entries[2].index.value is None
    assert isinstance(conv.entries[6], ToolResult) and not conv.entries[6].in_run


def test_fold_event_refuses_what_is_not_an_ag_ui_event() -> None:
    with pytest.raises(TypeError, match="AG-UI event"):
        fold_event(EMPTY_CONVERSATION, {"type": "RUN_STARTED"})  # type: ignore[arg-type]


def test_the_outcome_of_a_failed_and_of_a_suspended_run() -> None:
    failed = fold(_events(SourceBuilder().failed("overloaded", "try later").items)).outcome
    assert failed == Outcome("error", message="try later", code="overloaded", at=failed.at)  # type: ignore[union-attr]
    b = SourceBuilder().request().tool_call(0, "rm", "c1", ['{"p": 1}'])
    suspended = fold(_events(b.suspended(("c1", "rm", {"p": 1})).items)).outcome
    assert suspended is not None and suspended.status == "interrupt"
    (it,) = suspended.interrupts
    assert (it.id, it.reason, it.tool_call_id) == ("c1:approval", "tool_approval", "c1")
    assert it.args is not None and it.args.value == {"p": 1}
    assert isinstance(fold(_events(b.items)).entries[0], RunStart)


# -- one fold for records and events, read by the client's list and the views --------------------

STREAMS = st.one_of(complete_histories(), live_histories(), delegating_runs().map(lambda r: list(r.items)))


def _observed(items: list[Any], **options: Any) -> HarnessAguiObserver:
    observer = HarnessAguiObserver(**options)
    for item in items:
        observer.observe(item)
    return observer


@given(STREAMS)
def test_the_records_and_the_events_built_from_them_fold_into_the_same_conversation(items: list[Any]) -> None:
    observer = _observed(items)
    from_records = fold_records(EMPTY_CONVERSATION, observer.state.events)
    from_events = fold(list(observer.snapshot()))
    assert list(from_events.entries) == list(from_records.entries)
    assert messages_json(from_events) == messages_json(from_records)
    assert messages_json(from_events, streaming=True) == messages_json(from_records, streaming=True)
    assert catch_up_events(from_events) == catch_up_events(from_records) == observer.catch_up()


@given(STREAMS)
def test_every_value_the_fold_builds_equals_the_one_its_public_constructor_builds(items: list[Any]) -> None:
    # The fold copies its values with _fast.with_fields: what it builds must be what attrs builds.
    conv = EMPTY_CONVERSATION
    for record in _observed(items).state.events:
        conv = fold_records(conv, [record])
        for value in (conv, *conv.entries, *conv.open, *conv.open_calls):
            public = type(value)(**{f.name: getattr(value, f.name) for f in attrs.fields(type(value))})
            assert public == value and type(public) is type(value)
            if hasattr(public, "__dict__"):
                assert list(vars(public).items()) == list(vars(value).items())


def test_a_message_still_streaming_shows_what_streamed_so_far() -> None:
    observer, deltas = HarnessAguiObserver(), 0
    for item in simulated_run():  # up to the second delta of the assistant's text
        events: Any = observer.observe(item)
        deltas += sum(e.type.value == "TEXT_MESSAGE_CONTENT" and e.message_id.endswith(":text") for e in events)
        if deltas == 2:
            break
    conv = fold_records(EMPTY_CONVERSATION, observer.state.events)
    (opened,) = conv.open
    text = conv.message(opened.id)
    assert isinstance(text, Message) and text.text == "Let me " and not text.ended
    assert conv.settled[opened.at].text == ""  # what streams stays with its open entry until its end
    client = {m["id"]: m for m in messages_json(conv)}
    assert client[opened.id]["content"] == "Let me "
    assert {m["id"]: m for m in messages_json(conv, streaming=True)}[opened.id]["content"] == ""


def test_a_tool_call_without_an_assistant_message_gets_a_holder_that_the_views_do_not_draw() -> None:
    observer = _observed(simulated_run())
    conv = fold_records(EMPTY_CONVERSATION, observer.state.events)
    holder = conv.message("call-forecast-2")  # its start names no parent message
    assert isinstance(holder, Message) and holder.holder and holder.tool_calls == ("call-forecast-2",)
    client = {m["id"]: m for m in messages_json(conv)}
    assert "content" not in client["call-forecast-2"] and client["call-forecast-2"]["role"] == "assistant"
    page = conversation_html(observer)  # a row per text message (the user's too), none for the holder
    texts = [e for e in conv.entries if isinstance(e, Message) and e.kind == "text"]
    assert page.count('class="row assistant"') == len(texts) - 1 == 3


def test_content_for_a_message_that_starts_again_stays_in_it() -> None:
    # The client keeps the message it has when a start comes again, and appends what follows.
    stream = [RunStartedEvent(thread_id="t", run_id="r"),
              TextMessageStartEvent(message_id="m", role="assistant"),
              TextMessageContentEvent(message_id="m", delta="a"),
              TextMessageStartEvent(message_id="m", role="assistant"),
              TextMessageContentEvent(message_id="m", delta="b")]
    conv = fold(stream)
    assert [m["content"] for m in messages_json(conv)] == ["ab"]
    caught: Any = catch_up_events(conv)  # a client joining now: "a" in the snapshot, "b" streamed again
    assert [e.type.value for e in caught] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "TEXT_MESSAGE_START",
                                              "TEXT_MESSAGE_CONTENT"]
    assert caught[1].messages[0].content == "a" and caught[3].delta == "b"


def test_the_views_of_a_live_only_observer_that_tracks_messages_are_those_of_a_retained_one() -> None:
    items = simulated_delegation()
    live = _observed(items, retain_events=False, track_messages=True)
    assert conversation_html(live) == conversation_html(_observed(items))
    with pytest.raises(EventsNotRetainedError, match="track_messages"):
        conversation_html(_observed(items, retain_events=False))
