# The conversation view: what a person sees of a projection. Runs are built
# with SourceBuilder and projected by the observer, so these tests read the
# same events `harness-agui replay --format pretty` prints.

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import (
    CustomEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_agui import HarnessAguiObserver
from harness_agui.core.source import HarnessStreamEvent, InputEvent
from harness_agui.debug.pretty import display_width, iter_conversation, render_conversation
from harness_agui.testing import SourceBuilder, complete_histories, live_histories, simulated_run


def view(items: list[HarnessStreamEvent], **kw: Any) -> str:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return render_conversation(observer.snapshot(), **kw)


def assert_fits(text: str, width: int = 100) -> None:
    for line in text.splitlines():
        assert display_width(line) <= width, line


def test_the_demo_run_reads_as_a_conversation_in_order() -> None:
    text = view(simulated_run(), notices=True)
    expected_in_order = [
        "== run run-demo (thread thread-demo), times in UTC ==",
        "09:00:00.000  user\n  Will I need an umbrella in Lyon tomorrow? Also convert 12 C to Fahrenheit.",
        "-- model request 0 --",
        "reasoning (signed)\n  The user wants a forecast for Lyon",
        "assistant\n  Let me check the forecast and do the conversion.",
        'tool call get_forecast [call-forecast-1]\n  {"city": "Lyon", "day": "tomorrow"}',
        'tool result get_forecast [call-forecast-1]: failed\n  {"error": "upstream timeout"}',
        'tool result convert_temperature [call-convert-1]: success\n  {"fahrenheit": 53.6}',
        "-- model request 1 --",
        '- observation token_budget: {"remaining": 18000}',
        "== completed ==",
        "  result: Take an umbrella; 12 °C is 53.6 °F.",
        "  tokens: 812 in, 96 out, 31 reasoning",
    ]
    at = 0
    for fragment in expected_in_order:
        found = text.find(fragment, at)
        assert found >= 0, f"{fragment!r} missing after position {at}"
        at = found + len(fragment)
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert_fits(text)


def test_a_suspended_run_shows_what_it_waits_for() -> None:
    b = SourceBuilder().user("delete it").request()
    b.tool_call(0, "delete_file", "call-1", ['{"path": "/tmp/x"}'])
    text = view(b.suspended(("call-1", "delete_file", {"path": "/tmp/x"})).items)
    assert "== suspended: waiting for 1 answer ==" in text
    assert '  * Waiting for approval of delete_file [call-1]\n    {"path": "/tmp/x"}' in text


def test_a_failed_run_shows_the_code_and_message() -> None:
    text = view(SourceBuilder().user("hi").failed("model_overloaded", "The model is overloaded.").items)
    assert "== failed: model_overloaded ==" in text
    assert "\n  The model is overloaded." in text


def test_a_cancelled_run_says_so() -> None:
    assert "== cancelled ==" in view(SourceBuilder().user("hi").cancelled().items)


def test_a_result_for_a_call_of_another_run_is_shown_with_a_note() -> None:
    text = view(SourceBuilder().tool_result("call-9", "lookup", "found it").completed(None).items)
    assert "tool result lookup [call-9]: success (no call for it in this run)\n  found it" in text


def test_a_run_still_in_progress_shows_unfinished_messages_and_no_outcome() -> None:
    b = SourceBuilder().user("hi").request()
    b.part(0, *_text_start_and_deltas(["Hel", "lo"]), None)
    b.part(1, *_tool_start_and_deltas("search", "call-1", ['{"q": ']), None)
    text = view(b.items)
    assert "assistant (unfinished)\n  Hello" in text
    assert 'tool call search [call-1] (unfinished)\n  {"q":' in text
    last = text.splitlines()[-1]
    assert last.startswith("== run not finished (no outcome yet) ==") and len(last) == 100


def _text_start_and_deltas(chunks: list[str]) -> tuple[Any, list[Any]]:
    from harness_agui.core.source import TextPart, TextPartDelta
    return TextPart(content=""), [TextPartDelta(content_delta=c) for c in chunks]


def _tool_start_and_deltas(name: str, call_id: str, chunks: list[str]) -> tuple[Any, list[Any]]:
    from harness_agui.core.source import ToolCallPart, ToolCallPartDelta
    return ToolCallPart(tool_name=name, args=None, tool_call_id=call_id), \
        [ToolCallPartDelta(args_delta=c) for c in chunks]


def test_long_input_split_into_chunks_is_shown_as_one_message() -> None:
    words = [f"w{i:05d}" for i in range(3000)]  # 18000 characters: three CUSTOM chunks
    text = view(SourceBuilder().user(" ".join(words)).completed(None).items)
    assert text.count("user\n") == 1
    body = text.split("user\n", 1)[1].split("\n\n", 1)[0]
    assert body.split() == words


def test_media_input_and_metadata_are_shown_as_json() -> None:
    item = InputEvent(input_id="in-1", source="context", content={"media_type": "image/png", "url": "u"},
                      metadata={"from": "upload"})
    text = view(SourceBuilder().event(item).completed(None).items)
    assert 'input (context)\n  media: {"media_type": "image/png", "url": "u"}\n  metadata: {"from": "upload"}' in text


def test_an_oversized_custom_event_is_joined_before_it_is_shown() -> None:
    text = view(SourceBuilder().observation("big", {"blob": "z" * 100_000}).completed(None).items, notices=True)
    assert text.count("- observation big: ") == 1
    assert "fragment" not in text


def test_long_json_values_are_cut_after_a_number_of_lines() -> None:
    result = {f"key{i}": i for i in range(100)}
    items = SourceBuilder().request().tool_call(0, "t", "c1", ["{}"]).tool_result("c1", "t", result) \
        .completed(None).items
    text = view(items, max_value_lines=5)
    assert "  ... 98 more lines" in text
    assert '"key2": 2' in text and '"key3": 3' not in text
    assert '"key99": 99' in view(items, max_value_lines=None)


def test_text_from_the_run_cannot_drive_the_terminal() -> None:
    evil = "red\x1b[31m alert\x07 \u202eevil\r done\tend"
    text = view(SourceBuilder().user(evil).completed(None).items)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\r" not in text
    # One escaping function (debug.text.escape_terminal) for every view: a lone CR is shown the way
    # Python spells it, "\\r" (this view used to write "\\x0d").
    assert "red\\x1b[31m alert\\x07 \\u202eevil\\r done    end" in text


def test_wide_characters_wrap_within_the_width() -> None:
    text = view(SourceBuilder().user("漢字" * 120 + " " + "🌧" * 70).completed(None).items)
    assert_fits(text)
    assert max(display_width(line) for line in text.splitlines()) >= 98


def test_a_word_longer_than_a_line_is_split() -> None:
    text = view(SourceBuilder().user("x" * 250).completed(None).items, width=40)
    assert_fits(text, 40)
    assert "".join(line.strip() for line in text.splitlines() if set(line.strip()) == {"x"}) == "x" * 250


def test_events_the_view_does_not_know_get_a_one_line_note() -> None:
    text = render_conversation([StepStartedEvent(step_name="plan"), CustomEvent(name="app.ping", value=[1])],
                               notices=True)
    # The note carries the event's fields, as the HTML view always showed them (it used to say only
    # "- STEP_STARTED event"); an event without fields still reads "- <TYPE> event".
    assert '- STEP_STARTED: {"stepName": "plan"}' in text
    assert "- app.ping: [1]" in text


def test_content_without_a_start_is_still_shown() -> None:
    text = render_conversation([TextMessageContentEvent(message_id="m", delta="orphan"),
                                TextMessageEndEvent(message_id="m")])
    assert "assistant\n  orphan" in text


def test_no_events_give_a_short_note() -> None:
    assert render_conversation([]) == "(no events)\n"


def test_blocks_come_out_as_soon_as_they_are_complete() -> None:
    observer = HarnessAguiObserver()
    items = SourceBuilder().user("hi").request().text(0, ["a", "b"]).completed("ab").items
    fed: list[int] = []

    def events() -> Any:
        for i, item in enumerate(items):
            fed.append(i)
            yield from observer.observe(item)

    blocks = iter_conversation(events())
    assert next(blocks).startswith("== run")
    assert "user" in next(blocks)
    assert fed[-1] == 0


def test_a_width_or_line_limit_that_makes_no_sense_is_refused() -> None:
    with pytest.raises(ValueError, match="width"):
        render_conversation([], width=10)
    with pytest.raises(ValueError, match="max_value_lines"):
        render_conversation([], max_value_lines=0)


def test_display_width_counts_wide_and_combining_characters() -> None:
    assert display_width("abc") == 3
    assert display_width("漢字") == 4
    assert display_width("e\u0301") == 1
    assert display_width("") == 0


@settings(max_examples=40)
@given(st.one_of(complete_histories(), live_histories()), st.sampled_from([20, 57, 100]))
def test_every_line_of_any_run_fits_the_width(history: list[HarnessStreamEvent], width: int) -> None:
    assert_fits(view(history, width=width), width)


def test_lone_surrogates_and_line_separators_are_shown_as_escapes_so_the_view_can_be_printed() -> None:
    # The observer refuses lone surrogates at its boundary; events made by hand can still carry them.
    text = render_conversation([TextMessageStartEvent(message_id="m", role="assistant"),
                                TextMessageContentEvent(message_id="m", delta="bad \ud800 x\u2028y"),
                                TextMessageEndEvent(message_id="m")])
    assert "bad \\ud800 x\\u2028y" in text
    text.encode("utf-8")  # printable on any UTF-8 terminal: no lone surrogate is left
