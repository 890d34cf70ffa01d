# The debug layer over delegating streams: the fold attributes every entry to
# its Run and keeps one Subagent entry per child; the terminal view nests a
# subagent's blocks behind a gutter under the tool call that started it; the
# notebook view draws a subagent's block inside that tool call's row.

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings

from harness_agui import HarnessAguiObserver
from harness_agui.core.conversation import (
    EMPTY_CONVERSATION,
    Conversation,
    Message,
    Subagent,
    ToolCall,
    ToolResult,
    fold_events,
    owner_of,
)
from harness_agui.debug.pretty import render_conversation
from harness_agui.debug.text import display_width
from harness_agui.debug.views import conversation_html, state_text
from harness_agui.testing import delegating_runs, simulated_delegation

ROOT = "run-root"
PLANNER, WORKER = f"{ROOT}-planner", f"{ROOT}-worker"


def fold(events: Any) -> Conversation:
    return fold_events(EMPTY_CONVERSATION, events)


def observed(items: Any) -> HarnessAguiObserver:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    return observer


def test_the_fold_attributes_every_entry_to_its_run_and_keeps_one_subagent_entry_per_child() -> None:
    conv = fold(observed(simulated_delegation()).snapshot())
    planner, worker = conv.subagent(PLANNER), conv.subagent(WORKER)
    assert isinstance(planner, Subagent) and isinstance(worker, Subagent)
    assert (planner.name, planner.depth, planner.parent_tool_call_id, planner.parent_subagent_run_id,
            planner.status) == ("planner", 1, "call-delegate", None, "finished")
    assert (worker.depth, worker.parent_subagent_run_id, worker.parent_tool_call_id) == (
        2, PLANNER, f"call-delegate:{PLANNER}")
    assert planner.result is not None and planner.result.value == "[planner] worker said: sunny"
    texts = {e.text: e.subagent_run_id for e in conv.entries if isinstance(e, Message) and e.role == "assistant"}
    assert texts == {"[root] delegating.": None, "[planner] delegating.": PLANNER, "[worker] sunny all week": WORKER,
                     "[planner] worker said: sunny": PLANNER, "[root] planner said: sunny.": None}
    assert [owner_of(conv.entries[p]) for p in conv.scope(WORKER)] == [WORKER] * len(conv.scope(WORKER))
    assert conv.subagents_of("call-delegate", None) == [conv.subagents[PLANNER]]
    assert conv.subagents_of(f"call-delegate:{PLANNER}", PLANNER) == [conv.subagents[WORKER]]
    result = next(e for e in conv.entries if isinstance(e, ToolResult) and e.subagent_run_id == PLANNER)
    assert result.tool_call_id == f"call-delegate:{PLANNER}"


def test_the_fold_records_a_failed_or_cut_off_subagent_as_an_error() -> None:
    conv = fold(observed(simulated_delegation(child_fails=True)).snapshot())
    planner = conv.subagent(PLANNER)
    assert planner is not None and (planner.status, planner.code) == ("error", "failed")


def test_the_terminal_view_nests_a_subagents_work_under_the_tool_call_that_started_it() -> None:
    text = render_conversation(observed(simulated_delegation()).snapshot(), width=100)
    lines = text.split("\n")
    call = next(i for i, line in enumerate(lines) if "tool call delegate [call-delegate]" in line)
    start = next(i for i, line in enumerate(lines) if line.startswith("┌─") and "subagent planner" in line)
    assert call < start and "for tool call delegate [call-delegate]" in lines[start]
    worker = next(i for i, line in enumerate(lines) if "┌─" in line and "subagent worker" in line)
    assert lines[worker].startswith("│ ┌─")
    assert any(line.startswith("│ │   [worker] sunny all week") for line in lines)
    assert any(line.startswith("│   [planner] delegating.") for line in lines)
    end = next(i for i, line in enumerate(lines) if line.startswith("└─") and "subagent planner" in line)
    assert "finished: [planner] worker said: sunny" in lines[end]
    root_result = next(i for i, line in enumerate(lines) if "tool result delegate [call-delegate]:" in line)
    assert start < worker < end < root_result
    assert all(display_width(line) <= 100 for line in lines)


def test_the_terminal_view_shows_a_failed_subagent_and_stays_within_a_narrow_width() -> None:
    text = render_conversation(observed(simulated_delegation(child_fails=True)).snapshot(), width=20)
    assert "└─" in text and all(display_width(line) <= 20 for line in text.split("\n"))
    wide = render_conversation(observed(simulated_delegation(child_fails=True)).snapshot())
    assert re.search(r"└─ .*subagent planner \[run-root-planner\] failed \[failed\]", wide)


def test_a_subagent_still_running_when_the_events_end_is_shown_as_such() -> None:
    items = simulated_delegation(nested=False)
    cut = next(i for i, item in enumerate(items) if item.run_id == PLANNER and item.sequence == 3)
    text = render_conversation(observed(items[:cut]).snapshot())
    assert "└─ subagent planner [run-root-planner] still running" in text


def test_the_notebook_view_draws_a_subagent_inside_the_tool_call_that_started_it() -> None:
    page = conversation_html(observed(simulated_delegation()))
    call = page.index("call-delegate</span>")
    planner = page.index('class="row subagent"><summary class="who">subagent <code>planner</code>')
    worker = page.index('class="row subagent"><summary class="who">subagent <code>worker</code>')
    worker_text = page.index("[worker] sunny all week")
    result = page.index("exec-p")  # the root's delegate result, drawn under its call after the subagent
    assert call < planner < worker < worker_text < result
    # The planner's block closes after the worker's, and before the root's delegate result.
    assert page.rindex("</details>", 0, result) > worker_text


def test_state_views_list_the_subagent_runs() -> None:
    text = state_text(observed(simulated_delegation()).state)
    assert "subagent runs:" in text
    assert "planner [run-root-planner] completed of run-root via call-delegate" in text


@settings(max_examples=40)
@given(run=delegating_runs())
def test_every_view_of_any_delegating_stream_renders_every_entry(run: Any) -> None:
    observer = observed(run.items)
    conv = fold(observer.snapshot())
    text = render_conversation(observer.snapshot(), width=60)
    assert all(display_width(line) <= 60 for line in text.split("\n"))
    page = conversation_html(observer)
    for entry in conv.entries:
        if isinstance(entry, ToolCall):
            assert entry.tool_call_id in text and entry.tool_call_id.replace('"', "&quot;") in page
        if isinstance(entry, Subagent):
            assert f"[{entry.subagent_run_id}]" in text and entry.subagent_run_id in page
