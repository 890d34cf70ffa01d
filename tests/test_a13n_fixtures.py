# The journals of real a13n-harness Runs (tests/fixtures/a13n, written by
# tools/make_a13n_fixtures.py) on Python 3.11, without a13n-harness: every line
# decodes and encodes back to the same bytes, every file passes the history
# checks, and each Run's items are observed without error.
#
# A delegating Run's file interleaves its children's Runs (their own run ids
# and sequences) with its own items: the file is the root Run's stream, and
# it is observed whole.

from __future__ import annotations

from pathlib import Path

import pytest

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import (
    BinaryContent,
    BuiltinToolReturnPart,
    ContentList,
    EnqueuedMessagesEvent,
    FilePart,
    HarnessEvent,
    HarnessRunResultEvent,
    HarnessStreamEvent,
    PartStartEvent,
    ToolCallPart,
    ToolResultEvent,
)
from harness_agui.wire.codec import decode, encode
from harness_agui.wire.jsonl import Journal, check_journal

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "a13n"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.jsonl"))
DELEGATING = {"subagent", "nested_subagents", "failed_child"}


def items_of(name: str) -> list[HarnessStreamEvent]:
    return [decode(line, line=n) for n, line in enumerate(lines_of(name), 1)]


def lines_of(name: str) -> list[str]:
    return (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()


def test_the_fixtures_cover_every_real_scenario_the_generator_writes() -> None:
    assert {"tools_and_reasoning", "steering", "approval_denied", "deferred_call_and_approval", "cancel_during_tool",
            "failed_run", "provider_error_exhausted", "multimodal", "subagent", "nested_subagents", "failed_child",
            "structured_output"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_line_decodes_and_encodes_back_to_the_same_bytes(name: str) -> None:
    lines = lines_of(name)
    assert [encode(item) for item in items_of(name)] == lines


@pytest.mark.parametrize("name", NAMES)
def test_every_run_in_the_file_passes_the_history_checks(name: str) -> None:
    report = check_journal(FIXTURES / f"{name}.jsonl")
    assert report.ok, report
    roots = [r for r in report.runs if r.status is not None]
    assert len(roots) == (2 if name in {"approval_denied", "deferred_call_and_approval", "cancel_during_tool"} else 1)
    assert (len(report.runs) > len(roots)) == (name in DELEGATING)


@pytest.mark.parametrize("name", NAMES)
def test_each_root_run_is_observed_without_error(name: str) -> None:
    items = items_of(name)
    roots = [i.run_id for i in items if isinstance(i, HarnessRunResultEvent)]
    for root in roots:
        # A root Run's stream, chosen by its run id: its own items and its child Runs' (linked by their
        # announcements), in the file's order; a file may hold several root Runs one after the other.
        stream = list(Journal(FIXTURES / f"{name}.jsonl", run_id=root))
        assert [i for i in stream if i.run_id == root] == [i for i in items if i.run_id == root]
        if name in DELEGATING:
            assert stream == items
        observer = HarnessAguiObserver()
        for item in stream:
            observer.observe(item)
        assert observer.finished
        kinds = [e.type.value for e in observer.snapshot()]
        assert kinds[0] == "RUN_STARTED" and kinds[-1] in ("RUN_FINISHED", "RUN_ERROR")


def _payloads(name: str) -> list[object]:
    return [i.event for i in items_of(name) if isinstance(i, HarnessEvent)]


def test_the_fixtures_hold_the_forms_the_source_model_was_widened_for() -> None:
    outcomes = {p.outcome for n in NAMES for p in _payloads(n) if isinstance(p, ToolResultEvent)}
    assert {"success", "failed", "retried", "denied"} <= outcomes
    multimodal = [p.content for p in _payloads("multimodal") if isinstance(p, ToolResultEvent)]
    assert any(isinstance(c, BinaryContent) for c in multimodal)
    assert any(isinstance(c, ContentList) for c in multimodal)
    structured = _payloads("structured_output")
    starts = [p.part for p in structured if isinstance(p, PartStartEvent)]
    assert any(isinstance(p, ToolCallPart) and p.builtin for p in starts)
    assert any(isinstance(p, BuiltinToolReturnPart) for p in starts)
    assert any(isinstance(p, FilePart) and p.content.data.startswith(b"\x89PNG") for p in starts)
    assert any(isinstance(p, EnqueuedMessagesEvent) for p in _payloads("steering"))
    (suspended, _) = [i.result for i in items_of("deferred_call_and_approval") if isinstance(i, HarnessRunResultEvent)]
    assert suspended.deferred is not None and suspended.deferred.calls and suspended.deferred.approvals
    assert suspended.deferred.calls[0].target_identity == "tool/fixture-tools/ask_client"
    terminal = items_of("tools_and_reasoning")[-1]
    assert isinstance(terminal, HarnessRunResultEvent)
    assert terminal.result.state is not None and terminal.result.history is not None
    assert terminal.result.usage is not None and terminal.result.usage.tool_calls == 3


def _streams(name: str) -> list[list[HarnessStreamEvent]]:
    """The file cut into the streams of its root Runs: each ends with its root's
    terminal item and holds, in arrival order, the child Runs' items too."""
    streams: list[list[HarnessStreamEvent]] = [[]]
    for item in items_of(name):
        streams[-1].append(item)
        if isinstance(item, HarnessRunResultEvent):
            streams.append([])
    assert streams[-1] == []
    return streams[:-1]


@pytest.mark.parametrize("name", NAMES)
def test_every_real_stream_projects_onto_a_valid_agui_run_with_no_error_and_no_warning(name: str) -> None:
    import json

    from ag_ui_validate.pytest_plugin import validate_agui

    from harness_agui.wire.agui import agui_to_json

    earlier_calls: set[str] = set()
    for stream in _streams(name):
        observer = HarnessAguiObserver()
        events = [json.loads(agui_to_json(e)) for item in stream for e in observer.observe(item)]
        report = validate_agui(events)
        # A resumed Run answers calls an earlier Run of the Thread started: the validator, which sees one
        # Run, reports those (AGUI207); a client that saw both Runs holds the calls (tests/test_node_client.py).
        diagnostics = [d for d in report.diagnostics if d.severity in ("error", "warning")
                       and not (d.rule == "AGUI207" and events[d.event_index]["toolCallId"] in earlier_calls)]
        assert diagnostics == [], diagnostics
        earlier_calls |= {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"}
        # The same Run read back from its journal projects to the same events.
        again = HarnessAguiObserver()
        for line in [encode(item) for item in stream]:
            again.observe(decode(line))
        assert again.snapshot() == observer.snapshot()
        if name in DELEGATING:
            assert any(e["type"] == "SUBAGENT_STARTED" for e in events)
            assert all(e.get("subagentRunId") for e in events
                       if e["type"] == "TEXT_MESSAGE_START" and e.get("role") == "assistant"
                       and not e["messageId"].startswith(stream[0].run_id))
