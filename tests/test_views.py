"""Readable views (harness_agui.debug.views): text that fits 100 columns, HTML that
is well-formed and never lets text from a Run become markup."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from ag_ui.core import CustomEvent, TextMessageContentEvent, TextMessageEndEvent
from hypothesis import given, settings

from harness_agui import HarnessAguiObserver, ProjectionState
from harness_agui.core.records import event_type
from harness_agui.debug import View, show
from harness_agui.debug.replay import diagnose, steps
from harness_agui.debug.text import display_width
from harness_agui.debug.views import (
    conversation_html,
    conversation_text,
    diagnosis_html,
    diagnosis_text,
    event_summary,
    item_summary,
    observer_html,
    observer_text,
    state_html,
    state_text,
    step_html,
    step_text,
)
from harness_agui.testing import SourceBuilder, histories, simulated_run

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Page(HTMLParser):
    """Parses one HTML fragment, recording tags, text and nesting faults."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.faults: list[str] = []
        self.chunks: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in _VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.faults.append(f"</{tag}> while {self.open[-1:] or 'nothing'} is open")
        else:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def names(self) -> set[str]:
        return {tag for tag, _ in self.tags}


def _well_formed(markup: str) -> _Page:
    page = _Page(markup)
    assert not page.faults, page.faults
    assert not page.open, f"unclosed: {page.open}"
    return page


def _fits(text: str, width: int = 100) -> None:
    for line in text.split("\n"):
        assert display_width(line) <= width, f"{display_width(line)} columns: {line!r}"


def _state(items: list[Any]) -> ProjectionState:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return observer.state


SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(2)>'


def _hostile_run() -> list[Any]:
    """A Run that puts markup everywhere text from the Harness can go."""
    b = SourceBuilder(f"thread{BREAKOUT}", f"run{SCRIPT}")
    b.user(f"hello {SCRIPT} and {BREAKOUT}")
    b.request()
    b.thinking(0, ["think ", SCRIPT], signature="sig")
    b.text(1, ["answer ", SCRIPT, BREAKOUT], id=f"msg{BREAKOUT}")
    b.tool_call(2, f"tool{SCRIPT}", f"call{BREAKOUT}", ['{"q": "', SCRIPT.replace('"', "'"), '"}'])
    b.tool_result(f"call{BREAKOUT}", f"tool{SCRIPT}", {"html": SCRIPT}, outcome="failed")
    b.tool_result(f"unknown{SCRIPT}", "other", SCRIPT)
    b.observation(f"note{SCRIPT}", {SCRIPT: BREAKOUT})
    b.failed(f"code{SCRIPT}", f"boom {SCRIPT}")
    return b.items


def _suspended_run() -> list[Any]:
    b = SourceBuilder("t", "r")
    b.user("delete the temp files")
    b.request()
    b.tool_call(0, "delete_files", "call-del", ['{"glob": "/tmp/*"}'])
    b.suspended(("call-del", "delete_files", {"glob": "/tmp/*"}))
    return b.items


# -- HTML ------------------------------------------------------------------------------------


def test_conversation_html_is_well_formed_and_shows_the_whole_run() -> None:
    page = _well_formed(conversation_html(_state(simulated_run()), notices=True))
    text = page.text
    assert "Will I need an umbrella in Lyon tomorrow?" in text
    for expected in ("get_forecast", "call-forecast-1", '"city": "Lyon"', "upstream timeout", "result: failed",
                     "convert_temperature", "53.6", "run finished: success", "model request 2", "token_budget",
                     "input 812, output 96, reasoning 31, total 908"):
        assert expected in text, expected
    assert text.index("upstream timeout") < text.index("call-forecast-2") < text.index("take an umbrella")


def test_reasoning_is_collapsed_in_a_details_element() -> None:
    markup = conversation_html(_state(simulated_run()))
    page = _well_formed(markup)
    details = [attrs for tag, attrs in page.tags if tag == "details" and "reasoning" in (attrs.get("class") or "")]
    assert len(details) == 1 and "open" not in details[0]
    start = markup.index('<details class="row reasoning">')
    body = markup[start:markup.index("</details>", start)]
    assert "<summary" in body and "signed" in body and "unit conversion" in body


def test_text_from_the_run_never_becomes_markup_in_any_html_view() -> None:
    items = _hostile_run()
    replayed = list(steps(items))
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    broken = diagnose([*items[:3], items[1]])
    views = [conversation_html(observer.state), state_html(observer.state), observer_html(observer),
             diagnosis_html(diagnose(items)), diagnosis_html(broken), *(step_html(s) for s in replayed)]
    for markup in views:
        page = _well_formed(markup)
        assert {"script", "img"}.isdisjoint(page.names())
        assert all(not name.startswith("on") for _, attrs in page.tags for name in attrs)
    everything = "".join(_Page(m).text for m in views)
    assert SCRIPT in everything and BREAKOUT in everything
    conversation = _Page(views[0]).text
    for expected in (f"hello {SCRIPT}", f"answer {SCRIPT}{BREAKOUT}", f"tool{SCRIPT}", f"code{SCRIPT}",
                     f"boom {SCRIPT}", f"run{SCRIPT}", f"unknown{SCRIPT}"):
        assert expected in conversation, expected


def test_html_shows_control_characters_as_escapes() -> None:
    b = SourceBuilder("t", "r")
    b.user("bell\x07 escape\x1b[2J nul\x00 override\u202e end")
    page = _well_formed(conversation_html(_state(b.items)))
    assert "bell\\x07 escape\\x1b[2J nul\\x00 override\\u202e end" in page.text


def test_tool_calls_show_args_and_results_with_their_outcome() -> None:
    b = SourceBuilder("t", "r")
    b.request()
    b.tool_call(0, "search", "call-1", ['{"q": ', '"cats"}'])
    b.tool_call(1, "fetch", "call-2", ['{"url": "x"}'])
    b.tool_result("call-1", "search", {"hits": 3})
    state = _state(b.items)
    page = _well_formed(conversation_html(state))
    text = page.text
    assert '"q": "cats"' in text and '"hits": 3' in text and "result: success" in text
    assert text.index("call-2") > text.index('"hits": 3')
    assert "no result yet" in text[text.index("call-2"):]


def test_a_suspended_run_shows_what_it_waits_for() -> None:
    state = _state(_suspended_run())
    text = _well_formed(conversation_html(state)).text
    assert "interrupted, waiting for the host" in text
    assert "tool_approval call-del:approval: Waiting for approval of delete_files" in text


def test_a_failed_and_a_cancelled_run_show_their_outcome() -> None:
    failed = SourceBuilder("t", "r").user("hi").failed("rate_limited", "too many requests").items
    text = _well_formed(conversation_html(_state(failed))).text
    assert "run error [rate_limited]: too many requests" in text
    cancelled = SourceBuilder("t", "r").user("hi").cancelled().items
    assert "run finished: cancelled" in _well_formed(conversation_html(_state(cancelled))).text


def test_parts_still_open_are_marked_as_streaming() -> None:
    items = simulated_run()[:30]
    state = _state(items)
    page = _well_formed(state_html(state))
    assert "still streaming" in page.text
    assert "open part" in page.text and "run-demo:request-0:part-1:text" in page.text
    assert "live" in page.text


def test_step_html_shows_the_item_beside_the_events_it_produced() -> None:
    step = list(steps(simulated_run()))[0]
    page = _well_formed(step_html(step))
    cells = [i for i, (tag, _) in enumerate(page.tags) if tag == "td"]
    assert len(cells) == 2
    items = [tag for tag, _ in page.tags if tag == "li"]
    assert len(items) == len(step.events) == 4  # RUN_STARTED and the question as a user message
    text = page.text
    assert '"sequence": 0' in text and '"source": "user"' in text
    assert text.index('"sequence": 0') < text.index("RUN_STARTED") < text.index("TEXT_MESSAGE_START")
    assert step._repr_html_() == step_html(step)


def test_an_oversized_custom_value_is_shown_once_joined() -> None:
    big = {"blob": "x" * 70000}
    state = _state(SourceBuilder("t", "r").observation("huge", big).items)
    fragments = [r for r in state.events if event_type(r) == "CUSTOM"]
    assert len(fragments) > 1
    page = _well_formed(conversation_html(state, notices=True))
    assert page.text.count("observation huge") == 1


@given(items=histories(max_steps=15))
@settings(max_examples=25)
def test_every_view_of_any_run_is_well_formed_and_fits_100_columns(items: list[Any]) -> None:
    replayed = list(steps(items))
    state = replayed[-1].after if replayed else _state([])
    _well_formed(state_html(state))
    _fits(state_text(state))
    _fits(conversation_text(state))
    report = diagnose(items)
    _well_formed(diagnosis_html(report))
    _fits(diagnosis_text(report))
    for step in replayed[-5:]:
        _well_formed(step_html(step))
        _fits(step_text(step))
        _fits(repr(step))


# -- text ------------------------------------------------------------------------------------


def test_text_views_fit_100_columns_with_long_words_wide_characters_and_tabs() -> None:
    b = SourceBuilder("t" * 150, "r" * 150)
    b.user("x" * 250 + " " + "漢字" * 80 + "\ttabbed\n" + "é" * 300)
    b.request()
    b.tool_call(0, "t" * 120, "c" * 120, ['{"k": "' + "v" * 300 + '"}'])
    b.observation("o" * 200, {"k": "漢" * 200})
    b.completed("y" * 400)
    items = b.items
    state = _state(items)
    for text in (state_text(state), conversation_text(state), diagnosis_text(diagnose(items)),
                 diagnosis_text(diagnose([*items, items[0]]))):
        _fits(text)
    for step in steps(items):
        _fits(step_text(step))
        _fits(repr(step))
        _fits(event_summary(step.events[0]))
        _fits(item_summary(step.item))


def test_text_views_cut_a_huge_item_to_a_few_lines() -> None:
    items = SourceBuilder("t", "r").observation("huge", {"blob": "x " * 50000}).items
    step = next(iter(steps(items)))
    text = step_text(step)
    _fits(text)
    lines = text.split("\n")
    item_lines = lines[1:lines.index(f"events ({len(step.events)}):")]
    assert item_lines[0].startswith("item: seq 0 observation") and len(item_lines) <= 5
    report = diagnose([*items, "{" + "y" * 100000])
    assert len(diagnosis_text(report).split("\n")) < 40


def test_text_views_show_control_characters_as_escapes() -> None:
    items = SourceBuilder("t", "r").user("a\x1b[31mred\x07").completed("ok").items
    replayed = list(steps(items))
    for text in (state_text(replayed[-1].after), step_text(replayed[0]), diagnosis_text(diagnose(items))):
        assert "\x1b" not in text and "\x07" not in text
    assert "a\\u001b[31mred\\u0007" in step_text(replayed[0])


# Characters a Run could use to drive a terminal or hide text: controls, DEL, C1, bidi controls and
# isolates (U+061C included, which the conversation view used to let through), zero-width and tag
# characters, line and paragraph separators.
_HIDDEN = "\x1b[2J\x07\x08\r\x7f\x9b\u061c\u200b\u200e\u202e\u2066\u2069\u2028\u2029\ufeff\U000e0041"


def test_every_text_view_shows_hidden_and_controlling_characters_as_escapes() -> None:
    text = f"evil{_HIDDEN}end"
    b = SourceBuilder("t", "r").user(text).request()
    b.tool_call(0, f"tool{_HIDDEN}", "call-1", ['{"k": "', text, '"}'])
    items = b.observation(f"note{_HIDDEN}", {text: text}).failed("code", text).items
    state = _state(items)
    views = [conversation_text(state), state_text(state), diagnosis_text(diagnose(items)),
             *(step_text(s) for s in steps(items)), *(repr(s) for s in steps(items))]
    for view in views:
        bad = sorted({f"U+{ord(ch):04X}" for ch in view if ch in _HIDDEN and ch not in "[2J"})
        assert not bad, bad
    assert "evil\\x1b[2J\\x07\\x08\\r\\x7f\\x9b\\u061c\\u200b" in conversation_text(state)


def test_every_view_of_events_with_a_lone_surrogate_can_be_encoded_as_utf8() -> None:
    # The observer refuses lone surrogates at its boundary now, so no state holds one; AG-UI events made
    # by hand still can, and the conversation views show the surrogate as an escape.
    events = [CustomEvent(name="harness.observation", value={"payload": {"name": "half \ud800", "value": "a \udfff"}}),
              TextMessageContentEvent(message_id="m", delta="half \ud800 a pair"), TextMessageEndEvent(message_id="m")]
    views = [conversation_text(events), conversation_html(events), event_summary(events[0]), event_summary(events[1])]
    for view in views:
        view.encode("utf-8")
    assert "half \\ud800 a pair" in _Page(conversation_html(events)).text
    assert "half \\ud800 a pair" in conversation_text(events)


def test_step_text_lists_the_item_and_its_events() -> None:
    step = list(steps(simulated_run()))[4]
    text = str(step)
    assert text == step_text(step)
    lines = text.split("\n")
    assert lines[0].startswith("step #4, sequence 4, at 2026-11-30T09:00:00.160000+00:00")
    assert lines[1].startswith('item: seq 4 part_delta index=0 delta={"type":"thinking"')
    assert lines[2] == "events (1):"
    assert lines[3].startswith("    REASONING_MESSAGE_CONTENT messageId=")
    assert lines[4].startswith("open parts after: 0:thinking")


def test_diagnosis_text_names_the_failure_the_item_and_the_state_before() -> None:
    items = simulated_run()
    report = diagnose([*items[:10], items[4], *items[10:]])
    text = diagnosis_text(report)
    assert text.startswith("failed at item #10, sequence 4 while projecting the item\n")
    assert "error: SequenceOrderError: run 'run-demo', sequence 4: sequence went back: 10 was due" in text
    assert "item: seq 4 part_delta" in text
    assert "state before the failure:" in text and "last sequence 9" in text
    assert str(report) == text
    assert repr(report).startswith("Diagnosis(failed at item #10, sequence 4: SequenceOrderError")
    assert repr(report.failure).startswith("FailedStep(item #10, sequence 4, project: SequenceOrderError")


def test_diagnosis_text_of_an_undecodable_line_shows_the_line() -> None:
    report = diagnose(["{oops"])
    text = diagnosis_text(report)
    assert text.startswith("failed at item #0, line 1 while decoding a line\n")
    assert "line: {oops" in text
    assert "state: fresh (no item yet)" in text
    page = _well_formed(diagnosis_html(report))
    assert "{oops" in page.text


def test_a_clean_diagnosis_gives_counts() -> None:
    report = diagnose(simulated_run())
    assert repr(report) == "Diagnosis(ok: 77 items, 80 events, finished)"
    assert diagnosis_text(report).startswith("ok: 77 items replayed into 80 AG-UI events; the run finished\n")
    assert "TOOL_CALL_RESULT=3" in diagnosis_text(report)
    live = diagnose(simulated_run()[:30])
    assert "no terminal item: the run is not finished" in diagnosis_text(live)
    assert "open parts: 1:text" in diagnosis_text(live)


def test_conversation_text_is_the_pretty_view_of_the_events() -> None:
    from harness_agui.debug.pretty import render_conversation

    state = _state(simulated_run())
    assert conversation_text(state) == render_conversation(state.snapshot()).rstrip("\n")
    assert conversation_text(state.snapshot()) == conversation_text(state)


def test_observer_text_starts_with_its_repr() -> None:
    observer = HarnessAguiObserver()
    for item in simulated_run()[:5]:
        observer.observe(item)
    text = observer_text(observer)
    assert text.split("\n")[0] == repr(observer)
    _fits(text)
    assert repr(observer) in _well_formed(observer_html(observer)).text


def test_a_fresh_state_has_a_short_view() -> None:
    assert state_text(_state([])) == "state: fresh (no item yet)"
    _well_formed(state_html(_state([])))
    assert conversation_text([]) == "(no events)"
    assert "(no events)" in _well_formed(conversation_html([])).text


# -- show ------------------------------------------------------------------------------------


def test_show_gives_a_view_for_every_kind_of_value() -> None:
    items = simulated_run()
    state = _state(items)
    observer = HarnessAguiObserver()
    observer.observe(items[0])
    step = next(iter(steps(items)))
    report = diagnose(items)
    cases = [(state, state_text, state_html), (observer, observer_text, observer_html),
             (step, step_text, step_html), (report, diagnosis_text, diagnosis_html),
             (state.snapshot(), conversation_text, conversation_html)]
    for value, text, markup in cases:
        view = show(value)
        assert isinstance(view, View)
        assert str(view) == repr(view) == text(value)
        assert view._repr_html_() == markup(value)


@pytest.mark.parametrize("value", [42, "text", [1, 2]])
def test_show_refuses_what_it_cannot_draw(value: Any) -> None:
    with pytest.raises(TypeError, match="show"):
        show(value)
