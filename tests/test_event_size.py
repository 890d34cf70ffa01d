# Every event fits a Host's transport: no event's wire JSON is larger than
# the observer's max_event_bytes (64 KiB by default). A long delta becomes
# consecutive deltas, a large CUSTOM its ordered fragments, any other large
# event fragments of harness.event followed by a stand-in a client can apply;
# assemble_custom gives back the projection without a limit, byte for byte,
# and replay cuts alike.

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver, assemble_custom
from harness_agui.core.state import MAX_EVENT_BYTES, MIN_EVENT_BYTES
from harness_agui.testing import SourceBuilder, complete_histories, delegating_histories, live_histories
from harness_agui.wire.agui import agui_to_json

TWO_MIB = 2 * 1024 * 1024
_DELTAS = ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS")


def _wire(events: Any) -> list[dict[str, Any]]:
    return [json.loads(agui_to_json(e)) for e in events]


def _joined(events: Any) -> list[dict[str, Any]]:
    """The events with consecutive deltas of one message or call at one instant joined: what splitting a delta
    leaves unchanged."""
    out: list[dict[str, Any]] = []
    for e in _wire(events):
        last = out[-1] if out else None
        if (last is not None and e["type"] in _DELTAS and last["type"] == e["type"]
                and last.get("messageId", last.get("toolCallId")) == e.get("messageId", e.get("toolCallId"))
                and last["timestamp"] == e["timestamp"] and last.get("subagentRunId") == e.get("subagentRunId")):
            last["delta"] += e["delta"]
        else:
            out.append(e)
    return out


def _observed(items: list[Any], **options: Any) -> list[Any]:
    observer = HarnessAguiObserver(**options)
    events = [e for item in items for e in observer.observe(item)]
    replayed = HarnessAguiObserver(**options)
    asyncio.run(replayed.resume(items))
    assert _wire(replayed.snapshot()) == _wire(events)  # replay cuts alike
    return events


def _sizes(events: Any) -> list[int]:
    return [len(agui_to_json(e).encode("utf-8")) for e in events]


def _check(items: list[Any], limit: int = MAX_EVENT_BYTES) -> list[Any]:
    limited = _observed(items, max_event_bytes=limit)
    whole = _observed(items, max_event_bytes=None)
    assert max(_sizes(limited), default=0) <= limit
    assert _joined(assemble_custom(limited)) == _joined(whole)
    return limited


def _valid(events: Any) -> None:
    report = validate_agui(_wire(events))
    assert [d for d in report.diagnostics if d.severity in ("error", "warning")] == []


def test_a_two_mib_prompt_becomes_deltas_that_fit_and_rejoin_exactly() -> None:
    prompt = "Résumé \"quoted\" text\n" * (TWO_MIB // 20)
    b = SourceBuilder().user(prompt).request().text(0, ["ok"]).completed("ok")
    events = _check(b.items)
    _valid(events)
    contents = [e for e in _wire(events) if e["type"] == "TEXT_MESSAGE_CONTENT" and ":input-" in e["messageId"]]
    assert len(contents) > 30 and "".join(e["delta"] for e in contents) == prompt


def test_a_two_mib_tool_result_answers_its_call_and_travels_whole_in_fragments() -> None:
    result = {"rows": ["x" * 1000] * (TWO_MIB // 1000)}
    b = SourceBuilder().user("go").request().tool_call(0, "dump", "c", ["{}"])
    b.tool_result("c", "dump", result).request().text(0, ["done"]).completed("done")
    events = _check(b.items)
    _valid(events)
    wire = _wire(events)
    (stand_in,) = [e for e in wire if e["type"] == "TOOL_CALL_RESULT"]
    assert stand_in["toolCallId"] == "c" and stand_in["content"] == ""
    assert stand_in["metadata"]["harness"] == {"outcome": "success", "tool_name": "dump", "fragmented": True}
    (restored,) = [e for e in _wire(assemble_custom(events)) if e["type"] == "TOOL_CALL_RESULT"]
    assert json.loads(restored["content"]) == result


def test_a_large_run_result_and_error_message_have_stand_ins() -> None:
    big = "é" * (TWO_MIB // 4)
    finished = _check(SourceBuilder().observation("n", None).completed({"report": big}).items)
    assert _wire(finished)[-1]["type"] == "RUN_FINISHED" and "result" not in _wire(finished)[-1]
    _valid(finished)
    failed = _check(SourceBuilder().observation("n", None).failed("boom", big).items)
    last = _wire(failed)[-1]
    assert last["type"] == "RUN_ERROR" and last["message"].endswith("…") and big.startswith(last["message"][:-1])
    _valid(failed)


def test_a_suspended_run_whose_interrupts_outgrow_the_limit_still_finishes_with_their_ids() -> None:
    # Found by the property below: at 1024 bytes (the least limit then), two approvals' interrupts (message,
    # schema, metadata) outgrew the limit and the stand-in kept them whole, so none was sent and the run never
    # finished. At the least limit now (MIN_EVENT_BYTES) it takes more approvals.
    approvals = [(f"call-{i}", "lookup", None) for i in range(60)]
    b = SourceBuilder().observation("n", None).suspended(*approvals)
    events = _check(b.items, MIN_EVENT_BYTES)
    last = _wire(events)[-1]
    assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "interrupt"
    assert last["outcome"]["interrupts"] == [
        {"id": f"call-{i}:approval", "reason": "tool_approval", "toolCallId": f"call-{i}"} for i in range(60)]
    _valid(events)


def test_a_large_custom_value_is_cut_into_fragments_of_its_own_name() -> None:
    b = SourceBuilder().observation("big", {"blob": "\u2603" * 200_000}).completed("x")
    events = _check(b.items)
    fragments = [e for e in _wire(events) if e["type"] == "CUSTOM"]
    assert len(fragments) > 1 and {e["name"] for e in fragments} == {"harness.observation"}


def test_without_a_limit_nothing_is_cut() -> None:
    b = SourceBuilder().user("p" * 200_000).request().text(0, ["ok"]).completed("ok")
    events = _observed(b.items, max_event_bytes=None)
    assert max(_sizes(events)) > 200_000
    assert HarnessAguiObserver(max_event_bytes=None).options.max_event_bytes is None


def test_a_limit_below_what_any_event_needs_is_refused() -> None:
    with pytest.raises(ValueError, match=f"at least {MIN_EVENT_BYTES}"):
        HarnessAguiObserver(max_event_bytes=100)
    with pytest.raises(ValueError, match=f"at least {MIN_EVENT_BYTES}"):
        HarnessAguiObserver(max_event_bytes=MIN_EVENT_BYTES - 1)
    assert HarnessAguiObserver(max_event_bytes=MIN_EVENT_BYTES).options.max_event_bytes == MIN_EVENT_BYTES
    with pytest.raises(TypeError):
        HarnessAguiObserver(max_event_bytes="64k")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.one_of(complete_histories(), live_histories(), delegating_histories()),
       st.sampled_from([MIN_EVENT_BYTES, 65536]))
def test_no_event_of_any_run_exceeds_the_limit_and_assembly_restores_the_unlimited_projection(
        items: list[Any], limit: int) -> None:
    events = _check(items, limit)
    if items and type(items[-1]).__name__ == "HarnessRunResultEvent" and items[-1].run_id == items[0].run_id:
        report = validate_agui(_wire(events))
        whole = validate_agui(_wire(_observed(items, max_event_bytes=None)))
        # Cutting adds no finding the uncut projection does not have.
        assert {d.rule for d in report.diagnostics if d.severity in ("error", "warning")} <= {
            d.rule for d in whole.diagnostics if d.severity in ("error", "warning")}


def test_the_conversation_folds_a_fragmented_tool_result_as_the_client_does_and_keeps_it_whole() -> None:
    from harness_agui.core.conversation import EMPTY_CONVERSATION, Notice, fold_events, messages_json

    result = {"rows": ["x" * 1000] * (TWO_MIB // 1000)}
    b = SourceBuilder().user("go").request().tool_call(0, "dump", "c", ["{}"])
    b.tool_result("c", "dump", result).request().text(0, ["done"]).completed("done")
    events = _check(b.items)
    folded = fold_events(EMPTY_CONVERSATION, events)
    (tool,) = [m for m in messages_json(folded) if m["role"] == "tool"]
    assert tool["toolCallId"] == "c" and tool["content"] == ""  # the stand-in, as @ag-ui/client applies it
    (carried,) = [e for e in folded.entries if isinstance(e, Notice) and e.name == "harness.event"]
    whole = carried.value.value  # the timeline keeps the event the fragments carried, whole
    assert whole["type"] == "TOOL_CALL_RESULT" and json.loads(whole["content"]) == result
    assert folded.fragments == ()
