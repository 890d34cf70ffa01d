# Late joiners: observer.messages() is the message list the official AG-UI
# client builds from the projection, and observer.catch_up() is what a client
# that joins now needs: replayed through @ag-ui/client (tests/node/
# catch_up.mjs), catch_up() at any cut followed by the live events after it
# gives the messages of the full stream, and the client accepts every event.
#
# The Node packages are installed on first use (npm ci), as for
# tests/test_node_client.py; without node or npm these tests fail.

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import BaseEvent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness_agui
from harness_agui import HarnessAguiObserver
from harness_agui.core.conversation import EMPTY_CONVERSATION, fold_records, messages_json
from harness_agui.testing import (
    complete_histories,
    fanned_out_delegation,
    live_histories,
    simulated_delegation,
    simulated_run,
)
from harness_agui.testing.delegation import delegating_runs
from harness_agui.wire.agui import agui_to_json
from harness_agui.wire.codec import decode

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "catch_up.mjs"
FIXTURES = Path(__file__).parent / "fixtures" / "a13n"
STREAMS = st.one_of(complete_histories(), live_histories(), delegating_runs().map(lambda r: list(r.items)))


def _client_messages(node_exe: str, *streams: list[BaseEvent]) -> list[Any]:
    """The messages @ag-ui/client built from each stream (fails on a refused stream)."""
    lines = "".join("[" + ",".join(agui_to_json(e) for e in events) + "]\n" for events in streams)
    done = subprocess.run([node_exe, str(SCRIPT)], input=lines, capture_output=True, text=True, timeout=120)
    try:
        results = json.loads(done.stdout)
    except ValueError:
        pytest.fail(f"catch_up.mjs printed no JSON (status {done.returncode}):\n{done.stderr[-2000:]}")
    for result in results:
        assert result["ok"], result["error"]
    return [result["messages"] for result in results]


def _as_json(messages: tuple[Any, ...]) -> list[Any]:
    return [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in messages]


def _late_joiner(items: list[Any], cut: int) -> tuple[list[BaseEvent], list[BaseEvent], HarnessAguiObserver]:
    """The full stream, and what a client joining after ``items[:cut]`` gets."""
    observer = HarnessAguiObserver()
    for item in items[:cut]:
        observer.observe(item)
    joined = list(observer.catch_up())
    for item in items[cut:]:
        joined.extend(observer.observe(item))
    return list(observer.snapshot()), joined, observer


def _check_through_the_client(node_exe: str, items: list[Any], cut: int) -> None:
    full, joined, observer = _late_joiner(items, cut)
    from_full, from_joined = _client_messages(node_exe, full, joined)
    assert from_joined == from_full
    assert _as_json(observer.messages()) == from_full


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(complete_histories(), delegating_runs(complete=True).map(lambda r: list(r.items))), st.data())
def test_a_client_that_joins_at_any_cut_ends_with_the_messages_of_the_full_stream(
        node: str, items: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(items)))
    _check_through_the_client(node, items, cut)


@pytest.mark.parametrize("name", ["subagent", "nested_subagents", "failed_child"])
def test_a_client_that_joins_a_real_delegating_run_midway_ends_with_its_messages(node: str, name: str) -> None:
    lines = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    items = [decode(line) for line in lines if line.strip()]
    for cut in sorted({1, len(items) // 3, len(items) // 2, 2 * len(items) // 3, len(items) - 1}):
        _check_through_the_client(node, items, cut)


def test_the_messages_of_the_demo_run_are_the_clients(node: str) -> None:
    items = list(simulated_run())
    _check_through_the_client(node, items, len(items) // 2)


# -- without node -------------------------------------------------------------------------------

def test_catch_up_is_empty_before_the_first_item() -> None:
    assert HarnessAguiObserver().catch_up() == ()
    assert HarnessAguiObserver().messages() == ()


def test_catch_up_mid_message_restarts_the_open_message_with_its_content_so_far() -> None:
    items = list(simulated_run())
    observer = HarnessAguiObserver()
    for item in items:
        events: Any = observer.observe(item)
        if any(e.type.value == "TEXT_MESSAGE_CONTENT" and e.message_id.endswith(":text") for e in events):
            break
    caught: Any = observer.catch_up()
    kinds = [e.type.value for e in caught]
    assert kinds[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert kinds[2:] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    start, content = caught[2], caught[3]
    log: Any = observer.snapshot()
    so_far = "".join(e.delta for e in log
                     if e.type.value == "TEXT_MESSAGE_CONTENT" and e.message_id == start.message_id)
    assert content.delta == so_far
    snapshot = {m.id: m for m in caught[1].messages}
    assert snapshot[start.message_id].content == ""  # it streams again after the snapshot


def test_catch_up_of_a_finished_run_ends_with_its_terminal_event() -> None:
    observer = HarnessAguiObserver()
    for item in simulated_delegation():
        observer.observe(item)
    caught = observer.catch_up()
    assert [e.type.value for e in caught] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert caught[-1] == observer.snapshot()[-1]


def test_catch_up_re_announces_running_subagents() -> None:
    items = list(simulated_delegation())
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
        running = [s for s in observer.state.subagents.values() if s.running]
        if running:
            break
    kinds = [e.type.value for e in observer.catch_up()]
    assert kinds.count("SUBAGENT_STARTED") == len(running) > 0


@given(STREAMS)
def test_messages_kept_up_incrementally_equal_messages_folded_from_scratch(items: list[Any]) -> None:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
        assert observer.messages() == tuple(
            _message_objects(fold_records(EMPTY_CONVERSATION, observer.state.events)))


def _message_objects(messages: Any) -> tuple[Any, ...]:
    from harness_agui.core.conversation import _MESSAGE

    return tuple(_MESSAGE.validate_python(m) for m in messages_json(messages))


@given(STREAMS)
def test_messages_and_catch_up_are_detached_fresh_objects(items: list[Any]) -> None:
    observer = HarnessAguiObserver()
    for item in items:
        observer.observe(item)
    first = observer.messages()
    for message in first:
        message.id = "changed"
    assert all(m.id != "changed" for m in observer.messages())
    caught: Any = observer.catch_up()
    if caught:
        caught[1].messages.clear()
        assert observer.catch_up() == observer.catch_up()


# -- cost with many live subagents (no timing: lines of this library run, counted) ------------

def _lines_run(call: Any) -> int:
    """How many lines of harness_agui code ``call()`` runs (sys.settrace):
    a loop over every open entry per record shows up here whatever the
    machine's speed."""
    package = str(Path(harness_agui.__file__).parent)
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(package) else None

    sys.settrace(calls)
    try:
        call()
    finally:
        sys.settrace(None)
    return count


def test_a_late_joiners_catch_up_with_many_live_subagents_costs_the_same_per_child() -> None:
    # The first catch-up folds the whole log. Each delta, start and end used to search and copy a tuple of
    # every open message or running subagent, so a catch-up with N live children ran N^2 lines: 1,916 per
    # child at 150 children, 5,121 at 600, 17,732 at 2,400. Now each is a map step whatever N (1,027 and
    # 1,148: the maps' and vectors' paths grow a level).
    per_child = {}
    for children in (150, 600):
        observer = HarnessAguiObserver()
        for item in fanned_out_delegation(children):
            observer.observe(item)
        caught: list[Any] = []
        per_child[children] = _lines_run(lambda: caught.extend(observer.catch_up())) / children  # noqa: B023
        assert [e.type.value for e in caught].count("SUBAGENT_STARTED") == children
    assert per_child[600] < 1.3 * per_child[150], per_child
