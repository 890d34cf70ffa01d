# harness_agui.a13n on real a13n-harness 0.5 Runs made afresh: every item survives
# from_a13n -> encode -> decode -> to_a13n unchanged, the terminal result included (HarnessState, usage records,
# pydantic-ai's DeferredToolRequests of a suspended Run, all_messages()/new_messages(), structured output), and the
# Runs hold what the round trip is meant to cover.

from __future__ import annotations

import importlib.metadata
import warnings
from typing import Any

import pytest

from harness_agui import HarnessAguiObserver
from harness_agui.a13n import a13n_differences, from_a13n, to_a13n
from harness_agui.core.source import HarnessRunResultEvent
from harness_agui.wire.codec import decode, encode

pytest.importorskip("a13n_harness", reason="needs a13n-harness 0.5 (Python 3.13): make test-a13n-05")


def test_the_installed_release_is_a13n_harness_0_5() -> None:
    assert importlib.metadata.version("a13n-harness").startswith("0.5.")


def test_every_item_of_every_fresh_run_survives_the_round_trip_through_the_wire(scenarios: list[Any]) -> None:
    checked = 0
    for scenario in scenarios:
        for native in scenario.items:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a pydantic serializer warning would be a silent loss
                item = from_a13n(native)
                line = encode(item)
                assert decode(line) == item
                assert encode(decode(line)) == line
                back = to_a13n(decode(line), output_type=scenario.output_type)
            differences = a13n_differences(native, back)
            assert not differences, f"{scenario.name} {native.run_id} #{native.sequence}: {differences}"
            checked += 1
    assert checked > 150


def test_the_runs_cover_every_terminal_status_deferred_calls_binaries_and_structured_output(
        scenarios: list[Any]) -> None:
    statuses = {run[-1].result.status for s in scenarios for run in s.runs}
    assert statuses == {"completed", "suspended", "failed", "cancelled"}
    suspended = [run[-1].result for s in scenarios for run in s.runs if run[-1].result.status == "suspended"]
    assert any(r.deferred.calls for r in suspended) and any(r.deferred.approvals for r in suspended)
    kinds = {type(getattr(x, "event", None)).__name__ for s in scenarios for x in s.items}
    assert {"PartStartEvent", "PartDeltaEvent", "PartEndEvent", "FunctionToolCallEvent", "FunctionToolResultEvent",
            "DeferredToolRequestsEvent", "HarnessExtensionEvent", "InputTextEvent"} <= kinds
    nested = next(s for s in scenarios if s.name == "nested_subagents").runs[0]
    assert len({x.run_id for x in nested}) == 3  # the root and two forwarded children
    structured = next(s for s in scenarios if s.name == "structured_output").runs[0][-1].result
    assert structured.status == "completed" and type(structured.output).__name__ == "Weather"


def test_a_suspended_runs_deferred_calls_come_back_as_pydantic_ais_own_requests(scenarios: list[Any]) -> None:
    for scenario in scenarios:
        for run in scenario.runs:
            native = run[-1].result
            if native.status != "suspended":
                continue
            item = from_a13n(run[-1])
            assert isinstance(item, HarnessRunResultEvent)
            assert item.result.deferred is not None
            ids = [c.tool_call_id for c in (*item.result.deferred.calls, *item.result.deferred.approvals)]
            assert ids == [c.tool_call_id for c in (*native.deferred.calls, *native.deferred.approvals)]
            back = to_a13n(decode(encode(item))).result
            assert type(back.deferred) is type(native.deferred)
            assert back.deferred == native.deferred
            assert back.all_messages() == native.all_messages() and back.state == native.state


def test_structured_output_comes_back_as_its_type_and_as_json_without_it(scenarios: list[Any]) -> None:
    scenario = next(s for s in scenarios if s.name == "structured_output")
    native = scenario.runs[0][-1]
    item = decode(encode(from_a13n(native)))
    assert item.result.output == {"city": "Oslo", "temp_c": 4}
    assert to_a13n(item, output_type=scenario.output_type).result.output == native.result.output
    assert to_a13n(item).result.output == {"city": "Oslo", "temp_c": 4}


def test_each_run_projects_without_error(scenarios: list[Any]) -> None:
    for scenario in scenarios:
        for run in scenario.runs:
            # The root Run's items: a delegating stream interleaves its children's (each a Run of its own).
            observer = HarnessAguiObserver()
            events = [event for native in run if native.run_id == run[-1].run_id
                      for event in observer.observe(from_a13n(native))]
            assert observer.finished, (scenario.name, run[-1].run_id)
            assert events[-1].type.value in ("RUN_FINISHED", "RUN_ERROR")


def test_a_deferred_call_that_0_5_cannot_hold_is_refused_rather_than_dropped(scenarios: list[Any]) -> None:
    import attrs

    run = next(s for s in scenarios if s.name == "approval_denied").runs[0]
    item = from_a13n(run[-1])
    deferred = item.result.deferred
    named = attrs.evolve(deferred.approvals[0], target_identity="tool/fixture-tools/deploy")
    changed = attrs.evolve(item, result=attrs.evolve(item.result, deferred=attrs.evolve(deferred, approvals=(named,))))
    with pytest.raises(ValueError, match="a13n-harness 0.5 holds a deferred call as the model's ToolCallPart alone"):
        to_a13n(changed)
