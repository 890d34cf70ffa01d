# Regressions found by a second reading of the core: each test names what
# used to go wrong.

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from ag_ui.core import TextMessageContentEvent

from harness_agui import (
    AguiObservationError,
    HarnessAguiObserver,
    HarnessEvent,
    ObservationEvent,
    ToolCallPart,
    ToolCallPartDelta,
    Usage,
    decode,
    encode,
)
from harness_agui.core.records import content_of, event_type
from harness_agui.core.source import MAX_JSON_INT
from harness_agui.testing import SourceBuilder


def test_token_counts_beyond_what_json_keeps_exactly_are_refused_at_construction() -> None:
    Usage(input_tokens=MAX_JSON_INT)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        Usage(input_tokens=MAX_JSON_INT + 1)


def test_a_total_that_would_exceed_the_json_bound_is_left_out_and_the_run_still_finishes() -> None:
    b = SourceBuilder().user("hi").completed("ok", input_tokens=2**52, output_tokens=2**52)
    observer = HarnessAguiObserver()
    for item in b.items:
        observer.observe(item)
    (usage,) = observer.snapshot()[-1].usage
    assert usage.input_tokens == 2**52 and usage.output_tokens == 2**52 and usage.total_tokens is None
    assert observer.finished


def test_observe_commits_only_after_its_events_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness_agui.core import records as _events

    b = SourceBuilder().user("hi").text(0, ["a"])
    observer = HarnessAguiObserver()
    observer.observe(b.items[0])
    before = observer.state

    def broken_build(self: object, record: object) -> object:
        raise RuntimeError("cannot build")

    monkeypatch.setattr(_events.Kind, "build", broken_build)
    with pytest.raises(RuntimeError):
        observer.observe(b.items[1])
    assert observer.state is before


def test_text_args_streamed_then_object_args_at_the_end_is_an_observation_error() -> None:
    b = SourceBuilder().part(0, ToolCallPart(tool_name="f", args=None, tool_call_id="c"),
                             [ToolCallPartDelta(args_delta='{"a":')],
                             ToolCallPart(tool_name="f", args={"a": 1}, tool_call_id="c"))
    observer = HarnessAguiObserver()
    for item in b.items[:-1]:
        observer.observe(item)
    before = observer.state
    with pytest.raises(AguiObservationError, match="object args"):
        observer.observe(b.items[-1])
    assert observer.state is before


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


def test_an_ambiguous_local_time_survives_the_wire_format_as_the_same_instant() -> None:
    at = datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"), fold=1)
    item = HarnessEvent(thread_id="t", run_id="r", sequence=0, occurred_at=at,
                        event=ObservationEvent(name="x", value=1))
    assert item.occurred_at.utcoffset() == at.utcoffset()
    assert item.occurred_at.timestamp() == at.timestamp()
    assert decode(encode(item)) == item


def test_replay_of_a_file_where_no_line_decodes_names_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    path.write_text('{"v":2,"kind":"event"}\n')
    done = subprocess.run([sys.executable, "-m", "harness_agui", "replay", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip() == f"harness-agui: {path}:1: unknown wire version 2 (this release reads version 1)"
    assert "Traceback" not in done.stderr
